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
