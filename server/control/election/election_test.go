package election

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/server/cluster"
	"github.com/stromdb/strom/server/meta"
)

func discard() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

type campaigner struct {
	e       *Elector
	stop    context.CancelFunc
	done    chan struct{}
	elected chan int64 // the epoch of each takeover
}

func campaign(t *testing.T, store *meta.EtcdStore, internal string, takeoverErr error) *campaigner {
	t.Helper()
	ctx, stop := context.WithCancel(context.Background())
	c := &campaigner{e: New(store.Client(), discard()), stop: stop, done: make(chan struct{}), elected: make(chan int64, 4)}
	info := CoordinatorInfo{Internal: internal, Endpoints: []cluster.Endpoint{{Listener: "FLUSS", Host: "h", Port: 1}}}
	go func() {
		defer close(c.done)
		c.e.Campaign(ctx, info, time.Second, func(context.Context) error {
			c.elected <- c.e.Epoch()
			return takeoverErr
		}, nil)
	}()
	t.Cleanup(func() { stop(); <-c.done })
	return c
}

// TestElectionAndFencing runs two coordinators against one etcd: the first wins, its epoch
// fences its writes, the standby's writes fail, and when the first resigns the second takes
// over with a later epoch while the first's old fence no longer writes anything.
func TestElectionAndFencing(t *testing.T) {
	ctx := context.Background()
	store, err := meta.OpenEmbedded(ctx, t.TempDir(), discard())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })

	first := campaign(t, store, "first:1", nil)
	epoch1 := <-first.elected
	if !first.e.Active() || epoch1 == 0 {
		t.Fatalf("the winner is not active: %v %d", first.e.Active(), epoch1)
	}
	second := campaign(t, store, "second:1", nil)
	if err := second.e.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if addr, ok := second.e.CoordinatorAddr(); !ok || addr != "first:1" {
		t.Fatalf("the standby sees coordinator %q %v", addr, ok)
	}
	if second.e.Active() || second.e.Epoch() != 0 {
		t.Fatal("the standby is active")
	}
	if err := first.e.FencedPut(ctx, "test/a", []byte("1"), false); err != nil {
		t.Fatal(err)
	}
	if err := second.e.FencedPut(ctx, "test/a", []byte("2"), false); ferr.CodeOf(err) != ferr.NotCoordinatorLeaderException {
		t.Fatalf("a standby's fenced put: %v", err)
	}
	rev, err := first.e.FencedSwap(ctx, "test/b", 0, []byte("1")) // 0: the key must not exist
	if err != nil || rev == 0 {
		t.Fatalf("a swap creating a key: %d %v", rev, err)
	}
	if again, err := first.e.FencedSwap(ctx, "test/b", rev-1, []byte("2")); err != nil || again != 0 {
		t.Fatalf("a swap on a stale revision: %d %v, want 0 and no error", again, err)
	}

	// The first resigns (its context ends); it keeps its fence to play a deposed coordinator
	// that has not noticed yet.
	oldFence, _ := first.e.Fence()
	first.stop()
	<-first.done
	epoch2 := <-second.elected
	if epoch2 <= epoch1 {
		t.Fatalf("the successor's epoch %d is not after %d", epoch2, epoch1)
	}
	first.e.SetActive(oldFence, true)
	if err := first.e.FencedPut(ctx, "test/a", []byte("3"), false); ferr.CodeOf(err) != ferr.NotCoordinatorLeaderException {
		t.Fatalf("a deposed coordinator's put: %v", err)
	}
	if _, err := first.e.FencedSwap(ctx, "test/b", rev, []byte("3")); ferr.CodeOf(err) != ferr.NotCoordinatorLeaderException {
		t.Fatalf("a deposed coordinator's swap: %v", err)
	}
	if err := second.e.FencedPut(ctx, "test/a", nil, true); err != nil {
		t.Fatalf("the successor's delete: %v", err)
	}
	if _, err := store.Get(ctx, "test/a"); !errors.Is(err, meta.ErrNotFound) {
		t.Fatalf("after the successor's delete: %v", err)
	}
	if err := second.e.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if info, ok := second.e.Coordinator(); !ok || info.Internal != "second:1" || len(info.Endpoints) != 1 {
		t.Fatalf("coordinator after the takeover: %+v %v", info, ok)
	}
}

// TestFailedTakeoverStepsDown checks that a winner whose takeover fails gives the
// leadership up (and campaigns again) instead of staying active half-prepared.
func TestFailedTakeoverStepsDown(t *testing.T) {
	ctx := context.Background()
	store, err := meta.OpenEmbedded(ctx, t.TempDir(), discard())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	c := campaign(t, store, "x:1", errors.New("catalog unreadable"))
	first := <-c.elected
	second := <-c.elected // it stepped down, resigned and won again
	if second <= first {
		t.Fatalf("re-elected at epoch %d after %d", second, first)
	}
}
