package tablet

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/stromdb/strom/server/cluster"
)

// Followers waiting for their leader's lineage (docs/cluster.md, "Scale"). A new follower
// needs the lineage its leader published for the leader epoch it follows before it can
// truncate and fetch. Each follower used to poll etcd for its own bucket's lineage; when a
// node leading thousands of buckets failed, thousands of new followers on each survivor
// polled at once, and their linearizable reads starved the new leaders' own lineage writes,
// so the failover was not served after minutes. Now one waiter per server reads for all of
// them: every round reads, for each table (or partition) with waiting buckets, either the
// whole table's lineages in one range read (cluster.LineageLister, when enough of its buckets
// wait) or the few waiting buckets one by one, with at most lineageReadsInFlight reads at
// once; rounds follow each other with a backoff of 100 ms doubling to 1 s while nothing new
// is published, back to 100 ms when something was (a range read is heavier for etcd than one
// key, so rounds are spaced more than one follower's polls were).
//
// Invariant: a waiter is answered once, with the lineage of exactly its leader epoch
// (non-empty), or as stale when a newer epoch's lineage is published; a waiter whose context
// ends is removed and never answered. The waiter's goroutine runs only while someone waits.

const (
	lineageMinBackoff = 100 * time.Millisecond
	lineageMaxBackoff = time.Second
	// lineageRangeMin is the number of waiting buckets of one table from which its lineages
	// are read in one range read rather than one read per bucket.
	lineageRangeMin = 4
	// lineageReadsInFlight bounds the etcd reads one server makes for its followers at once.
	lineageReadsInFlight = 4
	lineageReadTimeout   = 10 * time.Second
)

// lineageWaiter answers followers waiting for their leader's lineage (see above).
type lineageWaiter struct {
	ctl cluster.ReplicationControl
	log *slog.Logger

	mu      sync.Mutex
	waiting map[*lineageWait]struct{}
	running bool
	wake    chan struct{} // a waiter registered while the loop sleeps

	// rounds counts completed rounds (tests).
	rounds int
}

// lineageWait is one follower's wait. done is closed once lin or stale is set.
type lineageWait struct {
	b     cluster.Bucket
	epoch int32
	done  chan struct{}
	lin   cluster.Lineage
	stale bool
}

func newLineageWaiter(ctl cluster.ReplicationControl, log *slog.Logger) *lineageWaiter {
	return &lineageWaiter{ctl: ctl, log: log, waiting: map[*lineageWait]struct{}{}, wake: make(chan struct{}, 1)}
}

// wait returns the lineage of b's leader epoch epoch once it is published; stale is true
// when a newer leader epoch's lineage was published instead (a newer state is on its way).
// It returns ctx's error when ctx ends first.
func (w *lineageWaiter) wait(ctx context.Context, b cluster.Bucket, epoch int32) (lin cluster.Lineage, stale bool, err error) {
	lw := &lineageWait{b: b, epoch: epoch, done: make(chan struct{})}
	w.mu.Lock()
	w.waiting[lw] = struct{}{}
	if !w.running {
		w.running = true
		go w.run()
	}
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
	select {
	case <-lw.done:
		return lw.lin, lw.stale, nil
	case <-ctx.Done():
		w.mu.Lock()
		delete(w.waiting, lw)
		w.mu.Unlock()
		select {
		case <-lw.done: // answered meanwhile
			return lw.lin, lw.stale, nil
		default:
		}
		return cluster.Lineage{}, false, ctx.Err()
	}
}

// tableKey groups waiters by the table (partition) whose lineages one range read returns.
type tableKey struct{ table, partition int64 }

// run reads lineages in rounds while anyone waits.
func (w *lineageWaiter) run() {
	backoff := lineageMinBackoff
	for {
		w.mu.Lock()
		if len(w.waiting) == 0 {
			w.running = false
			w.mu.Unlock()
			return
		}
		groups := map[tableKey][]*lineageWait{}
		for lw := range w.waiting {
			k := tableKey{lw.b.TableID, lw.b.PartitionID}
			groups[k] = append(groups[k], lw)
		}
		w.mu.Unlock()
		if w.round(groups) {
			backoff = lineageMinBackoff
		} else {
			backoff = min(backoff*2, lineageMaxBackoff)
		}
		w.mu.Lock()
		w.rounds++
		w.mu.Unlock()
		select {
		case <-time.After(backoff):
		case <-w.wake:
			// A new follower waits: read again soon, but not sooner than the least backoff,
			// so a herd of registrations makes rounds, not one read each.
			time.Sleep(lineageMinBackoff)
		}
	}
}

// round reads the lineages of every group once and answers the waiters it can. It reports
// whether any waiter was answered.
func (w *lineageWaiter) round(groups map[tableKey][]*lineageWait) bool {
	lister, _ := w.ctl.(cluster.LineageLister)
	sem := make(chan struct{}, lineageReadsInFlight)
	var wg sync.WaitGroup
	var mu sync.Mutex
	answered := false
	read := func(f func(ctx context.Context) bool) {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			ctx, cancel := context.WithTimeout(context.Background(), lineageReadTimeout)
			defer cancel()
			if f(ctx) {
				mu.Lock()
				answered = true
				mu.Unlock()
			}
		}()
	}
	for k, ws := range groups {
		if lister != nil && len(ws) >= lineageRangeMin {
			read(func(ctx context.Context) bool {
				ls, err := lister.TableLineages(ctx, k.table, k.partition)
				if err != nil {
					w.log.Warn("read leader lineages", "table", k.table, "partition", k.partition, "waiting", len(ws), "err", err)
					return false
				}
				got := false
				for _, lw := range ws {
					if l, ok := ls[lw.b]; ok && w.answer(lw, l) {
						got = true
					}
				}
				return got
			})
			continue
		}
		for _, lw := range ws {
			read(func(ctx context.Context) bool {
				l, ok, err := w.ctl.Lineage(ctx, lw.b)
				if err != nil {
					w.log.Warn("read leader lineage", "bucket", lw.b, "err", err)
					return false
				}
				return ok && w.answer(lw, l)
			})
		}
	}
	wg.Wait()
	return answered
}

// answer completes lw with l if l is of its epoch (or newer), reporting whether it did.
func (w *lineageWaiter) answer(lw *lineageWait, l cluster.Lineage) bool {
	switch {
	case l.LeaderEpoch == lw.epoch && len(l.Entries) > 0:
		lw.lin = l
	case l.LeaderEpoch > lw.epoch:
		lw.stale = true
	default:
		return false
	}
	w.mu.Lock()
	_, still := w.waiting[lw]
	delete(w.waiting, lw)
	w.mu.Unlock()
	if still {
		close(lw.done)
	}
	return still
}
