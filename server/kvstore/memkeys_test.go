package kvstore

import (
	"context"
	"fmt"
	"testing"
)

// putIter writes recs in one batch read through the L6-filtered iterator (as batches of
// mostly new keys are) and returns whether the batch skipped the memtables for keys that no
// filter holds.
func putIter(h *harness, recs ...rec) (skippedMem bool) {
	h.t.Helper()
	h.tab.missRate.v = 1
	h.put(nil, recs...)
	return h.tab.batch.skipMem
}

// With the memtable filters in use, the read before a write still sees every key that lives
// only in a memtable — written, deleted over an sstable value, updated — and the sstables for
// the rest.
func TestMemtableSkipSeesMemtableWrites(t *testing.T) {
	h := newHarness(t, usersTable(nil))
	h.put(nil, up(1, "a", 1), up(2, "b", 2), up(3, "c", 3))
	if err := h.store.Checkpoint(); err != nil { // past the tablet's open: the filters apply
		t.Fatal(err)
	}
	h.put(nil, up(10, "m", 10), del(2), up(3, "c2", 30)) // memtable only
	base := len(h.changelog())
	if !putIter(h, up(10, "m2", 11), up(2, "b2", 20), up(3, "c3", 31), up(1, "a2", 10), up(99, "n", 99)) {
		t.Fatal("the batch did not use the memtable filters; the test checks nothing")
	}
	eqStrings(t, "changelog", h.changelog()[base:], []string{
		"-U(10,m,10)", "+U(10,m2,11)", // in a memtable only
		"+I(2,b2,20)",                // deleted in a memtable over the sstable's value
		"-U(3,c2,30)", "+U(3,c3,31)", // updated in a memtable
		"-U(1,a,1)", "+U(1,a2,10)", // in the sstable only
		"+I(99,n,99)",
	})
}

// A tablet opened on a store whose memtables already hold its keys (written by an earlier
// Tablet of the bucket, as after a move away and back, or by a replay) reads the memtables
// until a flush covers them.
func TestMemtableSkipWaitsForAFlushAfterOpen(t *testing.T) {
	h := newHarness(t, usersTable(nil))
	if err := h.store.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	h.put(nil, up(1, "a", 1), up(2, "b", 2)) // in a memtable, in the first tablet's filters
	h.tab.Close()
	var err error
	if h.tab, err = h.store.OpenTablet(context.Background(), testBucket, h.table, h.log); err != nil {
		t.Fatal(err)
	}
	base := len(h.changelog())
	if putIter(h, up(1, "a2", 10), up(5, "e", 5)) {
		t.Fatal("a fresh tablet skipped memtables that hold keys it never saw")
	}
	if err := h.store.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	if !putIter(h, up(2, "b2", 20), up(6, "f", 6)) {
		t.Fatal("the filters stay unused after a flush")
	}
	eqStrings(t, "changelog", h.changelog()[base:], []string{
		"-U(1,a,1)", "+U(1,a2,10)", "+I(5,e,5)",
		"-U(2,b,2)", "+U(2,b2,20)", "+I(6,f,6)",
	})
}

// The filters hold every key added (no false negatives) across generations, and a flush past
// a generation's last batch drops it.
func TestMemKeysFilters(t *testing.T) {
	var m memKeys
	m.untracked(10)
	if m.usable(9) {
		t.Fatal("usable before a flush through the fence")
	}
	const n = 20000
	for i := range n {
		m.add(keyHash(fmt.Sprint("k", i)), uint64(100+i), 0)
	}
	if len(m.gens) < 2 {
		t.Fatalf("%d filters for %d keys; want them to grow in generations", len(m.gens), n)
	}
	if !m.usable(10) {
		t.Fatal("not usable after the fence was flushed")
	}
	fp := 0
	for i := range n {
		if !m.mayBeInMemtable(keyHash(fmt.Sprint("k", i))) {
			t.Fatalf("key %d added but not found", i)
		}
		if m.mayBeInMemtable(keyHash(fmt.Sprint("x", i))) {
			fp++
		}
	}
	// Each full generation answers ~1.2% of absent keys wrongly (4 probes, 10 bits a key),
	// and an absent key is checked against every generation: 20k keys fill five of them, so
	// about 5% is expected (it varies with the process's hash seed); 10% means a broken filter.
	if fp > n/10 {
		t.Fatalf("%d false positives in %d", fp, n)
	}
	m.add(keyHash("late"), 1_000_000, 1) // a new flush count starts a new filter
	m.usable(100 + n)                    // a flush covered every key but "late"
	if len(m.gens) != 1 || !m.mayBeInMemtable(keyHash("late")) {
		t.Fatalf("after the flush: %d filters, late found %v", len(m.gens), m.mayBeInMemtable(keyHash("late")))
	}
	m.usable(1_000_000)
	if len(m.gens) != 0 || m.mayBeInMemtable(keyHash("late")) {
		t.Fatal("a flush past every batch left filters")
	}
}
