package tablet

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stromdb/strom/server/cluster"
)

// TestApplyPerBucketKeepsEachBucketsOrder holds the first update of bucket 0 until another
// bucket's update has started: a pool that ran bucket 0's second update meanwhile (per
// update instead of per bucket) would apply it before the first, which the test sees.
func TestApplyPerBucketKeepsEachBucketsOrder(t *testing.T) {
	const buckets, perBucket = 40, 5
	var updates []cluster.BucketUpdate
	for round := range perBucket {
		for b := range buckets {
			updates = append(updates, cluster.BucketUpdate{
				Bucket: cluster.Bucket{TableID: 1, Bucket: int32(b)},
				State:  cluster.BucketState{LeaderEpoch: int32(round)},
			})
		}
	}
	var mu sync.Mutex
	applied := map[int32]int32{} // bucket -> next expected epoch
	otherStarted := make(chan struct{})
	var once sync.Once
	var inFlight, peak atomic.Int32
	err := applyPerBucket(updates, 8, func(u cluster.BucketUpdate) error {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		if u.Bucket.Bucket != 0 {
			once.Do(func() { close(otherStarted) })
		} else if u.State.LeaderEpoch == 0 {
			<-otherStarted
		}
		mu.Lock()
		defer mu.Unlock()
		if want := applied[u.Bucket.Bucket]; u.State.LeaderEpoch != want {
			t.Errorf("bucket %d: epoch %d applied while %d was next", u.Bucket.Bucket, u.State.LeaderEpoch, want)
		}
		applied[u.Bucket.Bucket] = u.State.LeaderEpoch + 1
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for b := range int32(buckets) {
		if applied[b] != perBucket {
			t.Errorf("bucket %d: %d of %d updates applied", b, applied[b], perBucket)
		}
	}
	if p := peak.Load(); p < 2 || p > 8 {
		t.Errorf("peak concurrency %d, want 2..8", p)
	}
}

// TestApplyPerBucketJoinsErrorsInUpdateOrder: every failing update is reported, named by its
// bucket, and the others still run.
func TestApplyPerBucketJoinsErrorsInUpdateOrder(t *testing.T) {
	boom := errors.New("boom")
	var updates []cluster.BucketUpdate
	for b := range 10 {
		updates = append(updates, cluster.BucketUpdate{Bucket: cluster.Bucket{TableID: 2, Bucket: int32(b)}})
	}
	var ran atomic.Int32
	err := applyPerBucket(updates, 4, func(u cluster.BucketUpdate) error {
		ran.Add(1)
		if u.Bucket.Bucket%3 == 0 {
			return boom
		}
		return nil
	})
	if ran.Load() != 10 {
		t.Fatalf("%d of 10 updates ran", ran.Load())
	}
	var joined interface{ Unwrap() []error }
	if !errors.As(err, &joined) || len(joined.Unwrap()) != 4 || !errors.Is(err, boom) {
		t.Fatalf("err = %v, want the 4 failures of buckets 0, 3, 6, 9", err)
	}
	for i, e := range joined.Unwrap() {
		want := cluster.Bucket{TableID: 2, Bucket: int32(3 * i)}.String()
		if got := e.Error(); len(got) < len(want) || got[:len(want)] != want {
			t.Errorf("error %d = %q, want it to start with %q", i, got, want)
		}
	}
}
