package fluss_test

import (
	"slices"
	"testing"

	"github.com/stromdb/strom/fluss"
)

func TestLookupInsertIfNotExists(t *testing.T) {
	conn, ctx := connect(t)
	tbl := createTable(t, ctx, conn, "insert_missing", pkDesc(2))
	w, err := tbl.NewUpsert().CreateWriter()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	h, err := w.Upsert(ctx, fluss.Row{int32(1), "alice", int64(30)})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	ins, err := tbl.NewLookup().InsertIfNotExists().CreateLookuper()
	if err != nil {
		t.Fatal(err)
	}
	// A stored key comes back unchanged; a missing one is inserted with null columns.
	if got, err := ins.Lookup(ctx, fluss.Row{int32(1)}); err != nil || !slices.Equal(got, fluss.Row{int32(1), "alice", int64(30)}) {
		t.Fatalf("insert-lookup of a stored key = %v, %v", got, err)
	}
	if got, err := ins.Lookup(ctx, fluss.Row{int32(7)}); err != nil || !slices.Equal(got, fluss.Row{int32(7), nil, nil}) {
		t.Fatalf("insert-lookup of a missing key = %v, %v", got, err)
	}
	plain, err := tbl.NewLookup().CreateLookuper()
	if err != nil {
		t.Fatal(err)
	}
	if got, err := plain.Lookup(ctx, fluss.Row{int32(7)}); err != nil || !slices.Equal(got, fluss.Row{int32(7), nil, nil}) {
		t.Fatalf("plain lookup of the inserted key = %v, %v", got, err)
	}
	if got, err := plain.Lookup(ctx, fluss.Row{int32(8)}); err != nil || got != nil {
		t.Fatalf("plain lookups insert nothing: %v, %v", got, err)
	}
	if _, err := tbl.NewLookup().LookupBy("id").InsertIfNotExists().CreatePrefixLookuper(); err == nil {
		t.Fatal("a prefix lookuper accepted InsertIfNotExists")
	}
}

func TestUpsertOverwriteBypassesTheMergeEngine(t *testing.T) {
	conn, ctx := connect(t)
	desc := pkDesc(1)
	desc.Properties = map[string]string{"table.merge-engine": "first_row"}
	tbl := createTable(t, ctx, conn, "overwrite_first_row", desc)
	write := func(w *fluss.UpsertWriter, r fluss.Row, del bool) {
		t.Helper()
		var h *fluss.WriteResult
		var err error
		if del {
			h, err = w.Delete(ctx, r)
		} else {
			h, err = w.Upsert(ctx, r)
		}
		if err == nil {
			err = h.Wait(ctx)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	lookup := func() fluss.Row {
		t.Helper()
		lk, err := tbl.NewLookup().CreateLookuper()
		if err != nil {
			t.Fatal(err)
		}
		got, err := lk.Lookup(ctx, fluss.Row{int32(1)})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	merged, err := tbl.NewUpsert().CreateWriter()
	if err != nil {
		t.Fatal(err)
	}
	defer merged.Close()
	write(merged, fluss.Row{int32(1), "first", int64(1)}, false)
	write(merged, fluss.Row{int32(1), "second", int64(2)}, false)
	if got := lookup(); !slices.Equal(got, fluss.Row{int32(1), "first", int64(1)}) {
		t.Fatalf("first_row kept %v", got)
	}
	over, err := tbl.NewUpsert().Overwrite().CreateWriter()
	if err != nil {
		t.Fatal(err)
	}
	defer over.Close()
	write(over, fluss.Row{int32(1), "corrected", int64(3)}, false)
	if got := lookup(); !slices.Equal(got, fluss.Row{int32(1), "corrected", int64(3)}) {
		t.Fatalf("after an overwrite: %v", got)
	}
	write(over, fluss.Row{int32(1), nil, nil}, true)
	if got := lookup(); got != nil {
		t.Fatalf("after an overwrite delete: %v", got)
	}
}
