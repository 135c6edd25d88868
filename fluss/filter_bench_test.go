package fluss_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stromdb/strom/fluss"
	"github.com/stromdb/strom/fluss/internal/testserver"
)

func benchTable(b *testing.B, name string) (*fluss.Table, context.Context) {
	b.Helper()
	ctx := b.Context()
	conn, err := fluss.Connect(ctx, fluss.Config{BootstrapServers: testserver.Start(b, nil).Bootstrap, WriterBatchTimeout: 5e6})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { conn.Close() })
	if err := conn.Admin().CreateDatabase(ctx, "it", nil, true); err != nil {
		b.Fatal(err)
	}
	path := fluss.NewTablePath("it", name)
	if err := conn.Admin().CreateTable(ctx, path, logDesc(1), false); err != nil {
		b.Fatal(err)
	}
	tbl, err := conn.Table(ctx, path)
	if err != nil {
		b.Fatal(err)
	}
	return tbl, ctx
}

// BenchmarkAppendArrow measures the Go client's append path into one bucket of an ARROW log
// table (id INT, name STRING, score DOUBLE; 1000-row batches, ZSTD), server included: the
// server computes every batch's statistics on append.
func BenchmarkAppendArrow(b *testing.B) {
	tbl, ctx := benchTable(b, "bench_append")
	const per = 1000
	b.ResetTimer()
	start := time.Now()
	writeBatches(b, ctx, tbl, 0, b.N, per, func(id int) fluss.Row {
		return fluss.Row{int32(id), fmt.Sprintf("name-%d", id), float64(id) / 3}
	})
	b.ReportMetric(float64(b.N*per)/time.Since(start).Seconds(), "rows/s")
}

// BenchmarkSelectiveScan reads a 100-batch log (100,000 rows) to its end with a filter that
// only the last batch matches (1 % of batches), with and without pushing it down. rows/s
// counts the stored rows covered per second; wire-bytes/op is the record bytes received.
func BenchmarkSelectiveScan(b *testing.B) {
	tbl, ctx := benchTable(b, "bench_scan")
	const batches, per = 100, 1000
	writeBatches(b, ctx, tbl, 0, batches, per, func(id int) fluss.Row {
		return fluss.Row{int32(id), fmt.Sprintf("name-%d", id), float64(id) / 3}
	})
	p := fluss.GreaterOrEqual("id", int32((batches-1)*per))
	for _, filtered := range []bool{false, true} {
		b.Run(map[bool]string{false: "unfiltered", true: "filtered"}[filtered], func(b *testing.B) {
			var wire int64
			for b.Loop() {
				scan := tbl.NewScan()
				if filtered {
					scan = scan.Filter(p)
				}
				sc, err := scan.CreateLogScanner()
				if err != nil {
					b.Fatal(err)
				}
				if err := sc.Subscribe(ctx, 0, fluss.EarliestOffset); err != nil {
					b.Fatal(err)
				}
				matched := 0
				for fluss.SubscribedOffset(sc, 0) < batches*per {
					recs, err := sc.Poll(ctx, 100*time.Millisecond)
					if err != nil {
						b.Fatal(err)
					}
					for _, r := range recs {
						if r.Row[0].(int32) >= int32((batches-1)*per) {
							matched++
						}
					}
				}
				if matched != per {
					b.Fatalf("matched %d rows, want %d", matched, per)
				}
				wire += fluss.RecordBytes(sc)
				sc.Close()
			}
			b.ReportMetric(float64(b.N*batches*per)/b.Elapsed().Seconds(), "rows/s")
			b.ReportMetric(float64(wire)/float64(b.N), "wire-bytes/op")
		})
	}
}
