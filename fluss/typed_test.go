package fluss_test

import (
	"testing"

	"github.com/stromdb/strom/fluss"
)

type user struct {
	ID   int32   `fluss:"id"`
	Name *string `fluss:"name"`
	Age  int64   // matched by name
	Skip string  `fluss:"-"`
}

func TestTypedAPI(t *testing.T) {
	conn, ctx := connect(t)
	tbl := createTable(t, ctx, conn, "typed", pkDesc(2))
	uw, err := tbl.NewUpsert().CreateWriter()
	if err != nil {
		t.Fatal(err)
	}
	defer uw.Close()
	w, err := fluss.NewTypedUpsertWriter[user](tbl, uw)
	if err != nil {
		t.Fatal(err)
	}
	alice := "alice"
	for _, u := range []user{{ID: 1, Name: &alice, Age: 30}, {ID: 2, Age: 40}} {
		if _, err := w.Upsert(ctx, u); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	l, err := tbl.NewLookup().CreateLookuper()
	if err != nil {
		t.Fatal(err)
	}
	tl, err := fluss.NewTypedLookuper[user](tbl, l)
	if err != nil {
		t.Fatal(err)
	}
	got, found, err := tl.Lookup(ctx, int32(1))
	if err != nil || !found || got.ID != 1 || got.Name == nil || *got.Name != "alice" || got.Age != 30 {
		t.Fatalf("Lookup(1) = %+v %v %v", got, found, err)
	}
	got, found, err = tl.Lookup(ctx, int32(2))
	if err != nil || !found || got.Name != nil || got.Age != 40 {
		t.Fatalf("Lookup(2) = %+v %v %v", got, found, err)
	}
	_, found, err = tl.Lookup(ctx, int32(3))
	if err != nil || found {
		t.Fatalf("Lookup(3) found=%v err=%v", found, err)
	}
	if _, err := w.Delete(ctx, user{ID: 2}); err != nil {
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
	if err := sc.SubscribeBuckets(ctx, map[int32]int64{0: fluss.EarliestOffset, 1: fluss.EarliestOffset}); err != nil {
		t.Fatal(err)
	}
	recs, err := fluss.Decode[user](tbl, pollAll(t, ctx, sc, 3))
	if err != nil {
		t.Fatal(err)
	}
	deletes := 0
	for _, r := range recs {
		if r.ChangeType == fluss.Delete {
			deletes++
			if r.Value.ID != 2 || r.Value.Age != 40 {
				t.Fatalf("delete record %+v", r)
			}
		}
	}
	if deletes != 1 {
		t.Fatalf("records %+v", recs)
	}
	type bad struct {
		X int `fluss:"nope"`
	}
	if _, err := fluss.NewTypedLookuper[bad](tbl, l); err == nil {
		t.Fatal("unknown column tag accepted")
	}
}
