// Package fluss is a Go client for Apache Fluss and for Strom, which speaks the Fluss wire
// protocol. Its shape follows the official clients (Java, Rust, Python) in idiomatic Go:
//
//	conn, err := fluss.Connect(ctx, fluss.Config{BootstrapServers: "127.0.0.1:9123"})
//	admin := conn.Admin()
//	err = admin.CreateTable(ctx, path, desc, true)
//	table, err := conn.Table(ctx, path)
//
//	w, err := table.NewUpsert().CreateWriter()
//	h, err := w.Upsert(ctx, fluss.Row{int32(1), "alice", int64(30)})
//	err = h.Wait(ctx)
//
//	lk, err := table.NewLookup().CreateLookuper()
//	row, err := lk.Lookup(ctx, fluss.Row{int32(1)})
//
//	sc, err := table.NewScan().Project(0, 1).CreateLogScanner()
//	err = sc.Subscribe(ctx, 0, fluss.EarliestOffset)
//	recs, err := sc.Poll(ctx, time.Second)
//
// The examples below run as tests against an in-process server.
//
// # Rows and types
//
// Rows go in and out either as Row (a slice of Go values, one per column: see Row for the
// mapping of Fluss types to Go types) or as arrow.RecordBatch. The generic helpers
// (NewTypedUpsertWriter, NewTypedLookuper, Decode, ...) map tagged structs to rows for
// compile-time typing. Schemas are built from Column and DataType values (Int(), String(),
// DecimalType(10, 2), ArrayOf(...), ...); every type in the package is the client's own, so
// `go doc` shows all of it.
//
// # Connections, contexts and limits
//
// One Connection holds one multiplexed TCP connection per server (coordinator and each
// tablet server), shared by the admin, writers, lookupers and scanners created from it.
// Every method that performs I/O takes a context and honours its deadline and cancellation,
// including while writing a request to the socket; calls without a deadline are bounded by
// Config.RequestTimeout. Response frames larger than Config.MaxResponseSize (default
// 100 MiB) close the connection instead of being buffered.
//
// # Writes
//
// Writers batch rows per bucket and send them in the background; Append, Upsert and Delete
// return a WriteResult to wait on, Flush waits for everything written so far. Retriable
// failures are retried (Config.WriterRetries); a server reporting storage backpressure is
// given Config.WriterBackpressureBackoff before the retry. A write to a partition that does
// not exist creates it, unless Config.WriterDisableDynamicPartitionCreation is set.
//
// # Lookups
//
// Concurrent point (or prefix) lookups of a table are merged into one LOOKUP (PREFIX_LOOKUP)
// request per tablet server (Config.LookupMaxBatchSize keys at most), without delaying a
// lookup that arrives alone.
//
// # Scans: what is read where
//
// A scan reads whole log batches: projection (Project) is applied by the server, but there
// is no filter pushdown. Apache Fluss 0.9 has no predicate in FETCH_LOG and its Java client no
// scan filter; filter rows after Poll. Log segments tiered to remote storage are read by the
// client when remote.data.dir is on a file system mounted on its machine; object stores
// (s3:, oss:, hdfs:, ...) are not supported and fail with ErrRemoteLogNotSupported.
//
// # Access control
//
// On a cluster with authorizer.enabled, a request the caller's principal may not make fails
// with ErrAuthorization (nothing is written, and lists leave out what the caller may not see).
// A super user grants rights with Admin.CreateAcls, and inspects and revokes them with
// Admin.ListAcls and Admin.DropAcls.
//
// # Errors
//
// Errors returned by the server carry the Fluss error code: use errors.As with *Error, or
// errors.Is with an ErrorCode constant such as ErrTableNotExist, or CodeOf. ErrClosed reports
// use of a closed Connection, writer or scanner.
//
// # Testing
//
// The module github.com/stromdb/strom/fluss/flusstest starts an in-process server for your
// tests; it is a separate module so that importing fluss never builds the server.
//
// # Compatibility and Go versions
//
// The client works against Strom and Apache Fluss 0.9 and later, negotiating API versions
// with each server. It supports the two most recent major Go releases, as the Go project
// itself does; the minimum is the go directive of the module's go.mod, raised only in a
// minor release and noted in CHANGELOG.md. Exported names follow semantic versioning from
// 1.0 on: within a major version they are only added, never removed or changed.
package fluss
