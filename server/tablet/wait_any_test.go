package tablet

import (
	"context"
	"testing"
	"time"
)

// waitAny over more channels than one select chunk returns when any one of them closes,
// whichever chunk holds it, and when its context ends.
func TestWaitAnyManyChannels(t *testing.T) {
	for _, which := range []int{0, waitAnyChunk - 1, waitAnyChunk, 3*waitAnyChunk + 7} {
		chans := make([]<-chan struct{}, 3*waitAnyChunk+10)
		var target chan struct{}
		for i := range chans {
			ch := make(chan struct{})
			if i == which {
				target = ch
			}
			chans[i] = ch
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			waitAny(context.Background(), chans)
		}()
		select {
		case <-done:
			t.Fatalf("waitAny returned before channel %d closed", which)
		case <-time.After(20 * time.Millisecond):
		}
		close(target)
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatalf("waitAny did not return after channel %d closed", which)
		}
	}
	chans := make([]<-chan struct{}, 2*waitAnyChunk)
	for i := range chans {
		chans[i] = make(chan struct{})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	start := time.Now()
	waitAny(ctx, chans)
	if time.Since(start) < 25*time.Millisecond {
		t.Fatal("waitAny returned before its context ended")
	}
}

// An idle follower fetch waits longer the more buckets it names, never beyond the cap or
// half the ISR lag time, and never less than the base wait.
func TestFollowerWait(t *testing.T) {
	for _, tc := range []struct {
		n      int
		maxLag time.Duration
		want   time.Duration
	}{
		{1, 30 * time.Second, followerMaxWait},
		{followerWaitBuckets - 1, 30 * time.Second, followerMaxWait},
		{followerWaitBuckets, 30 * time.Second, 2 * followerMaxWait},
		{33000, 30 * time.Second, followerMaxWaitCap},
		{33000, 2 * time.Second, time.Second},
		{33000, 100 * time.Millisecond, followerMaxWait},
	} {
		if got := followerWait(tc.n, tc.maxLag); got != tc.want {
			t.Errorf("followerWait(%d, %v) = %v, want %v", tc.n, tc.maxLag, got, tc.want)
		}
	}
}
