package tablet

import (
	"testing"
	"time"

	"github.com/stromdb/strom/server/cluster"
)

// TestRefusedISRChangeWaitsForANewerStateOrTheRetryDelay: after a refused AdjustISR the leader
// asks again at once only when its view of the bucket has moved on; from the same view it
// waits isrRetryAfter, so a stale view does not turn every follower fetch into an etcd read.
func TestRefusedISRChangeWaitsForANewerStateOrTheRetryDelay(t *testing.T) {
	t0 := time.Unix(1000, 0)
	stale := cluster.BucketState{LeaderEpoch: 3, BucketEpoch: 7}
	rs := &replState{state: stale}
	if !mayChangeISRLocked(rs, t0) {
		t.Fatal("no change was ever refused, yet one may not be asked for")
	}
	rs.isrBusy = true
	if mayChangeISRLocked(rs, t0) {
		t.Fatal("a change may be asked for while one is in flight")
	}
	rs.isrBusy = false
	rs.isrRefused, rs.isrRefusedAt = stale, t0
	if mayChangeISRLocked(rs, t0.Add(isrRetryAfter/2)) {
		t.Fatal("a refused change is asked for again from the same state before the retry delay")
	}
	if !mayChangeISRLocked(rs, t0.Add(isrRetryAfter)) {
		t.Fatal("a refused change is not asked for again after the retry delay")
	}
	rs.state = cluster.BucketState{LeaderEpoch: 3, BucketEpoch: 8}
	if !mayChangeISRLocked(rs, t0.Add(time.Millisecond)) {
		t.Fatal("a newer state does not allow asking again at once")
	}
}
