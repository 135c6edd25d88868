package fluss_test

import (
	"testing"

	"github.com/stromdb/strom/fluss"
)

// TestWriterCloseDrains checks that rows appended and never flushed are delivered by Close.
func TestWriterCloseDrains(t *testing.T) {
	conn, ctx := connect(t)
	tbl := createTable(t, ctx, conn, "close_drains", logDesc(2))
	w, err := tbl.NewAppend().CreateWriter()
	if err != nil {
		t.Fatal(err)
	}
	const n = 50
	results := make([]*fluss.WriteResult, 0, n)
	for i := range n {
		r, err := w.Append(ctx, fluss.Row{int32(i), "x", 1.0})
		if err != nil {
			t.Fatal(err)
		}
		results = append(results, r)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	for i, r := range results {
		if err := r.Wait(ctx); err != nil {
			t.Fatalf("row %d: %v", i, err)
		}
	}
	sc, err := tbl.NewScan().CreateLogScanner()
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	if err := sc.SubscribeBuckets(ctx, map[int32]int64{0: fluss.EarliestOffset, 1: fluss.EarliestOffset}); err != nil {
		t.Fatal(err)
	}
	pollAll(t, ctx, sc, n)
}
