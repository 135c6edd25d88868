package shutdown

import (
	"context"
	"testing"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/server/cluster"
)

// TestRequestResign runs both sides of RESIGN_LEADERSHIP over the wire: only the named bucket
// moves (to the other ISR member, leader epoch +1, the resigning server out of the ISR), a
// bucket with no other ISR member stays, a stale leader epoch is fenced, and a second request
// for a bucket that already moved reports it moved.
func TestRequestResign(t *testing.T) {
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	coord, _, n := newShutdown(t, twoBuckets, []int32{1, 2, 3}, coordinator{active: true})
	leader, _, _ := newShutdown(t, twoBuckets, []int32{1, 2, 3}, coordinator{addr: serve(t, ctx, coord, "FLUSS")})
	b := func(i int32) cluster.Bucket {
		return cluster.Bucket{TableID: 1, PartitionID: cluster.NoPartition, Bucket: i}
	}
	before, _ := coord.States.State(b(0))

	if _, err := leader.RequestResign(ctx, 1, b(0), before.LeaderEpoch+1); ferr.CodeOf(err) != ferr.FencedLeaderEpochException {
		t.Fatalf("resign at a leader epoch it does not hold: %v", err)
	}
	moved, err := leader.RequestResign(ctx, 1, b(0), before.LeaderEpoch)
	if err != nil || !moved {
		t.Fatalf("resign bucket 0: moved %v, err %v", moved, err)
	}
	st, _ := coord.States.State(b(0))
	if st.Leader != 2 || st.InISR(1) || st.LeaderEpoch != before.LeaderEpoch+1 || st.CoordinatorEpoch != 4 {
		t.Fatalf("bucket 0 after the resignation: %+v", st)
	}
	if len(n.states) != 1 {
		t.Fatalf("notified %v, want bucket 0 alone", n.states)
	}
	if st1, _ := coord.States.State(b(1)); st1.Leader != 1 {
		t.Fatalf("bucket 1 moved too: %+v", st1)
	}
	if moved, err := leader.RequestResign(ctx, 1, b(0), before.LeaderEpoch); err != nil || !moved {
		t.Fatalf("resign again after the move: moved %v, err %v", moved, err)
	}
	if moved, err := leader.RequestResign(ctx, 1, b(1), 0); err != nil || moved {
		t.Fatalf("resign bucket 1, which has no other ISR member: moved %v, err %v", moved, err)
	}
	if st1, _ := coord.States.State(b(1)); st1.Leader != 1 {
		t.Fatalf("bucket 1 lost its only leader: %+v", st1)
	}
}
