package kvstore

import (
	"context"
	"hash/maphash"
	"testing"

	"github.com/cockroachdb/pebble"

	"github.com/stromdb/strom/internal/row"
	"github.com/stromdb/strom/server/logstore"
)

// waitLiveKeys waits for the tablet's live-key filter and fails unless it is ready.
func (h *harness) waitLiveKeys() {
	h.t.Helper()
	<-h.tab.live.built
	h.tab.mu.Lock()
	defer h.tab.mu.Unlock()
	if !h.tab.live.ready {
		h.t.Fatal("live-key filter not ready after its build")
	}
}

// rawSet stores a row for id in Pebble behind the tablet's back (no filter, no cache).
func (h *harness) rawSet(id int64, name string, age int) {
	h.t.Helper()
	c := h.tab.tbl
	k, err := clientKey(h.table, c.keyTypes, []row.Datum{{I: id}})
	if err != nil {
		h.t.Fatal(err)
	}
	rb, err := row.AppendCompactedRow(nil, c.types, up(id, name, age).row)
	if err != nil {
		h.t.Fatal(err)
	}
	if err := h.store.db.Set(h.tab.dataKey(nil, k), row.AppendValue(nil, h.table.SchemaID, rb), pebble.NoSync); err != nil {
		h.t.Fatal(err)
	}
}

// The read before the write of a key the filter does not hold is answered without Pebble: a
// row put into Pebble behind the tablet's back is not seen (the write is an insert).
func TestLiveKeysAnswerNewKeysWithoutPebble(t *testing.T) {
	h := newHarnessRowCache(t, usersTable(nil), logstore.FlushInterval(0), -1)
	h.waitLiveKeys()
	h.rawSet(7, "hidden", 1)
	h.put(nil, up(7, "x", 2))
	eqStrings(t, "changelog", h.changelog(), []string{"+I(7,x,2)"})
}

// A filter built from Pebble at open holds every stored key: after a restart, updates and
// deletes of existing keys still emit -U/+U and -D, and new keys +I, in small batches and in
// a batch of mostly existing keys, with the row cache on and off.
func TestLiveKeysBuiltAtOpenKeepChangelogExact(t *testing.T) {
	for _, rowCache := range []int64{-1, 0} {
		h := newHarnessRowCache(t, usersTable(nil), logstore.FlushInterval(0), rowCache)
		var recs []rec
		for i := range 3000 {
			recs = append(recs, up(int64(i), "a", i))
		}
		h.put(nil, recs...)
		h.put(nil, del(5))
		h.reopen()
		h.waitLiveKeys()
		base := len(h.changelog())
		h.put(nil, up(1, "b", 10), del(2), up(5, "c", 11), up(5000, "d", 12), del(6000))
		upd := []rec{up(7, "e", 13)}
		for i := range 600 { // mostly existing keys
			upd = append(upd, up(int64(100+i), "f", i))
		}
		upd = append(upd, up(7000, "g", 14), del(8000))
		h.put(nil, upd...)
		got := h.changelog()[base:]
		eqStrings(t, "changelog", got[:5], []string{
			"-U(1,a,1)", "+U(1,b,10)", "-D(2,a,2)", "+I(5,c,11)", "+I(5000,d,12)",
		})
		eqStrings(t, "changelog", got[5:7], []string{"-U(7,a,7)", "+U(7,e,13)"})
		eqStrings(t, "changelog", got[len(got)-1:], []string{"+I(7000,g,14)"})
		if len(got) != 5+2+2*600+1 {
			t.Fatalf("row cache %d: %d change records, want %d", rowCache, len(got), 5+2+2*600+1)
		}
	}
}

// A false positive only costs a read: with every bit of the filter set, new keys are still
// inserts and existing keys updates.
func TestLiveKeysFalsePositiveCostsARead(t *testing.T) {
	h := newHarnessRowCache(t, usersTable(nil), logstore.FlushInterval(0), -1)
	h.put(nil, up(1, "a", 1))
	h.waitLiveKeys()
	h.tab.mu.Lock()
	for _, f := range h.tab.live.filters {
		for i := range f.bits {
			f.bits[i] = ^uint64(0)
		}
	}
	h.tab.mu.Unlock()
	h.put(nil, up(1, "b", 2), up(2, "c", 3), del(3))
	eqStrings(t, "changelog", h.changelog(), []string{"+I(1,a,1)", "-U(1,a,1)", "+U(1,b,2)", "+I(2,c,3)"})
}

// A follower's replay adds the keys it writes: after it becomes leader, an update of a key it
// only ever replayed is an update, not an insert.
func TestLiveKeysFollowReplay(t *testing.T) {
	l, f := leaderAndFollower(t, usersTable(nil))
	ctx := context.Background()
	f.waitLiveKeys() // built on an empty bucket: the replay below must add key 1
	_, d := l.stage(1, 0, up(1, "alice", 30))
	copyLog(t, l.log, f.log)
	commit(t, l.log, f.log)
	if err := d.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if err := f.tab.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	l.tab.BecomeFollower()
	if err := f.log.Replica().AssignEpoch(2, f.log.LogEndOffset()); err != nil {
		t.Fatal(err)
	}
	if err := f.tab.BecomeLeader(ctx); err != nil {
		t.Fatal(err)
	}
	_, d = f.stage(2, 0, up(1, "bob", 31))
	if _, err := f.log.Replica().SetHighWatermark(f.log.Replica().DurableLogEndOffset()); err != nil {
		t.Fatal(err)
	}
	if err := d.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	eqStrings(t, "changelog", f.changelog(), []string{"+I(1,alice,30)", "-U(1,alice,30)", "+U(1,bob,31)"})
}

// Keys added while the scan runs are kept and join the scanned ones; the filter grows past
// its first size without losing keys, and not with updates of keys it holds.
func TestLiveKeysBuildKeepsConcurrentKeysAndGrows(t *testing.T) {
	var l liveKeys
	hash := func(i int) uint64 { return maphash.Comparable(keyHashSeed, i) }
	l.add(hash(-1)) // before the build: Pebble holds it, the scan finds it
	l.building = true
	l.add(hash(-2))
	l.finish([]uint64{hash(-1), hash(-3)})
	for i := range 100_000 {
		l.add(hash(i))
	}
	if len(l.filters) < 2 {
		t.Fatalf("%d filters after 100k keys, want the first one to have overflowed", len(l.filters))
	}
	n := len(l.filters)
	for range 3 { // updates of the same keys do not fill the filters
		for i := range 100_000 {
			l.add(hash(i))
		}
	}
	if len(l.filters) != n {
		t.Fatalf("%d filters after updating 100k keys three times, want %d", len(l.filters), n)
	}
	for i := -3; i < 100_000; i++ {
		if l.absent(hash(i)) {
			t.Fatalf("key %d lost", i)
		}
	}
	fp := 0
	for i := 1_000_000; i < 1_100_000; i++ {
		if !l.absent(hash(i)) {
			fp++
		}
	}
	if fp > 2000 { // 2%
		t.Fatalf("%d false positives in 100k absent keys", fp)
	}
}
