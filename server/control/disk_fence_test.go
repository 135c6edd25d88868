package control

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stromdb/strom/server/diskwatch"
)

// TestDiskFenceFollowsAStalledSync: a sync in flight past the bound closes the fence and
// wakes the registrar; the fence opens again only after the disk has answered for
// rejoinAfter; a bound of 0 never closes it.
func TestDiskFenceFollowsAStalledSync(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	d := newDiskFence(100*time.Millisecond, slog.New(slog.NewTextHandler(io.Discard, nil)))
	go d.run(ctx)
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("not %s after 10 s", what)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	quick := diskwatch.BeginSync("/d/quick")
	quick() // a sync that returns in time changes nothing
	time.Sleep(200 * time.Millisecond)
	if d.isStalled() {
		t.Fatal("fence closed without a stalled sync")
	}
	end := diskwatch.BeginSync("/d/stuck")
	waitFor("stalled", d.isStalled)
	select {
	case <-d.kick:
	default:
		t.Fatal("the registrar was not woken when the fence closed")
	}
	end()
	ended := time.Now()
	waitFor("open again", func() bool { return !d.isStalled() })
	if took := time.Since(ended); took < rejoinAfter {
		t.Fatalf("the fence opened %v after the sync returned, before rejoinAfter (%v)", took, rejoinAfter)
	}

	off := newDiskFence(0, slog.New(slog.NewTextHandler(io.Discard, nil)))
	go off.run(ctx)
	stuck := diskwatch.BeginSync("/d/stuck-again")
	defer stuck()
	time.Sleep(300 * time.Millisecond)
	if off.isStalled() || !d.isStalled() {
		t.Fatalf("bound 0 closed the fence (%v), or the watching fence missed a new stall (%v)", off.isStalled(), d.isStalled())
	}
}
