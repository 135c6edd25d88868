package fluss_test

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stromdb/strom/fluss"
)

// TestFetchAliasingMatchesCopy scans the same log, and the changelog of a primary-key table,
// once with FETCH_LOG answers decoded by proto.Unmarshal (records copied) and once by the
// aliasing decoder (records left in the frame, Arrow bodies aliased where aligned), and
// requires identical records: offsets, timestamps, change types and values. The rows' string
// lengths vary so that batch bodies land at every alignment within the frames.
func TestFetchAliasingMatchesCopy(t *testing.T) {
	conn, ctx := connect(t)
	logTbl := createTable(t, ctx, conn, "fetch_alias_log", fluss.TableDescriptor{
		Schema: fluss.NewSchema([]fluss.Column{
			fluss.NewColumn("id", fluss.Int()),
			fluss.NewColumn("name", fluss.String()),
			fluss.NewColumn("score", fluss.Double()),
			fluss.NewColumn("n", fluss.BigInt()),
		}),
		BucketCount: 3,
	})
	w, err := logTbl.NewAppend().CreateWriter()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	const n = 3000
	for i := range n {
		var name any = strings.Repeat("x", i%13)
		if i%17 == 0 {
			name = nil
		}
		if _, err := w.Append(ctx, fluss.Row{int32(i), name, float64(i) / 3, int64(i) * 7}); err != nil {
			t.Fatal(err)
		}
		if i%97 == 0 { // many batches of uneven sizes
			if err := w.Flush(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}

	pkTbl := createTable(t, ctx, conn, "fetch_alias_pk", pkDesc(2))
	uw, err := pkTbl.NewUpsert().CreateWriter()
	if err != nil {
		t.Fatal(err)
	}
	defer uw.Close()
	for round := range 3 {
		for i := range 200 {
			if _, err := uw.Upsert(ctx, fluss.Row{int32(i), fmt.Sprintf("u%d-%d", i, round), int64(round)}); err != nil {
				t.Fatal(err)
			}
		}
		if err := uw.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 200; i += 7 {
		if _, err := uw.Delete(ctx, fluss.Row{int32(i), nil, nil}); err != nil {
			t.Fatal(err)
		}
	}
	if err := uw.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	const pkRecords = 200 + 2*2*200 + 29 // inserts, -U/+U per update, deletes

	scan := func(tbl *fluss.Table, buckets int32, want int, copied bool) []fluss.ScanRecord {
		fluss.CopyFetchedRecords(t, copied)
		sc, err := tbl.NewScan().CreateLogScanner()
		if err != nil {
			t.Fatal(err)
		}
		defer sc.Close()
		offs := map[int32]int64{}
		for b := range buckets {
			offs[b] = fluss.EarliestOffset
		}
		if err := sc.SubscribeBuckets(ctx, offs); err != nil {
			t.Fatal(err)
		}
		recs := pollAll(t, ctx, sc, want)
		slices.SortFunc(recs, func(a, b fluss.ScanRecord) int {
			if a.Bucket.Bucket != b.Bucket.Bucket {
				return int(a.Bucket.Bucket - b.Bucket.Bucket)
			}
			return int(a.Offset - b.Offset)
		})
		return recs
	}
	for _, c := range []struct {
		tbl     *fluss.Table
		buckets int32
		want    int
	}{{logTbl, 3, n}, {pkTbl, 2, pkRecords}} {
		copied := scan(c.tbl, c.buckets, c.want, true)
		aliased := scan(c.tbl, c.buckets, c.want, false)
		if !reflect.DeepEqual(copied, aliased) {
			for i := range copied {
				if !reflect.DeepEqual(copied[i], aliased[i]) {
					t.Fatalf("%s: record %d: copied %+v, aliased %+v", c.tbl.Path(), i, copied[i], aliased[i])
				}
			}
			t.Fatalf("%s: the scans differ", c.tbl.Path())
		}
	}
}

// BenchmarkBatchScan reads a 200-batch log (200,000 rows of id INT, name STRING, score DOUBLE)
// to its end with a RecordBatchLogScanner, its FETCH_LOG answers decoded by the aliasing
// decoder (the default) and by proto.Unmarshal (records copied), in one process against the
// in-process server: the client's part of a scan, paired. B/op counts the client's and the
// server's allocations together.
func BenchmarkBatchScan(b *testing.B) {
	tbl, ctx := benchTable(b, "bench_batch_scan")
	const batches, per = 200, 1000
	writeBatches(b, ctx, tbl, 0, batches, per, func(id int) fluss.Row {
		return fluss.Row{int32(id), fmt.Sprintf("name-%d", id), float64(id) / 3}
	})
	for _, copied := range []bool{false, true} {
		b.Run(map[bool]string{false: "aliasing", true: "copy"}[copied], func(b *testing.B) {
			fluss.CopyFetchedRecords(b, copied)
			b.ReportAllocs()
			for b.Loop() {
				sc, err := tbl.NewScan().CreateRecordBatchLogScanner()
				if err != nil {
					b.Fatal(err)
				}
				if err := sc.Subscribe(ctx, 0, fluss.EarliestOffset); err != nil {
					b.Fatal(err)
				}
				var rows int64
				for rows < batches*per {
					bs, err := sc.Poll(ctx, 100*time.Millisecond)
					if err != nil {
						b.Fatal(err)
					}
					for _, bt := range bs {
						rows += bt.Record.NumRows()
						bt.Record.Release()
					}
				}
				if rows != batches*per {
					b.Fatalf("read %d rows, want %d", rows, batches*per)
				}
				sc.Close()
			}
			b.ReportMetric(float64(b.N*batches*per)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}
