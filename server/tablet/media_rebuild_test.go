package tablet

import (
	"testing"
	"time"

	"github.com/stromdb/strom/server/cluster"
)

// TestMediaRebuildBackoff: the rebuilds of a follower replica offline for a disk I/O error
// run at once the first time, then at doubling intervals capped at mediaRebuildMax, start
// over after mediaRebuildReset, and each bucket is paced on its own.
func TestMediaRebuildBackoff(t *testing.T) {
	s := &replicaManager{}
	a, b := cluster.Bucket{TableID: 1}, cluster.Bucket{TableID: 2}
	t0 := time.Unix(1000, 0)
	if !s.mediaRebuildDue(a, t0) {
		t.Fatal("the first rebuild is not due at once")
	}
	if s.mediaRebuildDue(a, t0.Add(500*time.Millisecond)) {
		t.Fatal("a second rebuild 500 ms after the first is due")
	}
	if !s.mediaRebuildDue(b, t0.Add(500*time.Millisecond)) {
		t.Fatal("another bucket's first rebuild waits for the first bucket's pace")
	}
	now := t0
	var gaps []time.Duration
	for len(gaps) < 7 {
		next := now
		for !s.mediaRebuildDue(a, next) {
			next = next.Add(100 * time.Millisecond)
		}
		gaps = append(gaps, next.Sub(now))
		now = next
	}
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 30 * time.Second, 30 * time.Second}
	for i := range want {
		if gaps[i] != want[i] {
			t.Fatalf("gaps between rebuilds %v, want %v", gaps, want)
		}
	}
	if !s.mediaRebuildDue(a, now.Add(mediaRebuildReset+time.Second)) || s.mediaRebuildDue(a, now.Add(mediaRebuildReset+1500*time.Millisecond)) {
		t.Fatal("after a quiet spell the pace does not start over at mediaRebuildFirst")
	}
}
