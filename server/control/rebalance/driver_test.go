package rebalance

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stromdb/strom/server/cluster"
	"github.com/stromdb/strom/server/control/assign"
	"github.com/stromdb/strom/server/control/bucketstate"
	"github.com/stromdb/strom/server/control/internal/statetext"
)

// swapFence is an in-memory fenced swap that also plays the watch: a successful swap is
// what the cache holds next (assign.Writer records it).
type swapFence struct {
	mu   sync.Mutex
	rev  int64
	revs map[string]int64
}

func (f *swapFence) Epoch() int64 { return 3 }

func (f *swapFence) FencedSwap(ctx context.Context, key string, expectRev int64, val []byte) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.revs[key] != expectRev {
		return 0, nil
	}
	f.rev++
	f.revs[key] = f.rev
	return f.rev, nil
}

type countingNotifier struct{ n int }

func (c *countingNotifier) Notify(ctx context.Context, states map[cluster.Bucket]cluster.BucketState, t *cluster.TableInfo, p *cluster.PartitionInfo) {
	c.n++
}

// driver returns a rebalancer on the active coordinator over states, with an empty record.
func driver(t *testing.T, lines string, live []int32, timeout time.Duration) (*Rebalancer, *swapFence, *countingNotifier) {
	t.Helper()
	states, err := statetext.ParseStates(lines)
	if err != nil {
		t.Fatal(err)
	}
	fence := &swapFence{revs: map[string]int64{}}
	cache := bucketstate.NewCache()
	for b, st := range states {
		fence.rev++
		fence.revs[bucketstate.Key(b)] = fence.rev
		cache.Put(b, st, fence.rev)
	}
	n := &countingNotifier{}
	coord := &fakeCoordinator{active: true, puts: map[string][]byte{}}
	ids := statetext.Live(live)
	r := &Rebalancer{Coordinator: coord, States: cache, Live: ids, LiveIDs: func() []int32 { return live },
		Writer: &assign.Writer{Fence: fence, States: cache}, Notify: n, Log: discard(), MoveTimeout: timeout}
	return r, fence, n
}

// joinISR plays a leader adding id to b's ISR once it caught up (a leader's own swap).
func joinISR(t *testing.T, r *Rebalancer, f *swapFence, b cluster.Bucket, id int32) {
	t.Helper()
	e, _ := r.States.Get(b)
	st := e.State
	st.ISR = append(st.ISR, id)
	st.BucketEpoch++
	f.mu.Lock()
	f.rev++
	f.revs[bucketstate.Key(b)] = f.rev
	rev := f.rev
	f.mu.Unlock()
	r.States.Put(b, st, rev)
}

func moveStatus(r *Rebalancer, b cluster.Bucket) Status {
	for _, m := range r.current().Moves {
		if m.Bucket == b {
			return m.Status
		}
	}
	return -1
}

// TestDriverCarriesAMoveThrough steps a one-bucket rebalance by hand: planned, started
// (the new replica added), held while it catches up, switched (a bucket led by the server
// that leaves in two steps: the leadership, then the replicas), completed; the record is
// saved at each status change.
func TestDriverCarriesAMoveThrough(t *testing.T) {
	ctx := context.Background()
	r, fence, n := driver(t, "1/-/0 r=1,2 l=1 isr=1,2\n1/-/1 r=2,1 l=2 isr=2,1\n", []int32{1, 2, 3}, time.Hour)
	if err := r.AddServerTag(ctx, []int32{2}, TagPermanentOffline); err != nil {
		t.Fatal(err)
	}
	id, err := r.StartRebalance(ctx, []Goal{GoalReplicaDistribution})
	if err != nil {
		t.Fatal(err)
	}
	b0 := cluster.Bucket{TableID: 1, PartitionID: cluster.NoPartition, Bucket: 0}
	b1 := cluster.Bucket{TableID: 1, PartitionID: cluster.NoPartition, Bucket: 1}
	if err := r.step(ctx); err != nil {
		t.Fatal(err)
	}
	if got := statetext.FormatState(b0, mustState(r, b0)); got != "1/-/0 r=1,2,3 l=1 isr=1,2 be=1 ce=3" {
		t.Fatalf("after the first step: %s", got)
	}
	if r.current().Status != StatusRebalancing || moveStatus(r, b0) != StatusRebalancing || moveStatus(r, b1) != StatusRebalancing {
		t.Fatalf("record after the first step: %+v", r.current())
	}
	writes := n.n
	if err := r.step(ctx); err != nil || n.n != writes {
		t.Fatalf("a step while the new replicas catch up wrote something: %v", err)
	}
	joinISR(t, r, fence, b0, 3)
	joinISR(t, r, fence, b1, 3)
	if err := r.step(ctx); err != nil {
		t.Fatal(err)
	}
	if got := statetext.FormatState(b0, mustState(r, b0)); got != "1/-/0 r=1,3 l=1 isr=1,3 be=3 ce=3" {
		t.Fatalf("bucket 0 after the switch: %s", got)
	}
	// Bucket 1's leader was the tagged server: its leadership moves first, the old leader kept
	// as a replica and in the ISR (the hand-over fence of a move), and it leaves next.
	if got := statetext.FormatState(b1, mustState(r, b1)); got != "1/-/1 r=2,1,3 l=1 isr=2,1,3 le=1 be=3 ce=3" {
		t.Fatalf("bucket 1 after the leader switch: %s", got)
	}
	if err := r.step(ctx); err != nil {
		t.Fatal(err)
	}
	if got := statetext.FormatState(b1, mustState(r, b1)); got != "1/-/1 r=1,3 l=1 isr=1,3 le=1 be=4 ce=3" {
		t.Fatalf("bucket 1 after the switch: %s", got)
	}
	if err := r.step(ctx); err != nil {
		t.Fatal(err)
	}
	rec, err := r.Progress(id)
	if err != nil || rec.Status != StatusCompleted || moveStatus(r, b0) != StatusCompleted || moveStatus(r, b1) != StatusCompleted {
		t.Fatalf("the rebalance after its moves: %+v %v", rec, err)
	}
}

