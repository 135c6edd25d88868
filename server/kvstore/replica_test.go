package kvstore

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/record"
	"github.com/stromdb/strom/server/logstore"
)

// newReplica opens a tablet over a replicated log (the HW is driven by the test, as a
// replica manager would).
func newReplica(t *testing.T, table Table) *harness {
	t.Helper()
	return newReplicaWith(t, table, nil)
}

// newReplicaWith is newReplica with the store's auto-increment sequences.
func newReplicaWith(t *testing.T, table Table, seqs SequenceSource) *harness {
	t.Helper()
	h := &harness{t: t, dir: t.TempDir(), table: table, seqs: seqs}
	var err error
	h.log, err = logstore.Open(context.Background(), filepath.Join(h.dir, "log"), logstore.Options{Logger: discard(),
		FlushPolicy: logstore.FlushInterval(0), ExternalHighWatermark: true,
		Now: func() time.Time { return time.UnixMilli(100_000) }})
	if err != nil {
		t.Fatal(err)
	}
	h.store, err = Open(filepath.Join(h.dir, "kv"), Options{Logger: discard(), Sequences: seqs})
	if err != nil {
		t.Fatal(err)
	}
	h.tab, err = h.store.OpenTablet(context.Background(), testBucket, h.table, h.log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.close)
	return h
}

// copyLog appends to the follower's log whatever it lacks of the leader's (a fetch).
func copyLog(t *testing.T, leader, follower *logstore.Log) {
	t.Helper()
	for off := follower.LogEndOffset(); off < leader.LogEndOffset(); {
		r, err := leader.Replica().ReadReplica(off, 1<<20, true)
		if err != nil {
			t.Fatal(err)
		}
		buf, err := r.AppendTo(nil)
		r.Release()
		if err != nil {
			t.Fatal(err)
		}
		var bs []record.Batch
		for b, err := range record.Iterate(buf) {
			if err != nil {
				t.Fatal(err)
			}
			bs = append(bs, b)
			off = b.NextOffset()
		}
		if _, err := follower.Replica().AppendAsFollower(bs); err != nil {
			t.Fatal(err)
		}
	}
}

// commit advances the HW of a two-replica ISR: the leader's to the follower's durable end,
// the follower's to the leader's HW.
func commit(t *testing.T, leader, follower *logstore.Log) {
	t.Helper()
	if _, err := leader.Replica().SetHighWatermark(follower.Replica().DurableLogEndOffset()); err != nil {
		t.Fatal(err)
	}
	if _, err := follower.Replica().SetHighWatermark(leader.HighWatermark()); err != nil {
		t.Fatal(err)
	}
}

// stage writes recs on the leader without waiting; the returned Pending waits.
func (h *harness) stage(writer int64, seq int32, recs ...rec) (int64, Pending) {
	h.t.Helper()
	end, durable, err := h.tab.PutStaged(h.kvBatch(writer, seq, recs...), WriteOptions{}, 100_000)
	if err != nil {
		h.t.Fatalf("PutStaged: %v", err)
	}
	return end, durable
}

func leaderAndFollower(t *testing.T, table Table) (*harness, *harness) {
	t.Helper()
	l, f := newReplica(t, table), newReplica(t, table)
	if err := l.log.Replica().AssignEpoch(1, 0); err != nil {
		t.Fatal(err)
	}
	if err := l.tab.BecomeLeader(context.Background()); err != nil {
		t.Fatal(err)
	}
	f.tab.BecomeFollower()
	return l, f
}

func TestReplicatedTabletWritesOnlyAsLeader(t *testing.T) {
	h := newReplica(t, usersTable(nil))
	_, _, err := h.tab.PutStaged(h.kvBatch(1, 0, up(1, "a", 1)), WriteOptions{}, 100_000)
	wantCode(t, err, ferr.NotLeaderOrFollower)
	if err := h.tab.BecomeLeader(context.Background()); err != nil {
		t.Fatal(err)
	}
	_, d := h.stage(1, 0, up(1, "a", 1))
	if _, err := h.log.Replica().SetHighWatermark(h.log.Replica().DurableLogEndOffset()); err != nil {
		t.Fatal(err)
	}
	if err := d.Wait(context.Background()); err != nil || h.get(1) != "(1,a,1)" {
		t.Fatalf("leader write: %v, %q", err, h.get(1))
	}
}

