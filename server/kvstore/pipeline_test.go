package kvstore

import (
	"context"

	"fmt"
	"sync"
	"testing"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/server/logstore"
)

// A staged batch is invisible to lookups until it is durable, but the next staged batch merges
// against it; one durable wait applies every batch the fsync covered, in order.
func TestPipelineStagesAgainstUnappliedWrites(t *testing.T) {
	h := newHarnessWith(t, usersTable(nil), logstore.FlushEveryAppend)
	end1, wait1, err := h.tab.PutStaged(h.kvBatch(1, 0, up(1, "a", 1), up(2, "b", 2)), WriteOptions{}, 1)
	if err != nil || end1 != 2 {
		t.Fatalf("stage 1: %d %v", end1, err)
	}
	end2, wait2, err := h.tab.PutStaged(h.kvBatch(1, 1, up(1, "a2", 10), del(2)), WriteOptions{}, 1)
	if err != nil || end2 != 5 {
		t.Fatalf("stage 2: %d %v", end2, err)
	}
	// Nothing is durable yet: lookups read only applied state.
	if got := h.get(1); got != "" {
		t.Fatalf("lookup saw a staged write: %q", got)
	}
	if h.log.HighWatermark() != 0 {
		t.Fatalf("high watermark %d before any sync", h.log.HighWatermark())
	}
	// The second batch's wait syncs once and applies both batches.
	if err := wait2.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := h.get(1); got != "(1,a2,10)" || h.get(2) != "" || h.tab.AppliedOffset() != 5 {
		t.Fatalf("after wait: 1=%q 2=%q applied=%d", got, h.get(2), h.tab.AppliedOffset())
	}
	if err := wait1.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	// The second batch was computed against the first: an update and a delete, not inserts.
	eqStrings(t, "changelog", h.changelog(), []string{
		"+I(1,a,1)", "+I(2,b,2)", "-U(1,a,1)", "+U(1,a2,10)", "-D(2,b,2)",
	})
	if len(h.tab.queue) != 0 {
		t.Fatalf("pre-write buffer not drained: %d batches", len(h.tab.queue))
	}
}

// A retry of a batch that is staged but not yet durable is a duplicate: its wait returns once
// the original is applied, and nothing is applied twice.
func TestPipelineDuplicateOfStagedBatch(t *testing.T) {
	h := newHarnessWith(t, usersTable(nil), logstore.FlushEveryAppend)
	_, wait1, err := h.tab.PutStaged(h.kvBatch(9, 0, up(1, "a", 1)), WriteOptions{}, 1)
	if err != nil {
		t.Fatal(err)
	}
	end, waitDup, err := h.tab.PutStaged(h.kvBatch(9, 0, up(1, "a", 1)), WriteOptions{}, 1)
	if err != nil || end != 1 {
		t.Fatalf("duplicate: %d %v", end, err)
	}
	if err := waitDup.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := h.get(1); got != "(1,a,1)" {
		t.Fatalf("after the duplicate's wait: %q", got)
	}
	if err := wait1.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	eqStrings(t, "changelog", h.changelog(), []string{"+I(1,a,1)"})
}

