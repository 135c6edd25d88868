package fluss_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/stromdb/strom/fluss"
)

func createTable(t *testing.T, ctx context.Context, conn *fluss.Connection, name string, desc fluss.TableDescriptor) *fluss.Table {
	t.Helper()
	admin := conn.Admin()
	if err := admin.CreateDatabase(ctx, "it", nil, true); err != nil {
		t.Fatal(err)
	}
	path := fluss.NewTablePath("it", name)
	if externalCluster != "" { // a long-lived cluster: start from scratch
		if err := admin.DropTable(ctx, path, true); err != nil {
			t.Fatal(err)
		}
	}
	if err := admin.CreateTable(ctx, path, desc, false); err != nil {
		t.Fatal(err)
	}
	tbl, err := conn.Table(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

// pollAll polls until n records arrived.
func pollAll(t *testing.T, ctx context.Context, sc *fluss.LogScanner, n int) []fluss.ScanRecord {
	t.Helper()
	var out []fluss.ScanRecord
	for attempt := 0; len(out) < n && attempt < 50; attempt++ {
		recs, err := sc.Poll(ctx, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, recs...)
	}
	if len(out) != n {
		t.Fatalf("polled %d records, want %d", len(out), n)
	}
	return out
}

func logDesc(buckets int32) fluss.TableDescriptor {
	return fluss.TableDescriptor{
		Schema: fluss.NewSchema([]fluss.Column{
			fluss.NewColumn("id", fluss.Int()),
			fluss.NewColumn("name", fluss.String()),
			fluss.NewColumn("score", fluss.Double()),
		}),
		BucketCount: buckets,
	}
}

func TestLogAppendAndScan(t *testing.T) {
	conn, ctx := connect(t)
	tbl := createTable(t, ctx, conn, "log1", logDesc(3))
	w, err := tbl.NewAppend().CreateWriter()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	const n = 100
	var last *fluss.WriteResult
	for i := range n {
		var name any = fmt.Sprintf("n%d", i)
		if i%10 == 0 {
			name = nil
		}
		last, err = w.Append(ctx, fluss.Row{int32(i), name, float64(i) / 2})
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := last.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}

	sc, err := tbl.NewScan().CreateLogScanner()
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	if err := sc.SubscribeBuckets(ctx, map[int32]int64{0: fluss.EarliestOffset, 1: fluss.EarliestOffset, 2: fluss.EarliestOffset}); err != nil {
		t.Fatal(err)
	}
	recs := pollAll(t, ctx, sc, n)
	seen := map[int32]bool{}
	for _, r := range recs {
		id := r.Row[0].(int32)
		seen[id] = true
		if r.ChangeType != fluss.AppendOnly || r.ChangeType.ShortString() != "+A" {
			t.Fatalf("change type %v", r.ChangeType)
		}
		if r.Row[2].(float64) != float64(id)/2 {
			t.Fatalf("row %v", r.Row)
		}
		if id%10 == 0 && r.Row[1] != nil || id%10 != 0 && r.Row[1] != fmt.Sprintf("n%d", id) {
			t.Fatalf("row %v", r.Row)
		}
		if r.Timestamp == 0 || r.Bucket.TableID != tbl.Info().TableID {
			t.Fatalf("record meta %+v", r)
		}
	}
	if len(seen) != n {
		t.Fatalf("saw %d distinct ids", len(seen))
	}
	// Offsets are dense per bucket.
	per := map[int32][]int64{}
	for _, r := range recs {
		per[r.Bucket.Bucket] = append(per[r.Bucket.Bucket], r.Offset)
	}
	total := int64(0)
	for b, offs := range per {
		for i, o := range offs {
			if o != int64(i) {
				t.Fatalf("bucket %d offsets %v", b, offs)
			}
		}
		total += int64(len(offs))
	}
	latest, err := conn.Admin().ListOffsets(ctx, tbl.Path(), []int32{0, 1, 2}, fluss.OffsetLatest())
	if err != nil {
		t.Fatal(err)
	}
	if latest[0]+latest[1]+latest[2] != total {
		t.Fatalf("latest offsets %v, total %d", latest, total)
	}
	// Nothing more: Poll times out empty.
	more, err := sc.Poll(ctx, 100*time.Millisecond)
	if err != nil || len(more) != 0 {
		t.Fatalf("extra poll = %v, %v", more, err)
	}
}

func TestLogProjectionAndArrow(t *testing.T) {
	conn, ctx := connect(t)
	tbl := createTable(t, ctx, conn, "log2", logDesc(1))
	w, err := tbl.NewAppend().CreateWriter()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	b := array.NewRecordBuilder(memory.DefaultAllocator, tbl.ArrowSchema())
	defer b.Release()
	for i := range 5 {
		b.Field(0).(*array.Int32Builder).Append(int32(i))
		b.Field(1).(*array.StringBuilder).Append(fmt.Sprint("s", i))
		b.Field(2).(*array.Float64Builder).Append(float64(i))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	h, err := w.AppendRecord(ctx, rec)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Wait(ctx); err != nil {
		t.Fatal(err)
	}

	// Projection in non-schema order, pushed down and reordered.
	sc, err := tbl.NewScan().ProjectByName("score", "id").CreateLogScanner()
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	if err := sc.Subscribe(ctx, 0, fluss.EarliestOffset); err != nil {
		t.Fatal(err)
	}
	recs := pollAll(t, ctx, sc, 5)
	for i, r := range recs {
		if !slices.Equal(r.Row, fluss.Row{float64(i), int32(i)}) || r.Offset != int64(i) {
			t.Fatalf("record %d = %+v", i, r)
		}
	}

	bs, err := tbl.NewScan().Project(1).CreateRecordBatchLogScanner()
	if err != nil {
		t.Fatal(err)
	}
	defer bs.Close()
	if err := bs.Subscribe(ctx, 0, 2); err != nil {
		t.Fatal(err)
	}
	batches, err := bs.Poll(ctx, 5*time.Second)
	if err != nil || len(batches) != 1 {
		t.Fatalf("Poll = %v, %v", batches, err)
	}
	got := batches[0]
	defer got.Record.Release()
	if got.BaseOffset != 2 || got.LastOffset != 4 || got.Record.NumCols() != 1 || got.Record.NumRows() != 3 {
		t.Fatalf("batch %+v", got)
	}
	if s := got.Record.Column(0).(*array.String).Value(0); s != "s2" {
		t.Fatalf("first value %q", s)
	}

	// LatestOffset: only later rows.
	late, err := tbl.NewScan().CreateLogScanner()
	if err != nil {
		t.Fatal(err)
	}
	defer late.Close()
	if err := late.Subscribe(ctx, 0, fluss.LatestOffset); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Append(ctx, fluss.Row{int32(99), "late", 1.5}); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	lr := pollAll(t, ctx, late, 1)
	if lr[0].Offset != 5 || lr[0].Row[0] != int32(99) {
		t.Fatalf("late record %+v", lr[0])
	}
}
