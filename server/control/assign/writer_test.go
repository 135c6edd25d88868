package assign

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/server/cluster"
	"github.com/stromdb/strom/server/control/bucketstate"
	"github.com/stromdb/strom/server/control/internal/statetext"
	"github.com/stromdb/strom/server/meta"
)

// fakeFence is an in-memory FencedSwap: one revision counter, a stored revision per key, and
// a coordinator epoch that 0 turns into a deposed coordinator.
type fakeFence struct {
	mu     sync.Mutex
	epoch  int64
	rev    int64
	revs   map[string]int64
	writes []string
}

func (f *fakeFence) Epoch() int64 { f.mu.Lock(); defer f.mu.Unlock(); return f.epoch }

func (f *fakeFence) FencedSwap(ctx context.Context, key string, expectRev int64, val []byte) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.epoch == 0 {
		return 0, meta.ErrNotLeader()
	}
	if f.revs[key] != expectRev {
		return 0, nil
	}
	f.rev++
	f.revs[key] = f.rev
	f.writes = append(f.writes, key)
	return f.rev, nil
}

type fakeNotifier struct {
	mu    sync.Mutex
	calls []map[cluster.Bucket]cluster.BucketState
}

func (n *fakeNotifier) Notify(ctx context.Context, states map[cluster.Bucket]cluster.BucketState, t *cluster.TableInfo, p *cluster.PartitionInfo) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.calls = append(n.calls, states)
}

func discard() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// reconcilerOver returns a reconciler over states (statetext lines) stored in the fake fence
// at revision rev each (a line's bucket listed in unseen is cached at revision 0: written
// by this node, not yet seen by the watch).
func reconcilerOver(t *testing.T, lines string, live []int32, unseen ...cluster.Bucket) (*Reconciler, *fakeFence, *fakeNotifier) {
	t.Helper()
	states, err := statetext.ParseStates(lines)
	if err != nil {
		t.Fatal(err)
	}
	fence := &fakeFence{epoch: 9, rev: 100, revs: map[string]int64{}}
	cache := bucketstate.NewCache()
	entries := map[cluster.Bucket]bucketstate.Entry{}
	for b, st := range states {
		fence.rev++
		fence.revs[bucketstate.Key(b)] = fence.rev
		entries[b] = bucketstate.Entry{State: st, Rev: fence.rev}
	}
	for _, b := range unseen {
		e := entries[b]
		e.Rev = 0
		entries[b] = e
	}
	cache.Replace(entries)
	n := &fakeNotifier{}
	r := &Reconciler{Writer: &Writer{Fence: fence, States: cache}, States: cache, Live: statetext.Live(live),
		Notify: n, Log: discard(), Life: context.Background()}
	return r, fence, n
}

func bucket(t *testing.T, s string) cluster.Bucket {
	t.Helper()
	b, err := statetext.ParseBucket(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestReconcileWritesOnlyWhatTheRulesChange(t *testing.T) {
	r, fence, n := reconcilerOver(t, `
1/-/0 r=1,2,3 l=1 isr=1,2,3
1/-/1 r=2,3,1 l=2 isr=2,3,1
1/-/2 r=3,1,2 l=3 isr=3
`, []int32{2, 3})
	if retry := r.Reconcile(context.Background(), true); retry {
		t.Fatal("a reconcile that decided every bucket asks for a retry")
	}
	got := statetext.FormatStates(r.States.Snapshot())
	want := `1/-/0 r=1,2,3 l=2 isr=2,3 le=1 be=1 ce=9
1/-/1 r=2,3,1 l=2 isr=2,3 be=1 ce=9
1/-/2 r=3,1,2 l=3 isr=3
`
	if got != want {
		t.Fatalf("states after reconcile:\n%s\nwant:\n%s", got, want)
	}
	if len(fence.writes) != 2 {
		t.Fatalf("wrote %v, want the two changed buckets", fence.writes)
	}
	e, _ := r.States.Get(bucket(t, "1/-/0"))
	if e.Rev != fence.revs[bucketstate.Key(bucket(t, "1/-/0"))] {
		t.Fatalf("the cache holds revision %d of a state written at %d", e.Rev, fence.revs[bucketstate.Key(bucket(t, "1/-/0"))])
	}
	if len(n.calls) != 1 || len(n.calls[0]) != 2 {
		t.Fatalf("notifications %v, want one of both changed states", n.calls)
	}
	// Reconciling again changes nothing.
	if r.Reconcile(context.Background(), false); len(fence.writes) != 2 || len(n.calls) != 1 {
		t.Fatalf("a second reconcile wrote %v", fence.writes)
	}
}

func TestReconcileRetriesWhatItCannotDecideNow(t *testing.T) {
	r, fence, n := reconcilerOver(t, `
1/-/0 r=1,2 l=1 isr=1,2
1/-/1 r=1,2 l=1 isr=1,2
1/-/2 r=1,2 l=2 isr=1,2
`, []int32{2}, bucket(t, "1/-/1"))
	// Bucket 2 moved on in etcd since the cache read it (an ISR change by its leader).
	fence.revs[bucketstate.Key(bucket(t, "1/-/2"))] = 999
	if retry := r.Reconcile(context.Background(), false); !retry {
		t.Fatal("no retry for a state not yet seen by the watch and a state that moved on")
	}
	if len(fence.writes) != 1 || fence.writes[0] != bucketstate.Key(bucket(t, "1/-/0")) {
		t.Fatalf("wrote %v, want bucket 0 only", fence.writes)
	}
	if len(n.calls) != 1 {
		t.Fatalf("notifications %v", n.calls)
	}
}

func TestReconcileOfADeposedCoordinatorWritesNothing(t *testing.T) {
	r, fence, n := reconcilerOver(t, "1/-/0 r=1,2 l=1 isr=1,2\n", []int32{2})
	fence.epoch = 0
	if retry := r.Reconcile(context.Background(), false); retry || len(fence.writes) != 0 || len(n.calls) != 0 {
		t.Fatalf("a coordinator without an epoch wrote %v, notified %v, retry %v", fence.writes, n.calls, retry)
	}
	// Deposed between reading its epoch and writing: the swap is refused, nothing is told.
	w := r.Writer
	if _, err := w.Swap(context.Background(), bucket(t, "1/-/0"), 101, cluster.BucketState{}); ferr.CodeOf(err) != ferr.NotCoordinatorLeaderException {
		t.Fatalf("a fenced swap by a deposed coordinator: %v", err)
	}
}

func TestRunReconcilesOnKickWhileActive(t *testing.T) {
	r, fence, _ := reconcilerOver(t, "1/-/0 r=1,2 l=1 isr=1,2\n", []int32{2})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	active := make(chan bool, 1)
	reconciled := make(chan struct{})
	go func() {
		defer close(done)
		r.Run(ctx, func() bool {
			a := <-active
			if !a {
				reconciled <- struct{}{} // a skipped round
			}
			return a
		})
	}()
	active <- false
	r.Kick()
	<-reconciled
	fence.mu.Lock()
	skipped := len(fence.writes)
	fence.mu.Unlock()
	if skipped != 0 {
		t.Fatalf("a standby reconciled: %v", fence.writes)
	}
	active <- true
	r.Kick()
	// The next round is a standby's again; by the time it asks, the active round is done.
	active <- false
	r.Kick()
	<-reconciled
	cancel()
	<-done
	if len(fence.writes) != 1 {
		t.Fatalf("an active round wrote %v, want the one election", fence.writes)
	}
}
