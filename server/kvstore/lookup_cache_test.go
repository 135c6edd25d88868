package kvstore

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/cockroachdb/pebble"

	"github.com/stromdb/strom/internal/row"
	"github.com/stromdb/strom/server/logstore"
)

// rawDelete deletes id's row in Pebble behind the tablet's back (no new row cache
// generation), so that a lookup that still finds the row can only have read the cache.
func (h *harness) rawDelete(id int64) {
	h.t.Helper()
	k, err := clientKey(h.table, h.tab.tbl.keyTypes, []row.Datum{{I: id}})
	if err != nil {
		h.t.Fatal(err)
	}
	if err := h.store.db.Delete(h.tab.dataKey(nil, k), pebble.NoSync); err != nil {
		h.t.Fatal(err)
	}
}

// Lookups are answered from the row cache when it holds the key, and from Pebble otherwise;
// with the cache off they read Pebble.
func TestLookupReadsRowCache(t *testing.T) {
	h := newHarness(t, usersTable(nil))
	h.put(nil, up(1, "a", 1), up(2, "b", 2))
	h.rawDelete(1)
	if got := h.get(1); got != "(1,a,1)" {
		t.Fatalf("lookup of a cached row: %q, want it from the row cache", got)
	}
	off := newHarnessRowCache(t, usersTable(nil), logstore.FlushInterval(0), -1)
	off.put(nil, up(1, "a", 1))
	off.rawDelete(1)
	if got := off.get(1); got != "" {
		t.Fatalf("lookup with the row cache off: %q, want Pebble's (nothing)", got)
	}
}

// A lookup never sees a write that is not durable and applied: not while it is only staged
// (its changelog written, not synced), not while it is durable but not yet committed to
// Pebble; and once the write is acknowledged, never the older value, although the older
// value was in the row cache.
func TestLookupFromRowCacheSeesOnlyDurableAppliedWrites(t *testing.T) {
	h := newHarness(t, usersTable(nil))
	h.put(nil, up(1, "a", 1)) // acknowledged: (1,a,1) is in the row cache
	if got := h.get(1); got != "(1,a,1)" {
		t.Fatalf("after the first write: %q", got)
	}

	_, p, err := h.tab.PutStaged(h.kvBatch(1, h.seq, up(1, "b", 2)), WriteOptions{}, 100_000)
	if err != nil {
		t.Fatal(err)
	}
	h.seq++
	if got := h.get(1); got != "(1,a,1)" {
		t.Fatalf("lookup while the update is only staged: %q", got)
	}

	entered, release := make(chan struct{}), make(chan struct{})
	h.tab.testHookAfterAppend = func() error { // durable, not yet in Pebble nor the cache
		close(entered)
		<-release
		return nil
	}
	done := make(chan error, 1)
	go func() { done <- p.Wait(context.Background()) }()
	<-entered
	if got := h.get(1); got != "(1,a,1)" {
		t.Fatalf("lookup while the durable update waits for its apply: %q", got)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	h.tab.testHookAfterAppend = nil
	if got := h.get(1); got != "(1,b,2)" {
		t.Fatalf("lookup after the acknowledgement: %q", got)
	}
	h.put(nil, del(1))
	if got := h.get(1); got != "" {
		t.Fatalf("lookup after an acknowledged delete: %q", got)
	}
}

// An apply whose Pebble commit fails leaves nothing in the row cache: lookups keep answering
// the last applied value.
func TestLookupAfterFailedApplySeesAppliedValue(t *testing.T) {
	h := newHarness(t, usersTable(nil))
	h.put(nil, up(1, "a", 1))
	h.tab.testHookAfterAppend = func() error { return fmt.Errorf("simulated crash before the commit") }
	if _, err := h.tryPut(nil, up(1, "b", 2)); err == nil {
		t.Fatal("the put whose apply failed succeeded")
	}
	if got := h.get(1); got != "(1,a,1)" {
		t.Fatalf("lookup after a failed apply: %q", got)
	}
}

// Concurrent writers and readers of one key: every lookup returns a version at least as new
// as the last acknowledged one when the lookup started, and never older than what an earlier
// lookup returned, while updates are applied, cached and read concurrently.
func TestLookupVersionsNeverGoBack(t *testing.T) {
	h := newHarness(t, usersTable(nil))
	const writes = 300
	var acked atomic.Int64
	h.put(nil, up(1, "v", 0))
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for v := int64(1); v <= writes; v++ {
			// Two keys per batch so that the batch's row cache fill is not a single entry.
			if _, err := h.tryPut(nil, up(1, "v", v), up(2, "w", v)); err != nil {
				errs <- err
				return
			}
			acked.Store(v)
		}
	}()
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			last := int64(-1)
			for acked.Load() < writes {
				floor := acked.Load()
				got := lookupVersion(h, 1)
				if got < floor || got < last {
					errs <- fmt.Errorf("lookup returned version %d after version %d was acknowledged and %d was read", got, floor, last)
					return
				}
				last = got
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if got := lookupVersion(h, 1); got != writes {
		t.Fatalf("final version %d, want %d", got, writes)
	}
}

// lookupVersion returns the age column of id's row (the version the test wrote), -1 if absent.
func lookupVersion(h *harness, id int64) int64 {
	k, err := clientKey(h.table, h.tab.tbl.keyTypes, []row.Datum{{I: id}})
	if err != nil {
		panic(err)
	}
	vals, err := h.tab.Lookup([][]byte{k}, nil)
	if err != nil || vals[0] == nil {
		return -1
	}
	sid, rb, err := row.SplitValue(vals[0])
	if err != nil {
		return -1
	}
	d, err := h.tab.tbl.decodeRow(sid, rb, nil)
	if err != nil {
		return -1
	}
	return d[2].I
}
