// Command pk_table walks through a primary-key table with the Go client: create, upsert,
// delete, lookup, partial update, changelog subscription and a limit scan.
//
//	go run ./examples/pk_table -bootstrap 127.0.0.1:9123
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"time"

	"github.com/stromdb/strom/fluss"
)

func main() {
	bootstrap := flag.String("bootstrap", "127.0.0.1:9123", "bootstrap server host:port")
	flag.Parse()
	if err := run(context.Background(), *bootstrap, os.Stdout); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, bootstrap string, out io.Writer) error {
	conn, err := fluss.Connect(ctx, fluss.Config{BootstrapServers: bootstrap})
	if err != nil {
		return err
	}
	defer conn.Close()
	admin := conn.Admin()

	// Create a primary-key table with three buckets.
	if err := admin.CreateDatabase(ctx, "fluss", nil, true); err != nil {
		return err
	}
	path := fluss.NewTablePath("fluss", "users")
	desc := fluss.TableDescriptor{
		Schema: fluss.NewSchema([]fluss.Column{
			fluss.NewColumn("id", fluss.Int()),
			fluss.NewColumn("name", fluss.String()),
			fluss.NewColumn("age", fluss.BigInt()),
		}, "id"),
		BucketCount: 3,
	}
	if err := admin.CreateTable(ctx, path, desc, true); err != nil {
		return err
	}
	table, err := conn.Table(ctx, path)
	if err != nil {
		return err
	}

	// Upsert (fire and forget, flush at the end).
	writer, err := table.NewUpsert().CreateWriter()
	if err != nil {
		return err
	}
	defer writer.Close()
	for _, r := range []fluss.Row{{1, "Alice", 25}, {2, "Bob", 30}} {
		if _, err := writer.Upsert(ctx, r); err != nil {
			return err
		}
	}
	if err := writer.Flush(ctx); err != nil {
		return err
	}
	// Per-record acknowledgement, for read-after-write.
	h, err := writer.Upsert(ctx, fluss.Row{3, "Charlie", 35})
	if err != nil {
		return err
	}
	if err := h.Wait(ctx); err != nil {
		return err
	}
	// Delete by primary key (the other columns are ignored).
	if h, err = writer.Delete(ctx, fluss.Row{2, nil, nil}); err != nil {
		return err
	}
	if err := h.Wait(ctx); err != nil {
		return err
	}

	// Lookup.
	lookuper, err := table.NewLookup().CreateLookuper()
	if err != nil {
		return err
	}
	row, err := lookuper.Lookup(ctx, fluss.Row{1})
	if err != nil {
		return err
	}
	if row != nil {
		fmt.Fprintf(out, "Found: name=%v, age=%v\n", row[1], row[2])
	}

	// Partial update: only age changes.
	partial, err := table.NewUpsert().PartialUpdateByName("id", "age").CreateWriter()
	if err != nil {
		return err
	}
	defer partial.Close()
	if _, err := partial.Upsert(ctx, fluss.Row{1, nil, 27}); err != nil {
		return err
	}
	if err := partial.Flush(ctx); err != nil {
		return err
	}
	if row, err = lookuper.Lookup(ctx, fluss.Row{1}); err != nil {
		return err
	}
	fmt.Fprintf(out, "After partial update: %v\n", row)

	// Changelog subscription from the start of every bucket.
	scanner, err := table.NewScan().CreateLogScanner()
	if err != nil {
		return err
	}
	defer scanner.Close()
	offsets := map[int32]int64{}
	for b := range table.Info().NumBuckets() {
		offsets[b] = fluss.EarliestOffset
	}
	if err := scanner.SubscribeBuckets(ctx, offsets); err != nil {
		return err
	}
	for {
		records, err := scanner.Poll(ctx, time.Second)
		if err != nil {
			return err
		}
		if len(records) == 0 {
			break
		}
		for _, r := range records {
			fmt.Fprintln(out, r.ChangeType.ShortString(), r.Row)
		}
	}

	// Limit scan: up to 10 current rows of each bucket, as Arrow.
	for b := range table.Info().NumBuckets() {
		bucket := fluss.NewTableBucket(table.Info().TableID, b)
		bs, err := table.NewScan().Limit(10).CreateBucketBatchScanner(bucket)
		if err != nil {
			return err
		}
		rec, err := bs.ToArrow(ctx)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "bucket %d: %d rows\n", b, rec.NumRows())
		rec.Release()
	}
	return nil
}
