// Package fluss is a Go client for Apache Fluss and for Strom, which speaks the Fluss wire
// protocol. Its shape follows the official clients (Java, Rust, Python) in idiomatic Go:
//
//	conn, err := fluss.Connect(ctx, fluss.Config{BootstrapServers: "127.0.0.1:9123"})
//	admin := conn.Admin()
//	err = admin.CreateTable(ctx, path, desc, true)
//	table, err := conn.Table(ctx, path)
//
//	w, err := table.NewUpsert().CreateWriter()
//	h, err := w.Upsert(ctx, fluss.Row{1, "alice", int64(30)})
//	err = h.Wait(ctx)
//
//	lk, err := table.NewLookup().CreateLookuper()
//	row, err := lk.Lookup(ctx, fluss.Row{1})
//
//	sc, err := table.NewScan().Project(0, 1).CreateLogScanner()
//	err = sc.Subscribe(ctx, 0, fluss.EarliestOffset)
//	recs, err := sc.Poll(ctx, time.Second)
//
// Rows go in and out either as Row (a slice of Go values, one per column: see Row for the
// mapping of Fluss types to Go types) or as arrow.Record. The generic helpers in typed.go map
// tagged structs to rows for compile-time typing.
//
// One Connection holds one multiplexed TCP connection per server (coordinator and each tablet
// server), shared by the admin, writers, lookupers and scanners created from it; every method
// that performs I/O takes a context and honours its cancellation. Errors returned by the
// server carry the Fluss error code: use errors.As with *Error, or CodeOf.
package fluss
