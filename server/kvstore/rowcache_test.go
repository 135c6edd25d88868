package kvstore

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stromdb/strom/server/logstore"
)

// The read before a write of an existing key is answered from the row cache, and what it
// answers is the stored row: a deleted key is new again, and a value too large for a cache
// entry replaces the older cached one.
func TestRowCacheFollowsDeletesAndLargeValues(t *testing.T) {
	h := newHarness(t, usersTable(nil))
	h.put(nil, up(1, "a", 1))
	h.put(nil, del(1))
	h.put(nil, up(1, "b", 2)) // a new key again: +I, not -U of "a"
	big := strings.Repeat("x", rowCacheMaxEntry)
	h.put(nil, up(1, big, 3)) // too large for an entry: "b" must not stay cached
	h.put(nil, up(1, "c", 4))
	eqStrings(t, "changelog", h.changelog(), []string{
		"+I(1,a,1)", "-D(1,a,1)", "+I(1,b,2)",
		"-U(1,b,2)", "+U(1," + big + ",3)",
		"-U(1," + big + ",3)", "+U(1,c,4)",
	})
}

// A replay writes keys behind the row cache (a follower's CatchUp): a tablet that cached a
// row as leader, was demoted, replayed a newer value of the row and is leader again merges
// against the replayed row, not the cached one.
func TestRowCacheForgetsRowsAfterReplay(t *testing.T) {
	l, f := leaderAndFollower(t, usersTable(nil))
	ctx := context.Background()
	_, d := l.stage(1, 0, up(1, "alice", 30)) // l caches (1,alice,30) when it applies
	copyLog(t, l.log, f.log)
	commit(t, l.log, f.log)
	if err := d.Wait(context.Background()); err != nil {
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
	copyLog(t, f.log, l.log)
	commit(t, f.log, l.log)
	if err := d.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := l.tab.CatchUp(ctx); err != nil { // l's Pebble now holds (1,bob,31)
		t.Fatal(err)
	}
	if got := l.get(1); got != "(1,bob,31)" { // lookups read the cache too
		t.Fatalf("lookup after the replay: %q, want the replayed row", got)
	}
	f.tab.BecomeFollower()
	if err := l.log.Replica().AssignEpoch(3, l.log.LogEndOffset()); err != nil {
		t.Fatal(err)
	}
	if err := l.tab.BecomeLeader(ctx); err != nil {
		t.Fatal(err)
	}
	_, d = l.stage(3, 0, up(1, "carol", 32))
	if _, err := l.log.Replica().SetHighWatermark(l.log.Replica().DurableLogEndOffset()); err != nil {
		t.Fatal(err)
	}
	if err := d.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	eqStrings(t, "changelog", l.changelog(), []string{
		"+I(1,alice,30)", "-U(1,alice,30)", "+U(1,bob,31)", "-U(1,bob,31)", "+U(1,carol,32)",
	})
}

// The rows a closed tablet left in the row cache are removed and their pages given back, while
// an open tablet's rows stay cached; a close schedules that sweep by itself.
func TestRowCacheReleasesRowsOfClosedTablets(t *testing.T) {
	h := newHarness(t, usersTable(nil))
	ctx := context.Background()
	otherLog, err := logstore.Open(ctx, filepath.Join(t.TempDir(), "log2"), logstore.Options{Logger: discard(),
		FlushPolicy: logstore.FlushInterval(0), Now: func() time.Time { return time.UnixMilli(100_000) }})
	if err != nil {
		t.Fatal(err)
	}
	defer otherLog.Close()
	ob := testBucket
	ob.Bucket++
	other, err := h.store.OpenTablet(ctx, ob, h.table, otherLog)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		recs := make([]rec, 100)
		for j := range recs {
			recs[j] = up(int64(i*100+j), strings.Repeat("n", 200), j)
		}
		h.put(nil, recs...)
	}
	kept := h.store.rows.c.Stats()
	if kept.Entries < 2000 {
		t.Fatalf("row cache holds %d entries after 2000 upserts", kept.Entries)
	}
	if got := h.store.sweepRows(); got != 0 || h.store.rows.c.Stats().Entries != kept.Entries {
		t.Fatalf("a sweep with the tablet open released %d bytes, entries %d → %d", got, kept.Entries, h.store.rows.c.Stats().Entries)
	}
	if got := h.get(7); got != "(7,"+strings.Repeat("n", 200)+",7)" {
		t.Fatalf("lookup after the sweep: %q", got)
	}

	// other stays open (with no rows of its own); the harness's tablet closes.
	h.tab.Close()
	deadline := time.Now().Add(30 * time.Second)
	for h.store.rows.c.Stats().ArenaBytes != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("row cache after the close: %+v, want its rows released", h.store.rows.c.Stats())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if st := h.store.rows.c.Stats(); st.Entries != 0 {
		t.Fatalf("entries after the sweep: %d", st.Entries)
	}
	other.Close()
}
