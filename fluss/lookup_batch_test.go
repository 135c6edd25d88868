package fluss_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/stromdb/strom/fluss"
)

// Concurrent lookups are merged into few LOOKUP requests, and every caller still gets its
// own row (or nil for a missing key).
func TestLookupBatching(t *testing.T) {
	ctx := t.Context()
	conn, err := fluss.Connect(ctx, fluss.Config{BootstrapServers: cluster(t), WriterBatchTimeout: 5e6, LookupMaxInflightRequests: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	tbl := createTable(t, ctx, conn, "batched", pkDesc(3))
	w, err := tbl.NewUpsert().CreateWriter()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	const n = 300
	for i := range n {
		if _, err := w.Upsert(ctx, fluss.Row{int32(i), fmt.Sprint("user", i), int64(i)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	lk, err := tbl.NewLookup().CreateLookuper()
	if err != nil {
		t.Fatal(err)
	}
	before := fluss.LookupRequests(tbl)
	var wg sync.WaitGroup
	errs := make(chan error, 2*n)
	start := make(chan struct{})
	for i := range n + 20 { // 20 keys that do not exist
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			r, err := lk.Lookup(ctx, fluss.Row{int32(i)})
			switch {
			case err != nil:
				errs <- err
			case i >= n && r != nil:
				errs <- fmt.Errorf("key %d: got %v, want none", i, r)
			case i < n && (r == nil || r[1] != fmt.Sprint("user", i) || r[2] != int64(i)):
				errs <- fmt.Errorf("key %d: got %v", i, r)
			}
		}()
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if sent := fluss.LookupRequests(tbl) - before; sent >= n/2 {
		t.Fatalf("%d lookups took %d LOOKUP requests; want them merged", n+20, sent)
	} else {
		t.Logf("%d lookups in %d requests", n+20, sent)
	}
}

// Concurrent prefix lookups are merged too, and each caller gets exactly its prefix's rows.
func TestPrefixLookupBatching(t *testing.T) {
	ctx := t.Context()
	conn, err := fluss.Connect(ctx, fluss.Config{BootstrapServers: cluster(t), WriterBatchTimeout: 5e6, LookupMaxInflightRequests: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	tbl := createTable(t, ctx, conn, "prefix_batched", fluss.TableDescriptor{
		Schema: fluss.NewSchema([]fluss.Column{
			fluss.NewColumn("user", fluss.Int()),
			fluss.NewColumn("item", fluss.Int()),
			fluss.NewColumn("v", fluss.Int()),
		}, "user", "item"),
		BucketKeys:  []string{"user"},
		BucketCount: 3,
	})
	w, err := tbl.NewUpsert().CreateWriter()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	const users, items = 100, 4
	for u := range users {
		for i := range items {
			if _, err := w.Upsert(ctx, fluss.Row{int32(u), int32(i), int32(u*10 + i)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	pl, err := tbl.NewLookup().LookupBy("user").CreatePrefixLookuper()
	if err != nil {
		t.Fatal(err)
	}
	before := fluss.LookupRequests(tbl)
	var wg sync.WaitGroup
	errs := make(chan error, users+1)
	start := make(chan struct{})
	for u := range users + 1 { // user 100 has no rows
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			rows, err := pl.Lookup(ctx, fluss.Row{int32(u)})
			if err != nil {
				errs <- err
				return
			}
			want := items
			if u == users {
				want = 0
			}
			if len(rows) != want {
				errs <- fmt.Errorf("user %d: %d rows, want %d", u, len(rows), want)
				return
			}
			for _, r := range rows {
				if r[0] != int32(u) || r[2] != int32(u)*10+r[1].(int32) {
					errs <- fmt.Errorf("user %d: row %v", u, r)
				}
			}
		}()
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if sent := fluss.LookupRequests(tbl) - before; sent >= users/2 {
		t.Fatalf("%d prefix lookups took %d requests; want them merged", users+1, sent)
	} else {
		t.Logf("%d prefix lookups in %d requests", users+1, sent)
	}
}
