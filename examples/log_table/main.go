// Command log_table walks through a log table with the Go client: Arrow appends, row
// appends and a projected scan.
//
//	go run ./examples/log_table -bootstrap 127.0.0.1:9123
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

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
	if err := admin.CreateDatabase(ctx, "fluss", nil, true); err != nil {
		return err
	}
	path := fluss.NewTablePath("fluss", "events")
	desc := fluss.TableDescriptor{
		Schema: fluss.NewSchema([]fluss.Column{
			fluss.NewColumn("id", fluss.BigInt()),
			fluss.NewColumn("kind", fluss.String()),
			fluss.NewColumn("value", fluss.Double()),
		}),
		BucketCount: 1,
	}
	if err := admin.CreateTable(ctx, path, desc, true); err != nil {
		return err
	}
	table, err := conn.Table(ctx, path)
	if err != nil {
		return err
	}
	writer, err := table.NewAppend().CreateWriter()
	if err != nil {
		return err
	}
	defer writer.Close()

	// Append an Arrow record built against the table's Arrow schema.
	b := array.NewRecordBuilder(memory.DefaultAllocator, table.ArrowSchema())
	defer b.Release()
	for i := range 3 {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		b.Field(1).(*array.StringBuilder).Append("click")
		b.Field(2).(*array.Float64Builder).Append(float64(i) * 1.5)
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	if _, err := writer.AppendRecord(ctx, rec); err != nil {
		return err
	}
	// And a row of Go values.
	if _, err := writer.Append(ctx, fluss.Row{int64(3), "view", 0.5}); err != nil {
		return err
	}
	if err := writer.Flush(ctx); err != nil {
		return err
	}

	// Scan only "kind" and "id", as Arrow batches.
	scanner, err := table.NewScan().ProjectByName("kind", "id").CreateRecordBatchLogScanner()
	if err != nil {
		return err
	}
	defer scanner.Close()
	if err := scanner.Subscribe(ctx, 0, fluss.EarliestOffset); err != nil {
		return err
	}
	rows := 0
	for rows < 4 {
		batches, err := scanner.Poll(ctx, 5*time.Second)
		if err != nil {
			return err
		}
		if len(batches) == 0 {
			return fmt.Errorf("timed out after %d rows", rows)
		}
		for _, sb := range batches {
			fmt.Fprintf(out, "offsets %d..%d: %v\n", sb.BaseOffset, sb.LastOffset, sb.Record.Columns())
			rows += int(sb.Record.NumRows())
			sb.Record.Release()
		}
	}
	return nil
}
