package tablet_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stromdb/strom/internal/ferr"
)

// A leader whose membership lease may have expired (cut from the etcd majority, it may have
// been replaced without hearing of it) refuses reads and writes with NOT_LEADER_OR_FOLLOWER,
// so that neither a stale lookup nor an acks=1 write that its successor will truncate is
// answered; once the lease is renewed it serves again.
func TestLeaderWithoutCurrentMembershipRefusesReadsAndWrites(t *testing.T) {
	var valid atomic.Bool
	valid.Store(true)
	c := newRCluster(t, 2, 1, 10*time.Second)
	c.membership = valid.Load
	c.stop(1)
	c.start(1)
	c.table(1, false)
	c.table(2, true)
	c.elect(1, []int32{1, 2}, 1, []int32{1, 2})
	c.elect(2, []int32{1, 2}, 1, []int32{1, 2})
	if r := produceTo(t, c.nodes[1].client, 1, 1, 1000, rowBatch(1)); r.GetErrorCode() != 0 {
		t.Fatalf("acks=1 with a current membership: %d %s", r.GetErrorCode(), r.GetErrorMessage())
	}
	if r := upsert(t, c.nodes[1].client, 2, -1, -1, -1, map[int64]string{1: "a"}); r.GetErrorCode() != 0 {
		t.Fatalf("upsert with a current membership: %d %s", r.GetErrorCode(), r.GetErrorMessage())
	}

	valid.Store(false)
	leo := c.replica(1, 1).Log.LogEndOffset()
	for _, acks := range []int32{1, 0, -1} {
		if r := produceTo(t, c.nodes[1].client, 1, acks, 1000, rowBatch(1)); ferr.Code(r.GetErrorCode()) != ferr.NotLeaderOrFollower {
			t.Fatalf("acks=%d without a current membership: code %d, want NOT_LEADER_OR_FOLLOWER", acks, r.GetErrorCode())
		}
	}
	if got := c.replica(1, 1).Log.LogEndOffset(); got != leo {
		t.Fatalf("a refused write was appended: log end %d, was %d", got, leo)
	}
	if r := upsert(t, c.nodes[1].client, 2, 1, -1, -1, map[int64]string{1: "b"}); ferr.Code(r.GetErrorCode()) != ferr.NotLeaderOrFollower {
		t.Fatalf("upsert without a current membership: code %d", r.GetErrorCode())
	}
	if _, code := lookupNames(t, c.nodes[1].client, 2, 1); code != ferr.NotLeaderOrFollower {
		t.Fatalf("lookup without a current membership: code %d, want NOT_LEADER_OR_FOLLOWER", code)
	}

	valid.Store(true)
	if names, code := lookupNames(t, c.nodes[1].client, 2, 1); code != 0 || len(names) != 1 || names[0] != "a" {
		t.Fatalf("lookup after renewal: %v %d", names, code)
	}
}

// TestMembershipLapseEndsWaitingAcksAllWrites: acks=all writes waiting for a follower that
// is gone end with NOT_LEADER_OR_FOLLOWER as soon as the leader's membership lapses, instead
// of waiting out their request timeout (30 s here), so that clients find the new leader at
// once (docs/cluster.md, "Failover in under 2 s").
func TestMembershipLapseEndsWaitingAcksAllWrites(t *testing.T) {
	var valid atomic.Bool
	valid.Store(true)
	c := newRCluster(t, 2, 1, time.Minute)
	c.membership = valid.Load
	c.stop(1)
	c.start(1)
	c.table(1, false)
	c.table(2, true)
	c.elect(1, []int32{1, 2}, 1, []int32{1, 2})
	c.elect(2, []int32{1, 2}, 1, []int32{1, 2})
	if r := produceTo(t, c.nodes[1].client, 1, 1, 1000, rowBatch(1)); r.GetErrorCode() != 0 {
		t.Fatalf("acks=1: %d %s", r.GetErrorCode(), r.GetErrorMessage())
	}
	logEnd, kvEnd := c.replica(1, 1).Log.LogEndOffset(), c.replica(1, 2).Log.LogEndOffset()
	c.stop(2) // the HW cannot pass what only the leader holds

	produced := make(chan ferr.Code, 1)
	upserted := make(chan ferr.Code, 1)
	go func() {
		produced <- ferr.Code(produceTo(t, c.nodes[1].client, 1, -1, 30000, rowBatch(1)).GetErrorCode())
	}()
	go func() {
		upserted <- ferr.Code(upsert(t, c.nodes[1].client, 2, -1, -1, -1, map[int64]string{1: "a"}).GetErrorCode())
	}()
	deadline := time.Now().Add(10 * time.Second)
	for c.replica(1, 1).Log.LogEndOffset() == logEnd || c.replica(1, 2).Log.LogEndOffset() == kvEnd {
		if time.Now().After(deadline) {
			t.Fatal("the acks=all writes were not appended by the leader")
		}
		time.Sleep(5 * time.Millisecond)
	}
	valid.Store(false)
	if code := <-produced; code != ferr.NotLeaderOrFollower {
		t.Fatalf("waiting acks=all append after the lapse: code %d, want NOT_LEADER_OR_FOLLOWER", code)
	}
	if code := <-upserted; code != ferr.NotLeaderOrFollower {
		t.Fatalf("waiting acks=all upsert after the lapse: code %d, want NOT_LEADER_OR_FOLLOWER", code)
	}
}