func TestFollowerCatchUpMatchesLeader(t *testing.T) {
	l, f := leaderAndFollower(t, usersTable(nil))
	ctx := context.Background()
	writes := [][]rec{
		{up(1, "alice", 30), up(2, "bob", 40), up(3, "carol", 50)},
		{up(2, "bobby", 41), del(3)},
		{up(4, "dan", nil), del(1)},
		{up(3, "carol", 51)},
	}
	for i, recs := range writes {
		end, durable := l.stage(1, int32(i), recs...)
		copyLog(t, l.log, f.log)
		// Appended but not committed: the follower's state must not show it.
		if err := f.tab.CatchUp(ctx); err != nil {
			t.Fatal(err)
		}
		if f.tab.AppliedOffset() >= end {
			t.Fatalf("follower applied %d past its HW %d", f.tab.AppliedOffset(), f.log.HighWatermark())
		}
		commit(t, l.log, f.log)
		if err := durable.Wait(context.Background()); err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
		if err := f.tab.CatchUp(ctx); err != nil {
			t.Fatal(err)
		}
		if f.tab.AppliedOffset() != end || l.tab.AppliedOffset() != end {
			t.Fatalf("applied leader %d follower %d, want %d", l.tab.AppliedOffset(), f.tab.AppliedOffset(), end)
		}
		for id := int64(1); id <= 4; id++ {
			if lg, fg := l.get(id), f.get(id); lg != fg {
				t.Fatalf("after write %d, id %d: leader %q follower %q", i, id, lg, fg)
			}
		}
	}
	if got := f.get(2); got != "(2,bobby,41)" {
		t.Fatalf("follower id 2 = %q", got)
	}
	// Pebble holds state up to the HW: the changelog below it cannot be truncated.
	wantCode(t, f.tab.TruncateLog(f.tab.AppliedOffset()-1), ferr.LogStorageException)
	_, _, err := f.tab.PutStaged(f.kvBatch(2, 0, up(9, "x", 1)), WriteOptions{}, 100_000)
	wantCode(t, err, ferr.NotLeaderOrFollower)
	if err := l.tab.CatchUp(ctx); err == nil {
		t.Fatal("CatchUp on the leader accepted")
	}
}

// TestPromotionWithUncommittedTail: the follower holds a changelog batch above the HW when
// it is promoted; new writes merge against it, and it is applied once the HW passes it.
func TestPromotionWithUncommittedTail(t *testing.T) {
	l, f := leaderAndFollower(t, usersTable(nil))
	ctx := context.Background()
	_, d1 := l.stage(1, 0, up(1, "alice", 30))
	copyLog(t, l.log, f.log)
	commit(t, l.log, f.log)
	if err := d1.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	// The second write reaches the follower's log, but the HW never passes it.
	_, d2 := l.stage(1, 1, up(1, "bob", 31))
	copyLog(t, l.log, f.log)
	l.tab.BecomeFollower() // the old leader is demoted
	wantCode(t, d2.Wait(context.Background()), ferr.NotLeaderOrFollower)

	if err := f.log.Replica().AssignEpoch(2, f.log.LogEndOffset()); err != nil {
		t.Fatal(err)
	}
	if err := f.tab.BecomeLeader(ctx); err != nil {
		t.Fatal(err)
	}
	if got := f.get(1); got != "(1,alice,30)" {
		t.Fatalf("before the HW passes the tail, lookup = %q", got)
	}
	// A partial update of age merges against the uncommitted name "bob".
	kv := f.kvBatch(2, 0, up(1, nil, 99))
	end, durable, err := f.tab.PutStaged(kv, WriteOptions{TargetColumns: []int32{0, 2}}, 100_000)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- durable.Wait(context.Background()) }()
	select {
	case err := <-done:
		t.Fatalf("write acknowledged before it was committed: %v", err)
	case <-time.After(20 * time.Millisecond):
	}
	// Single-replica ISR now: the HW follows the new leader's durable end.
	if _, err := f.log.Replica().SetHighWatermark(f.log.Replica().DurableLogEndOffset()); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := f.get(1); got != "(1,bob,99)" {
		t.Fatalf("after commit, lookup = %q, want (1,bob,99)", got)
	}
	if f.tab.AppliedOffset() != end {
		t.Fatalf("applied %d, want %d", f.tab.AppliedOffset(), end)
	}
	eqStrings(t, "changelog", f.changelog(), []string{"+I(1,alice,30)", "-U(1,alice,30)", "+U(1,bob,31)", "-U(1,bob,31)", "+U(1,bob,99)"})
}

