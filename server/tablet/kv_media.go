package tablet

import (
	"context"
	"time"

	"github.com/stromdb/strom/server/cluster"
)

// A tablet server whose Pebble store (the primary-key state of all its buckets) fails its
// flushes with EIO refuses every upsert of the primary-key buckets it leads
// (KV_STORAGE_EXCEPTION, kvstore.Store.WriteError) until a flush succeeds — which on a sick
// disk may be never. Another in-sync replica has the same changelog and a working state
// store, so the leadership moves: runKVMediaWatch hands each such bucket over through the
// coordinator (RESIGN_LEADERSHIP, as a corrupt leader does: corrupt_repair.go). Nothing
// acknowledged is lost (an acknowledged upsert is in every ISR member's changelog, and the
// coordinator elects only an ISR member); this server follows, appending the changelog as
// usual, and applies it to its state once its flushes succeed again (appendFetched defers
// the catch-up meanwhile). A full disk (ENOSPC) is not handed over: space frees in place.

const (
	// kvMediaCheck is how often the watch looks at the store.
	kvMediaCheck = 250 * time.Millisecond
	// kvMediaGrace is how long the store must have failed for EIO before the leaderships
	// move: Pebble retries a failed flush within milliseconds, so a single failing write of
	// a disk that otherwise works costs no leader change.
	kvMediaGrace = time.Second
)

// runKVMediaWatch resigns the primary-key leaderships of this server while its Pebble store
// fails for a media error, until ctx ends. Each bucket is asked once per leader epoch; a
// bucket with no other in-sync replica stays here (refusing upserts) with one WARN.
func (s *replicaManager) runKVMediaWatch(ctx context.Context) {
	if s.kv == nil {
		return
	}
	tick := time.NewTicker(kvMediaCheck)
	defer tick.Stop()
	var since time.Time
	asked := map[cluster.Bucket]int32{} // the leader epoch each bucket was last handled at
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		cause := s.kv.MediaError()
		if cause == nil {
			since = time.Time{}
			clear(asked)
			continue
		}
		if since.IsZero() {
			since = time.Now()
		}
		if time.Since(since) < kvMediaGrace {
			continue
		}
		for _, r := range s.Replicas() {
			if ctx.Err() != nil {
				return
			}
			if r.KV == nil || r.repl == nil || !r.repl.leading.Load() {
				continue
			}
			rs := r.repl
			rs.mu.Lock()
			st, known := rs.state, rs.known
			rs.mu.Unlock()
			if !known || st.Leader != s.opts.ServerID {
				continue
			}
			if e, ok := asked[r.Bucket]; ok && e == st.LeaderEpoch {
				continue
			}
			asked[r.Bucket] = st.LeaderEpoch
			s.resignKVMedia(ctx, r, st, cause)
		}
	}
}

// resignKVMedia asks the coordinator to move the leadership of rep, a primary-key bucket
// whose state store fails for cause. A failed request is not retried at this epoch: the
// next epoch (or the store healing and failing again) asks anew.
func (s *replicaManager) resignKVMedia(ctx context.Context, rep *Replica, st cluster.BucketState, cause error) {
	rc, ok := s.opts.Replication.(cluster.LeadershipResigner)
	if !ok {
		return
	}
	if !otherInSync(st, s.opts.ServerID) {
		s.log.Warn("kvstore: Pebble files fail with EIO but the primary-key bucket has no other in-sync replica to lead it; it stays here and refuses upserts until a flush succeeds",
			"bucket", rep.Bucket, "isr", st.ISR, "cause", cause)
		return
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	moved, err := rc.ResignLeadership(cctx, rep.Bucket, st.LeaderEpoch)
	switch {
	case err != nil:
		s.log.Warn("kvstore: Pebble files fail with EIO; cannot hand the primary-key bucket's leadership over", "bucket", rep.Bucket, "leader_epoch", st.LeaderEpoch, "err", err)
	case !moved:
		s.log.Warn("kvstore: Pebble files fail with EIO; the coordinator found no other live in-sync replica to lead the primary-key bucket", "bucket", rep.Bucket, "isr", st.ISR)
	default:
		s.log.Warn("kvstore: Pebble files fail with EIO; handed the primary-key bucket's leadership to an in-sync replica",
			"bucket", rep.Bucket, "old_leader_epoch", st.LeaderEpoch, "cause", cause)
	}
}