// A rejected record stages nothing: later batches do not see its other records.
func TestPipelineRejectedBatchPublishesNothing(t *testing.T) {
	h := newHarnessWith(t, usersTable(func(c *metadata.TableConfig) { c.DeleteBehavior = metadata.DeleteDisable }),
		logstore.FlushEveryAppend)
	_, _, err := h.tab.PutStaged(h.kvBatch(1, 0, up(5, "x", 5), del(1)), WriteOptions{}, 1)
	if ferr.CodeOf(err) != ferr.DeletionDisabledException {
		t.Fatalf("err = %v", err)
	}
	if len(h.tab.queue) != 0 || h.log.LogEndOffset() != 0 {
		t.Fatalf("rejected batch left %d batches, log end %d", len(h.tab.queue), h.log.LogEndOffset())
	}
	_, wait, err := h.tab.PutStaged(h.kvBatch(1, 0, up(5, "y", 6)), WriteOptions{}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := wait.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	eqStrings(t, "changelog", h.changelog(), []string{"+I(5,y,6)"})
}

// Concurrent writers and waiters: every acknowledged write is applied and the changelog
// agrees with the state after a reopen (replay).
func TestPipelineConcurrentWaiters(t *testing.T) {
	h := newHarnessWith(t, usersTable(nil), logstore.FlushEveryAppend)
	const batches = 200
	var wg sync.WaitGroup
	errs := make(chan error, batches)
	for i := 0; i < batches; i++ {
		_, wait, err := h.tab.PutStaged(h.kvBatch(3, int32(i), up(int64(i%17), "v", i)), WriteOptions{}, 1)
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- wait.Wait(context.Background())
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	want := map[int64]string{}
	for i := 0; i < batches; i++ {
		want[int64(i%17)] = render(h.tab.tbl.types, up(int64(i%17), "v", i).row)
	}
	check := func(when string) {
		for id, w := range want {
			if got := h.get(id); got != w {
				t.Fatalf("%s: %d = %q, want %q", when, id, got, w)
			}
		}
	}
	check("after the waits")
	if h.tab.AppliedOffset() != h.log.LogEndOffset() {
		t.Fatalf("applied %d, log end %d", h.tab.AppliedOffset(), h.log.LogEndOffset())
	}
	h.reopen()
	check("after reopen")
}

// With interval flushing the state is applied before its changelog is synced; a Pebble flush
// (Checkpoint here, or one Pebble starts itself) must sync the changelog first, so Pebble's
// durable state never runs ahead of the durable log (a power loss would otherwise leave state
// that recovery cannot reconcile with the log).
func TestPebbleFlushSyncsChangelogFirst(t *testing.T) {
	h := newHarness(t, usersTable(nil)) // FlushInterval(0): the log syncs only at roll and close
	h.put(nil, up(1, "a", 1), up(2, "b", 2))
	if !h.log.Unsynced() {
		t.Fatal("interval log synced on append; the test needs unsynced bytes")
	}
	if err := h.store.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	if h.log.Unsynced() {
		t.Fatal("Pebble flushed state whose changelog is not synced")
	}
}

// Both ways of reading Pebble before a write (DB.Get for mostly hits, an L6-filtered iterator
// for mostly misses) see the same state: each is forced against keys that exist, keys that do
// not, and keys only in the pre-write buffer.
func TestReadBeforeWriteModesAgree(t *testing.T) {
	for _, rate := range []float64{0, 1} {
		h := newHarness(t, usersTable(nil))
		h.put(nil, up(1, "a", 1), up(2, "b", 2))
		if err := h.store.Checkpoint(); err != nil { // move them out of the memtable
			t.Fatal(err)
		}
		h.tab.missRate.v = rate
		_, wait, err := h.tab.PutStaged(h.kvBatch(1, h.seq, up(2, "b2", 20), up(3, "c", 3)), WriteOptions{}, 1)
		if err != nil {
			t.Fatal(err)
		}
		h.seq++
		h.tab.missRate.v = rate
		h.put(nil, up(1, "a2", 10), up(3, "c2", 30), up(4, "d", 4)) // 3 is staged, not applied
		if err := wait.Wait(context.Background()); err != nil {
			t.Fatal(err)
		}
		eqStrings(t, "changelog", h.changelog(), []string{
			"+I(1,a,1)", "+I(2,b,2)",
			"-U(2,b,2)", "+U(2,b2,20)", "+I(3,c,3)",
			"-U(1,a,1)", "+U(1,a2,10)", "-U(3,c,3)", "+U(3,c2,30)", "+I(4,d,4)",
		})
	}
}

// A batch changes its way of reading Pebble when its own reads show the other way is cheaper
// (the tablet's miss rate lags by batches), and each record still merges against the right
// state across the switch: new keys become +I, existing ones -U/+U.
func TestReadBeforeWriteSwitchesWithinBatch(t *testing.T) {
	for _, tc := range []struct {
		name     string
		rate     float64 // the tablet's miss rate before the batch
		nNew     int     // new keys, first in the batch when newFirst
		newFirst bool
		wantIter bool // how the batch reads at its end
	}{
		{"mostly new keys after a run of hits", 0, 700, true, true},
		{"mostly existing keys after a run of misses", 1, 300, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Without the row cache, which would answer the existing keys' reads.
			h := newHarnessRowCache(t, usersTable(nil), logstore.FlushInterval(0), -1)
			h.withoutLiveKeys() // which would answer the new keys' reads
			var old []rec
			for i := range 1000 {
				old = append(old, up(int64(10000+i), "o", i))
			}
			h.put(nil, old...)
			if err := h.store.Checkpoint(); err != nil {
				t.Fatal(err)
			}
			base := len(h.changelog())
			var fresh, existing []rec
			for i := range tc.nNew {
				fresh = append(fresh, up(int64(i), "n", i))
			}
			for i := range 1000 - tc.nNew {
				existing = append(existing, up(int64(10000+i), "u", i))
			}
			batch := append(append([]rec{}, existing...), fresh...)
			if tc.newFirst {
				batch = append(append([]rec{}, fresh...), existing...)
			}
			h.tab.missRate.v = tc.rate
			h.put(nil, batch...)
			if got := h.tab.batch.useIter; got != tc.wantIter {
				t.Fatalf("batch ends reading with iterator=%v, want %v", got, tc.wantIter)
			}
			counts := map[string]int{}
			for _, c := range h.changelog()[base:] {
				counts[c[:2]]++
			}
			if nOld := 1000 - tc.nNew; counts["+I"] != tc.nNew || counts["-U"] != nOld || counts["+U"] != nOld || len(counts) != 3 {
				t.Fatalf("changelog kinds %v, want %d +I and %d -U/+U", counts, tc.nNew, nOld)
			}
		})
	}
}

// Batches staged while earlier ones await their apply merge against the newest staged value of
// each key, whether the stage searches the queue batch by batch or, once it is longer than
// maxQueueScan, through a merged map.
func TestStagesMergeAgainstALongQueue(t *testing.T) {
	h := newHarness(t, usersTable(nil))
	h.put(nil, up(1, "v0", 0))
	var waits []Pending
	var want []string
	for i := 1; i <= 2*maxQueueScan; i++ {
		recs := []rec{up(1, fmt.Sprint("v", i), i), up(int64(100+i), "n", i)}
		want = append(want, fmt.Sprintf("-U(1,v%d,%d)", i-1, i-1), fmt.Sprintf("+U(1,v%d,%d)", i, i), fmt.Sprintf("+I(%d,n,%d)", 100+i, i))
		if i == maxQueueScan+2 { // delete a key of a queued batch, then write it again
			recs = append(recs, del(101))
			want = append(want, "-D(101,n,1)")
		}
		if i == maxQueueScan+3 {
			recs = append(recs, up(101, "again", 0))
			want = append(want, "+I(101,again,0)")
		}
		_, wait, err := h.tab.PutStaged(h.kvBatch(-1, -1, recs...), WriteOptions{}, 1)
		if err != nil {
			t.Fatal(err)
		}
		waits = append(waits, wait)
	}
	if len(h.tab.queue) <= maxQueueScan {
		t.Fatalf("queue of %d batches; the test needs more than %d", len(h.tab.queue), maxQueueScan)
	}
	for _, w := range waits {
		if err := w.Wait(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	eqStrings(t, "changelog", h.changelog()[1:], want)
	if got := h.get(1); got != fmt.Sprintf("(1,v%d,%d)", 2*maxQueueScan, 2*maxQueueScan) {
		t.Fatalf("key 1 = %q", got)
	}
	if got := h.get(101); got != "(101,again,0)" {
		t.Fatalf("key 101 = %q", got)
	}
}