func TestBecomeFollowerFailsStagedWaiters(t *testing.T) {
	l, _ := leaderAndFollower(t, usersTable(nil))
	_, d := l.stage(1, 0, up(1, "alice", 30))
	_, d2 := l.stage(1, 1, up(2, "bob", 30))
	done := make(chan error, 2)
	go func() { done <- d.Wait(context.Background()) }()
	go func() { done <- d2.Wait(context.Background()) }()
	time.Sleep(10 * time.Millisecond)
	l.tab.BecomeFollower()
	for i := 0; i < 2; i++ {
		select {
		case err := <-done:
			wantCode(t, err, ferr.NotLeaderOrFollower)
		case <-time.After(5 * time.Second):
			t.Fatal("waiter not released by BecomeFollower")
		}
	}
	if l.get(1) != "" || l.tab.AppliedOffset() != 0 {
		t.Fatalf("uncommitted write reached Pebble: %q applied %d", l.get(1), l.tab.AppliedOffset())
	}
	// The uncommitted tail can be truncated away; the applied offset (0) is the floor.
	if err := l.tab.TruncateLog(0); err != nil {
		t.Fatal(err)
	}
	if l.log.LogEndOffset() != 0 {
		t.Fatalf("LEO %d after truncation", l.log.LogEndOffset())
	}
}

func TestPromotedFollowerDeduplicatesRetry(t *testing.T) {
	l, f := leaderAndFollower(t, usersTable(nil))
	ctx := context.Background()
	_, d := l.stage(7, 0, up(1, "alice", 30))
	copyLog(t, l.log, f.log)
	commit(t, l.log, f.log) // committed, but the leader dies before answering
	l.tab.BecomeFollower()
	if err := d.Wait(context.Background()); err != nil && ferr.CodeOf(err) != ferr.NotLeaderOrFollower {
		t.Fatal(err)
	}
	if err := f.tab.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	if err := f.log.Replica().AssignEpoch(2, f.log.LogEndOffset()); err != nil {
		t.Fatal(err)
	}
	if err := f.tab.BecomeLeader(ctx); err != nil {
		t.Fatal(err)
	}
	leo := f.log.LogEndOffset()
	end, durable, err := f.tab.PutStaged(f.kvBatch(7, 0, up(1, "alice", 30)), WriteOptions{}, 100_000)
	if err != nil {
		t.Fatal(err)
	}
	if err := durable.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if end != leo || f.log.LogEndOffset() != leo {
		t.Fatalf("retry appended: end %d, LEO %d -> %d", end, leo, f.log.LogEndOffset())
	}
	eqStrings(t, "changelog", f.changelog(), []string{"+I(1,alice,30)"})
	// The next sequence is accepted.
	_, d2, err := f.tab.PutStaged(f.kvBatch(7, 1, up(2, "bob", 1)), WriteOptions{}, 100_000)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.log.Replica().SetHighWatermark(f.log.Replica().DurableLogEndOffset()); err != nil {
		t.Fatal(err)
	}
	if err := d2.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if f.get(2) != "(2,bob,1)" {
		t.Fatalf("id 2 = %q", f.get(2))
	}
}

// TestReplicatedReopenAppliesOnlyCommitted: recovery of a replicated tablet replays up to the
// restored HW, not the log end.
func TestReplicatedReopenAppliesOnlyCommitted(t *testing.T) {
	l, f := leaderAndFollower(t, usersTable(nil))
	_, d := l.stage(1, 0, up(1, "alice", 30))
	copyLog(t, l.log, f.log)
	commit(t, l.log, f.log)
	if err := d.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	l.stage(1, 1, up(1, "bob", 31))
	copyLog(t, l.log, f.log) // above the HW
	f.close()
	// Reopen the follower from scratch (Pebble state included).
	f2 := &harness{t: t, dir: f.dir, table: f.table}
	var err error
	f2.log, err = logstore.Open(context.Background(), filepath.Join(f.dir, "log"), logstore.Options{Logger: discard(),
		FlushPolicy: logstore.FlushInterval(0), ExternalHighWatermark: true})
	if err != nil {
		t.Fatal(err)
	}
	f2.store, err = Open(filepath.Join(f.dir, "kv"), Options{Logger: discard()})
	if err != nil {
		t.Fatal(err)
	}
	f2.tab, err = f2.store.OpenTablet(context.Background(), testBucket, f2.table, f2.log)
	if err != nil {
		t.Fatal(err)
	}
	defer f2.close()
	if f2.log.HighWatermark() >= f2.log.LogEndOffset() {
		t.Fatalf("HW %d, LEO %d: the tail should stay uncommitted", f2.log.HighWatermark(), f2.log.LogEndOffset())
	}
	if got := f2.get(1); got != "(1,alice,30)" {
		t.Fatalf("reopened follower id 1 = %q, want the committed (1,alice,30)", got)
	}
}

func wantCode(t testing.TB, err error, c ferr.Code) {
	t.Helper()
	if got := ferr.CodeOf(err); got != c || err == nil {
		t.Fatalf("error %v: code %v, want %v", err, got, c)
	}
}

var _ = errors.Is
