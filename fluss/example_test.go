package fluss_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/stromdb/strom/fluss"
	"github.com/stromdb/strom/fluss/internal/testserver"
)

// bootstrap is the cluster the examples talk to. In a program it is your coordinator's
// address; when the examples run as tests, TestMain points it at an in-process server.
var bootstrap = "127.0.0.1:9123"

func TestMain(m *testing.M) {
	if b := os.Getenv("FLUSS_BOOTSTRAP"); b != "" {
		bootstrap = b
		os.Exit(m.Run())
	}
	srv, err := testserver.New(nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "start strom:", err)
		os.Exit(1)
	}
	bootstrap = srv.Bootstrap
	code := m.Run()
	srv.Close()
	os.Exit(code)
}

// Connect to a cluster and list its databases.
func ExampleConnect() {
	ctx := context.Background()
	conn, err := fluss.Connect(ctx, fluss.Config{BootstrapServers: bootstrap})
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close()

	dbs, err := conn.Admin().ListDatabases(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(slices.Contains(dbs, "fluss"))
	// Output: true
}

// Create a partitioned primary-key table and read its schema back.
func ExampleAdmin_CreateTable() {
	ctx := context.Background()
	conn, err := fluss.Connect(ctx, fluss.Config{BootstrapServers: bootstrap})
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close()
	admin := conn.Admin()

	path := fluss.NewTablePath("fluss", "orders")
	_ = admin.DropTable(ctx, path, true) // start from scratch
	desc := fluss.TableDescriptor{
		Schema: fluss.NewSchema([]fluss.Column{
			fluss.NewColumn("order_id", fluss.BigInt()),
			fluss.NewColumn("day", fluss.String()),
			fluss.NewColumn("amount", fluss.DecimalType(10, 2)),
			fluss.NewColumn("tags", fluss.ArrayOf(fluss.String())),
		}, "order_id", "day"),
		PartitionKeys: []string{"day"},
		BucketCount:   4,
		Comment:       "orders by day",
	}
	if err := admin.CreateTable(ctx, path, desc, false); err != nil {
		log.Fatal(err)
	}
	info, err := admin.GetTableInfo(ctx, path)
	if err != nil {
		log.Fatal(err)
	}
	for _, c := range info.Schema().Columns {
		fmt.Println(c.Name, c.Type)
	}
	fmt.Println(info.PrimaryKeys(), info.PartitionKeys(), info.NumBuckets())
	// Output:
	// order_id BIGINT NOT NULL
	// day STRING NOT NULL
	// amount DECIMAL(10, 2)
	// tags ARRAY<STRING>
	// [order_id day] [day] 4
}

// Append rows to a log table and read them back.
func ExampleAppendWriter() {
	ctx := context.Background()
	conn, err := fluss.Connect(ctx, fluss.Config{BootstrapServers: bootstrap})
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close()

	path := fluss.NewTablePath("fluss", "clicks")
	_ = conn.Admin().DropTable(ctx, path, true)
	err = conn.Admin().CreateTable(ctx, path, fluss.TableDescriptor{
		Schema: fluss.NewSchema([]fluss.Column{
			fluss.NewColumn("user", fluss.String()),
			fluss.NewColumn("page", fluss.String()),
		}),
		BucketCount: 1,
	}, false)
	if err != nil {
		log.Fatal(err)
	}
	table, err := conn.Table(ctx, path)
	if err != nil {
		log.Fatal(err)
	}

	w, err := table.NewAppend().CreateWriter()
	if err != nil {
		log.Fatal(err)
	}
	defer w.Close()
	for _, r := range []fluss.Row{{"ana", "/home"}, {"bo", "/cart"}, {"ana", "/pay"}} {
		if _, err := w.Append(ctx, r); err != nil {
			log.Fatal(err)
		}
	}
	if err := w.Flush(ctx); err != nil { // wait until the server acknowledged every row
		log.Fatal(err)
	}

	sc, err := table.NewScan().CreateLogScanner()
	if err != nil {
		log.Fatal(err)
	}
	defer sc.Close()
	if err := sc.Subscribe(ctx, 0, fluss.EarliestOffset); err != nil {
		log.Fatal(err)
	}
	for seen := 0; seen < 3; {
		recs, err := sc.Poll(ctx, time.Second)
		if err != nil {
			log.Fatal(err)
		}
		for _, r := range recs {
			fmt.Println(r.Offset, r.ChangeType.ShortString(), r.Row)
			seen++
		}
	}
	// Output:
	// 0 +A [ana /home]
	// 1 +A [bo /cart]
	// 2 +A [ana /pay]
}

// Upsert rows of a primary-key table and look them up by key.
func ExampleUpsertWriter() {
	ctx := context.Background()
	conn, err := fluss.Connect(ctx, fluss.Config{BootstrapServers: bootstrap})
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close()

	path := fluss.NewTablePath("fluss", "users")
	_ = conn.Admin().DropTable(ctx, path, true)
	err = conn.Admin().CreateTable(ctx, path, fluss.TableDescriptor{
		Schema: fluss.NewSchema([]fluss.Column{
			fluss.NewColumn("id", fluss.Int()),
			fluss.NewColumn("name", fluss.String()),
			fluss.NewColumn("age", fluss.BigInt()),
		}, "id"),
	}, false)
	if err != nil {
		log.Fatal(err)
	}
	table, err := conn.Table(ctx, path)
	if err != nil {
		log.Fatal(err)
	}

	w, err := table.NewUpsert().CreateWriter()
	if err != nil {
		log.Fatal(err)
	}
	defer w.Close()
	w.Upsert(ctx, fluss.Row{int32(1), "alice", int64(30)})
	w.Upsert(ctx, fluss.Row{int32(2), "bob", int64(41)})
	w.Upsert(ctx, fluss.Row{int32(1), "alice", int64(31)}) // replaces the first row
	res, err := w.Delete(ctx, fluss.Row{int32(2), nil, nil})
	if err != nil {
		log.Fatal(err)
	}
	if err := res.Wait(ctx); err != nil { // or w.Flush(ctx) for everything written so far
		log.Fatal(err)
	}

	lk, err := table.NewLookup().CreateLookuper()
	if err != nil {
		log.Fatal(err)
	}
	alice, err := lk.Lookup(ctx, fluss.Row{int32(1)})
	if err != nil {
		log.Fatal(err)
	}
	bob, err := lk.Lookup(ctx, fluss.Row{int32(2)})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(alice, bob == nil)
	// Output: [1 alice 31] true
}

// Read the changelog of a primary-key table: every upsert and delete as a change record.
func ExampleLogScanner_changelog() {
	ctx := context.Background()
	conn, err := fluss.Connect(ctx, fluss.Config{BootstrapServers: bootstrap})
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close()

	path := fluss.NewTablePath("fluss", "stock")
	_ = conn.Admin().DropTable(ctx, path, true)
	err = conn.Admin().CreateTable(ctx, path, fluss.TableDescriptor{
		Schema: fluss.NewSchema([]fluss.Column{
			fluss.NewColumn("sku", fluss.String()),
			fluss.NewColumn("qty", fluss.Int()),
		}, "sku"),
		BucketCount: 1,
	}, false)
	if err != nil {
		log.Fatal(err)
	}
	table, err := conn.Table(ctx, path)
	if err != nil {
		log.Fatal(err)
	}
	w, err := table.NewUpsert().CreateWriter()
	if err != nil {
		log.Fatal(err)
	}
	defer w.Close()
	w.Upsert(ctx, fluss.Row{"apple", int32(5)})
	w.Upsert(ctx, fluss.Row{"apple", int32(3)})
	w.Delete(ctx, fluss.Row{"apple", nil})
	if err := w.Flush(ctx); err != nil {
		log.Fatal(err)
	}

	sc, err := table.NewScan().CreateLogScanner()
	if err != nil {
		log.Fatal(err)
	}
	defer sc.Close()
	if err := sc.Subscribe(ctx, 0, fluss.EarliestOffset); err != nil {
		log.Fatal(err)
	}
	for seen := 0; seen < 4; {
		recs, err := sc.Poll(ctx, time.Second)
		if err != nil {
			log.Fatal(err)
		}
		for _, r := range recs {
			fmt.Println(r.ChangeType.ShortString(), r.Row)
			seen++
		}
	}
	// Output:
	// +I [apple 5]
	// -U [apple 5]
	// +U [apple 3]
	// -D [apple 3]
}

// Errors returned by the server carry the Fluss error code.
func ExampleError() {
	ctx := context.Background()
	conn, err := fluss.Connect(ctx, fluss.Config{BootstrapServers: bootstrap})
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close()

	_, err = conn.Table(ctx, fluss.NewTablePath("fluss", "no_such_table"))
	var fe *fluss.Error
	if errors.As(err, &fe) {
		fmt.Println(fe.Code, int32(fe.Code), fe.Retriable())
	}
	fmt.Println(errors.Is(err, fluss.ErrTableNotExist))
	// Output:
	// TABLE_NOT_EXIST 7 false
	// true
}
