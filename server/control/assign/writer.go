package assign

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/server/cluster"
	"github.com/stromdb/strom/server/control/bucketstate"
)

// Fence is the active coordinator's fenced compare-and-swap (election.Elector).
type Fence interface {
	FencedSwap(ctx context.Context, key string, expectRev int64, val []byte) (int64, error)
	Epoch() int64
}

// Notifier tells the replicas of states (notify.Notifier).
type Notifier interface {
	Notify(ctx context.Context, states map[cluster.Bucket]cluster.BucketState, t *cluster.TableInfo, p *cluster.PartitionInfo)
}

// Writer writes the active coordinator's bucket-state decisions — leader elections,
// controlled-shutdown moves, rebalance steps — each a compare-and-swap on the state's
// revision under the coordinator's fence. Invariant: a decision holds the Writer's lock from
// reading the states it decides on to writing them, so two decisions of one coordinator never
// race on one bucket (the swap would refuse the loser anyway; the lock saves the retry).
type Writer struct {
	mu     sync.Mutex
	Fence  Fence
	States *bucketstate.Cache
}

// Lock starts a decision.
func (w *Writer) Lock() { w.mu.Lock() }

// Unlock ends it.
func (w *Writer) Unlock() { w.mu.Unlock() }

// Swap writes next for bucket b if its stored revision is still rev and the fence holds,
// and records it ahead of the watch. It returns the new revision, 0 when the state had moved
// on, or NOT_COORDINATOR_LEADER. The caller holds the lock.
func (w *Writer) Swap(ctx context.Context, b cluster.Bucket, rev int64, next cluster.BucketState) (int64, error) {
	newRev, err := w.Fence.FencedSwap(ctx, bucketstate.Key(b), rev, bucketstate.Encode(next))
	if err != nil {
		if ferr.CodeOf(err) == ferr.NotCoordinatorLeaderException {
			return 0, err
		}
		return 0, fmt.Errorf("state of %s: %w", b, err)
	}
	if newRev != 0 {
		w.States.Put(b, next, newRev)
	}
	return newRev, nil
}

// electionParallelism bounds the bucket-state swaps one reconciliation has in flight.
const electionParallelism = 64

// Reconciler runs the leader election rules (Elect) over every bucket while this node is
// the active coordinator: at takeover and after every membership change.
type Reconciler struct {
	Writer *Writer
	States *bucketstate.Cache
	Live   func(int32) bool
	Notify Notifier
	Log    *slog.Logger
	// Life is the node's lifetime: retries stop with it. Set before Run or Reconcile.
	Life context.Context

	kickOnce sync.Once
	kick     chan struct{}
}

func (r *Reconciler) kicks() chan struct{} {
	r.kickOnce.Do(func() { r.kick = make(chan struct{}, 1) })
	return r.kick
}

// Kick asks for a reconciliation (coalesced with one already asked for).
func (r *Reconciler) Kick() {
	select {
	case r.kicks() <- struct{}{}:
	default:
	}
}

// Pending reports whether a reconciliation was asked for and has not begun yet.
func (r *Reconciler) Pending() bool { return len(r.kicks()) > 0 }

// Run reconciles at every Kick while active says this node is the active coordinator,
// until ctx ends.
func (r *Reconciler) Run(ctx context.Context, active func() bool) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.kicks():
		}
		if !active() {
			continue
		}
		rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		r.Reconcile(rctx, false)
		cancel()
	}
}

// Reconcile elects over every bucket, writes the changed states and tells the replicas. A
// bucket that could not be decided now (an etcd error, a concurrent change, a state not yet
// seen by the watch) is decided again 200 ms later, since no other event may come; retry
// reports whether that was scheduled.
func (r *Reconciler) Reconcile(ctx context.Context, takeover bool) (retry bool) {
	r.Writer.Lock()
	defer r.Writer.Unlock()
	entries := r.States.Entries(nil)
	epoch := r.Writer.Fence.Epoch()
	if epoch == 0 {
		return false
	}
	changed := map[cluster.Bucket]cluster.BucketState{}
	defer func() {
		if retry && r.Life.Err() == nil {
			time.AfterFunc(200*time.Millisecond, r.Kick)
		}
	}()
	// The swaps run electionParallelism at a time: each is one etcd round trip, and etcd
	// commits concurrent proposals together, so a node leading tens of thousands of buckets
	// fails over in a few rounds of fsyncs instead of one per bucket (docs/cluster.md, "Scale").
	var mu sync.Mutex // guards changed and retry
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(electionParallelism)
	for b, e := range entries {
		next, ok := Elect(e.State, r.Live, epoch)
		if !ok {
			continue
		}
		if e.Rev == 0 {
			retry = true // written by us, not yet seen by the watch
			continue
		}
		g.Go(func() error {
			rev, err := r.Writer.Swap(gctx, b, e.Rev, next)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if ferr.CodeOf(err) == ferr.NotCoordinatorLeaderException {
					return err // deposed: the other swaps would fail alike
				}
				r.Log.Warn("cannot elect a leader", "bucket", b, "err", err)
				retry = true
				return nil
			}
			if rev == 0 {
				retry = true // changed meanwhile (an ISR change); decide again on the new state
				return nil
			}
			changed[b] = next
			if next.LeaderEpoch == e.State.LeaderEpoch {
				r.Log.Info("removed dead replicas from the ISR", "bucket", b, "leader", next.Leader, "isr", next.ISR)
			} else {
				r.Log.Info("elected bucket leader", "bucket", b, "leader", next.Leader, "leader_epoch", next.LeaderEpoch, "isr", next.ISR)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		r.Log.Warn("cannot elect leaders", "err", err)
		// States already written stand; their replicas hear of them from the next coordinator's
		// takeover, as before this one was deposed.
		return retry
	}
	if len(changed) > 0 {
		r.Notify.Notify(ctx, changed, nil, nil)
	}
	if takeover {
		r.Log.Info("reconciled buckets at takeover", "buckets", len(entries), "elections", len(changed))
	}
	return retry
}
