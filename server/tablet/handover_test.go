package tablet_test

import (
	"context"
	"testing"
	"time"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/server/cluster"
)

// TestHandOverFenceClosesTheStaleReadWindowOfAMove is the regression test of the
// linearizability failure of the long rolling restart (docs/cluster.md, "Controlled
// shutdown"): the coordinator moves a leadership by storing the new state and then notifying
// the replicas, so the new leader can acknowledge an upsert before the old one has handled
// its demotion. A lookup the old leader answered in that window returned the value before
// the acknowledged upsert. A stopping server closes its hand-over fence before it asks for
// the move, so it answers NOT_LEADER_OR_FOLLOWER instead and the client finds the new leader.
func TestHandOverFenceClosesTheStaleReadWindowOfAMove(t *testing.T) {
	c := newRCluster(t, 2, 1, 10*time.Second)
	c.table(2, true)
	c.elect(2, []int32{1, 2}, 1, []int32{1, 2})
	if r := upsert(t, c.nodes[1].client, 2, -1, -1, -1, map[int64]string{1: "a"}); r.GetErrorCode() != 0 {
		t.Fatalf("upsert on the first leader: %d %s", r.GetErrorCode(), r.GetErrorMessage())
	}
	c.waitInSync(2, 1, 2)
	if names, code := lookupNames(t, c.nodes[1].client, 2, 1); code != 0 || len(names) != 1 || names[0] != "a" {
		t.Fatalf("lookup before the hand-over: %v %d", names, code)
	}

	c.nodes[1].srv.HandOverLeaderships()
	// The coordinator's move (controlled shutdown: server 1 leaves the ISR), of which only the
	// new leader has heard so far.
	b := bucket0(2)
	c.ctl.mu.Lock()
	prev := c.ctl.states[b]
	moved := cluster.BucketState{Replicas: prev.Replicas, Leader: 2, ISR: []int32{2}, LeaderEpoch: prev.LeaderEpoch + 1, BucketEpoch: prev.BucketEpoch + 1}
	c.ctl.states[b] = moved
	c.ctl.mu.Unlock()
	tbl, _ := c.cat.TableByID(2)
	if err := c.nodes[2].srv.ApplyBucketStates(context.Background(), []cluster.BucketUpdate{{Table: tbl, Bucket: b, State: moved}}); err != nil {
		t.Fatal(err)
	}
	if r := upsert(t, c.nodes[2].client, 2, -1, -1, -1, map[int64]string{1: "b"}); r.GetErrorCode() != 0 {
		t.Fatalf("upsert on the new leader: %d %s", r.GetErrorCode(), r.GetErrorMessage())
	}

	if names, code := lookupNames(t, c.nodes[1].client, 2, 1); code != ferr.NotLeaderOrFollower {
		t.Fatalf("lookup on the old leader after the new one acknowledged b: %v, code %d; want NOT_LEADER_OR_FOLLOWER", names, code)
	}
	if r := upsert(t, c.nodes[1].client, 2, -1, -1, -1, map[int64]string{1: "c"}); ferr.Code(r.GetErrorCode()) != ferr.NotLeaderOrFollower {
		t.Fatalf("upsert on the old leader during the hand-over: code %d, want NOT_LEADER_OR_FOLLOWER", r.GetErrorCode())
	}
	if names, code := lookupNames(t, c.nodes[2].client, 2, 1); code != 0 || len(names) != 1 || names[0] != "b" {
		t.Fatalf("lookup on the new leader: %v %d", names, code)
	}
}

// TestRebalanceLeaderMoveKeepsTheOldLeaderInTheISR is the hand-over fence of a rebalance
// move (docs/cluster.md, "Moves"): a move that takes the leadership away from a live server
// that leaves the bucket first moves only the leadership, keeping the old leader a replica
// and in the ISR (rebalance.Step). Here the coordinator's state of that first step has reached
// only the new leader. The new leader must not acknowledge an acks=all upsert while the old
// leader — which still answers lookups from its own state — has not fetched in the new
// epoch, and the old leader fetches only once it has stopped leading. So no lookup the old
// leader answers can miss an upsert the new one acknowledged. (Dropping the old leader from
// the ISR in the same step, as the move did before, acknowledges at once: the window the
// controlled-shutdown fence closes, TestHandOverFenceClosesTheStaleReadWindowOfAMove.)
func TestRebalanceLeaderMoveKeepsTheOldLeaderInTheISR(t *testing.T) {
	c := newRCluster(t, 2, 1, 10*time.Second)
	c.table(2, true)
	c.elect(2, []int32{1, 2}, 1, []int32{1, 2})
	if r := upsert(t, c.nodes[1].client, 2, -1, -1, -1, map[int64]string{1: "a"}); r.GetErrorCode() != 0 {
		t.Fatalf("upsert on the first leader: %d %s", r.GetErrorCode(), r.GetErrorMessage())
	}
	c.waitInSync(2, 1, 2)

	// The move's first step: the leadership moves to 2, server 1 stays in the ISR.
	b := bucket0(2)
	c.ctl.mu.Lock()
	prev := c.ctl.states[b]
	moved := cluster.BucketState{Replicas: prev.Replicas, Leader: 2, ISR: []int32{1, 2}, LeaderEpoch: prev.LeaderEpoch + 1, BucketEpoch: prev.BucketEpoch + 1}
	c.ctl.states[b] = moved
	c.ctl.mu.Unlock()
	tbl, _ := c.cat.TableByID(2)
	if err := c.nodes[2].srv.ApplyBucketStates(context.Background(), []cluster.BucketUpdate{{Table: tbl, Bucket: b, State: moved}}); err != nil {
		t.Fatal(err)
	}
	acked := make(chan int32, 1)
	go func() {
		r := upsert(t, c.nodes[2].client, 2, -1, -1, -1, map[int64]string{1: "b"})
		acked <- r.GetErrorCode()
	}()
	// However long the old leader takes to hear of its demotion, the new leader does not
	// acknowledge meanwhile; the old leader's answers all precede the acknowledgement.
	for range 5 {
		select {
		case code := <-acked:
			t.Fatalf("the new leader answered the upsert (code %d) before the old leader stopped leading", code)
		case <-time.After(100 * time.Millisecond):
		}
		if names, code := lookupNames(t, c.nodes[1].client, 2, 1); code != 0 || len(names) != 1 || names[0] != "a" {
			t.Fatalf("lookup on the old leader before its demotion: %v %d", names, code)
		}
	}

	if err := c.nodes[1].srv.ApplyBucketStates(context.Background(), []cluster.BucketUpdate{{Table: tbl, Bucket: b, State: moved}}); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-acked:
		if code != 0 {
			t.Fatalf("upsert on the new leader: code %d", code)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the new leader never acknowledged the upsert after the old one followed")
	}
	if names, code := lookupNames(t, c.nodes[1].client, 2, 1); code != ferr.NotLeaderOrFollower {
		t.Fatalf("lookup on the old leader after the new one acknowledged b: %v, code %d; want NOT_LEADER_OR_FOLLOWER", names, code)
	}
	if names, code := lookupNames(t, c.nodes[2].client, 2, 1); code != 0 || len(names) != 1 || names[0] != "b" {
		t.Fatalf("lookup on the new leader: %v %d", names, code)
	}
}