// TestDriverTimesOutAndRollsBack: a move whose new replica does not catch up within the move
// timeout is rolled back (the clock is the test's).
func TestDriverTimesOutAndRollsBack(t *testing.T) {
	ctx := context.Background()
	r, _, _ := driver(t, "1/-/0 r=1,2 l=1 isr=1,2\n", []int32{1, 2, 3}, time.Minute)
	now := time.Unix(1000, 0)
	r.clock = func() time.Time { return now }
	if err := r.AddServerTag(ctx, []int32{2}, TagPermanentOffline); err != nil {
		t.Fatal(err)
	}
	if _, err := r.StartRebalance(ctx, []Goal{GoalReplicaDistribution}); err != nil {
		t.Fatal(err)
	}
	b0 := cluster.Bucket{TableID: 1, PartitionID: cluster.NoPartition, Bucket: 0}
	if err := r.step(ctx); err != nil {
		t.Fatal(err)
	}
	if got := statetext.FormatState(b0, mustState(r, b0)); got != "1/-/0 r=1,2,3 l=1 isr=1,2 be=1 ce=3" {
		t.Fatalf("after the first step: %s", got)
	}
	now = now.Add(time.Minute) // not beyond the timeout yet
	if err := r.step(ctx); err != nil || moveStatus(r, b0) != StatusRebalancing {
		t.Fatalf("a move within its timeout: %s %v", moveStatus(r, b0), err)
	}
	now = now.Add(time.Second)
	for range 2 {
		if err := r.step(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if got := statetext.FormatState(b0, mustState(r, b0)); got != "1/-/0 r=1,2 l=1 isr=1,2 be=2 ce=3" {
		t.Fatalf("after the roll-back: %s", got)
	}
	if rec := r.current(); rec.Status != StatusFailed || rec.Moves[0].Status != StatusTimeout {
		t.Fatalf("record %+v, want FAILED with the move TIMEOUT", rec)
	}
}

// TestDriverCancelStopsNewMoves: after a cancel no move starts, the running one finishes, and
// the rebalance ends CANCELED.
func TestDriverCancelStopsNewMoves(t *testing.T) {
	ctx := context.Background()
	var lines string
	for i := range 6 {
		lines += statetext.FormatState(cluster.Bucket{TableID: 1, PartitionID: cluster.NoPartition, Bucket: int32(i)},
			cluster.BucketState{Replicas: []int32{1, 2}, Leader: 1, ISR: []int32{1, 2}}) + "\n"
	}
	r, fence, _ := driver(t, lines, []int32{1, 2, 3}, time.Hour)
	if err := r.AddServerTag(ctx, []int32{2}, TagPermanentOffline); err != nil {
		t.Fatal(err)
	}
	id, err := r.StartRebalance(ctx, []Goal{GoalReplicaDistribution})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.step(ctx); err != nil {
		t.Fatal(err)
	}
	running := 0
	for _, m := range r.current().Moves {
		if m.Status == StatusRebalancing {
			running++
		}
	}
	if running != maxConcurrentMoves {
		t.Fatalf("%d moves started, want %d", running, maxConcurrentMoves)
	}
	if err := r.CancelRebalance(ctx, id); err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		joinISR(t, r, fence, cluster.Bucket{TableID: 1, PartitionID: cluster.NoPartition, Bucket: int32(i)}, 3)
	}
	for range 2 {
		if err := r.step(ctx); err != nil {
			t.Fatal(err)
		}
	}
	rec := r.current()
	if rec.Status != StatusCanceled || rec.Moves[0].Status != StatusCompleted || rec.Moves[5].Status != StatusCanceled {
		t.Fatalf("record after cancel: %+v", rec)
	}
}

func mustState(r *Rebalancer, b cluster.Bucket) cluster.BucketState {
	st, _ := r.States.State(b)
	return st
}
