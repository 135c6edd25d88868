package fluss_test

import (
	"context"
	"testing"
	"time"

	"github.com/stromdb/strom/fluss"
)

// writeBatches appends batches log batches of perBatch rows (id, name, score) to tbl, one
// flush per batch, ids counting from first.
func writeBatches(t testing.TB, ctx context.Context, tbl *fluss.Table, first, batches, perBatch int, extra func(id int) fluss.Row) {
	t.Helper()
	w, err := tbl.NewAppend().CreateWriter()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	id := first
	for range batches {
		for range perBatch {
			r := fluss.Row{int32(id), "n", float64(id)}
			if extra != nil {
				r = extra(id)
			}
			if _, err := w.Append(ctx, r); err != nil {
				t.Fatal(err)
			}
			id++
		}
		if err := w.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// scanAll reads bucket 0 from the start until it reaches end, returning the ids seen.
// cols, when given, is pushed down as a projection (which also reshapes batches of older
// schemas to the latest one).
func scanAll(t testing.TB, ctx context.Context, tbl *fluss.Table, p *fluss.Predicate, end int64, cols ...int) []int32 {
	t.Helper()
	scan := tbl.NewScan()
	if cols != nil {
		scan = scan.Project(cols...)
	}
	if p != nil {
		scan = scan.Filter(*p)
	}
	sc, err := scan.CreateLogScanner()
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	if err := sc.Subscribe(ctx, 0, fluss.EarliestOffset); err != nil {
		t.Fatal(err)
	}
	var ids []int32
	deadline := time.Now().Add(20 * time.Second)
	for fluss.SubscribedOffset(sc, 0) < end {
		if time.Now().After(deadline) {
			t.Fatalf("scan stuck at offset %d of %d", fluss.SubscribedOffset(sc, 0), end)
		}
		recs, err := sc.Poll(ctx, 200*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			ids = append(ids, r.Row[0].(int32))
		}
	}
	return ids
}

func TestScanFilterPrunesBatches(t *testing.T) {
	conn, ctx := connect(t)
	tbl := createTable(t, ctx, conn, "filter1", logDesc(1))
	const batches, per = 20, 100
	writeBatches(t, ctx, tbl, 0, batches, per, nil)
	end := int64(batches * per)

	all := scanAll(t, ctx, tbl, nil, end)
	if len(all) != batches*per {
		t.Fatalf("unfiltered scan: %d rows", len(all))
	}
	p := fluss.GreaterOrEqual("id", int32(1950))
	got := scanAll(t, ctx, tbl, &p, end)
	matching := 0
	for _, id := range got {
		if id >= 1950 {
			matching++
		}
	}
	if matching != 50 || len(got) >= len(all) {
		t.Fatalf("filtered scan: %d rows, %d matching (want all 50 and fewer than %d)", len(got), matching, len(all))
	}
	if len(got) != per {
		t.Errorf("filtered scan returned %d rows; only the last batch of %d can match", len(got), per)
	}

	// Nothing matches: the scan reaches the end on filtered_end_offset alone.
	none := fluss.And(fluss.LessThan("id", int32(0)), fluss.IsNotNull("name"))
	if got := scanAll(t, ctx, tbl, &none, end); len(got) != 0 {
		t.Fatalf("a filter matching nothing returned %d rows", len(got))
	}
	// OR of two batches' ranges, IN, NOT NULL: every matching row arrives.
	or := fluss.Or(fluss.In("id", int32(5), int32(1234)), fluss.Equal("score", float64(777)))
	got = scanAll(t, ctx, tbl, &or, end)
	want := map[int32]bool{5: false, 777: false, 1234: false}
	for _, id := range got {
		if _, ok := want[id]; ok {
			want[id] = true
		}
	}
	for id, seen := range want {
		if !seen {
			t.Errorf("row %d missing from OR scan", id)
		}
	}
	if len(got) != 3*per {
		t.Errorf("OR scan returned %d rows, want the 3 batches that hold a match", len(got))
	}
}

func TestScanFilterThroughAddColumn(t *testing.T) {
	conn, ctx := connect(t)
	tbl := createTable(t, ctx, conn, "filter2", logDesc(1))
	writeBatches(t, ctx, tbl, 0, 5, 100, nil)
	if err := conn.Admin().AlterTable(ctx, tbl.Path(), []fluss.TableChange{fluss.AddColumn("extra", fluss.BigInt(), "")}, false); err != nil {
		t.Fatal(err)
	}
	tbl, err := conn.Table(ctx, tbl.Path())
	if err != nil {
		t.Fatal(err)
	}
	writeBatches(t, ctx, tbl, 500, 5, 100, func(id int) fluss.Row {
		var extra any
		if id >= 900 {
			extra = int64(id)
		}
		return fluss.Row{int32(id), "n", float64(id), extra}
	})
	// Batches written before the column existed hold only NULLs in it: pruned.
	p := fluss.GreaterOrEqual("extra", int64(950))
	got := scanAll(t, ctx, tbl, &p, 1000, 0, 1, 2, 3)
	if len(got) != 100 || got[0] != 900 {
		t.Fatalf("extra >= 950: %d rows from %v", len(got), got[:min(len(got), 1)])
	}
	// IS NULL keeps every batch with a NULL in it, the old ones included.
	n := fluss.IsNull("extra")
	if got := scanAll(t, ctx, tbl, &n, 1000, 0, 1, 2, 3); len(got) != 900 {
		t.Fatalf("extra IS NULL: %d rows, want the 900 of batches holding a NULL", len(got))
	}
	// A filter on an old column prunes old and new batches alike.
	q := fluss.LessThan("id", int32(100))
	if got := scanAll(t, ctx, tbl, &q, 1000, 0, 3); len(got) != 100 {
		t.Fatalf("id < 100: %d rows", len(got))
	}
}

func TestScanFilterRefusesBadInput(t *testing.T) {
	conn, ctx := connect(t)
	tbl := createTable(t, ctx, conn, "filter3", logDesc(1))
	for name, p := range map[string]fluss.Predicate{
		"unknown column": fluss.Equal("nope", int32(1)),
		"wrong type":     fluss.Equal("id", "text"),
		"empty IN":       fluss.In("id"),
		"empty AND":      fluss.And(),
	} {
		if _, err := tbl.NewScan().Filter(p).CreateLogScanner(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := tbl.NewScan().Filter(fluss.IsNull("id")).Limit(5).CreateBucketBatchScanner(fluss.NewTableBucket(tbl.Info().TableID, 0)); err == nil {
		t.Error("Filter with Limit accepted")
	}
}
