package tablet

import (
	"context"
	"sync"
	"time"

	"github.com/stromdb/strom/server/cluster"
	"github.com/stromdb/strom/server/diskwatch"
)

// repairQueue wakes the repair loop (runRepairs) when a replica went offline for
// corruption or a disk I/O error: from a read, a failed append or sync (logstore.Options.OnOffline), at open (a replica that recovers
// offline), or when a state makes an offline replica a follower (after its leader resigned).
type repairQueue struct {
	once sync.Once
	ch   chan struct{} // capacity 1
}

func (q *repairQueue) c() chan struct{} {
	q.once.Do(func() { q.ch = make(chan struct{}, 1) })
	return q.ch
}

// kick asks for a repair pass; it never blocks.
func (q *repairQueue) kick() {
	select {
	case q.c() <- struct{}{}:
	default:
	}
}

// repairRetry is the pause before another pass while an offline replica that could be
// repaired is still offline (its resignation failed, the coordinator was not reachable, its
// new state has not arrived yet).
const repairRetry = time.Second

// runRepairs repairs offline replicas (repairCorrupt) whenever it is kicked, until ctx ends.
// It does not depend on the scrubber: a corrupt batch found by a read of a leader moves its
// leadership within about a second, not at the next scrub pass.
func (s *replicaManager) runRepairs(ctx context.Context) {
	kicks := s.repairs.c()
	var retry <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-kicks:
		case <-retry:
		}
		retry = nil
		pending := false
		for _, r := range s.Replicas() {
			if ctx.Err() != nil {
				return
			}
			if r.repl == nil || r.Log.Offline() == nil {
				continue
			}
			s.repairCorrupt(ctx, r)
			if cur := s.hosted(r.Bucket); cur != nil && cur.Log.Offline() != nil && s.repairable(cur) {
				pending = true
			}
		}
		if pending {
			retry = time.After(repairRetry)
		}
	}
}

// repairable reports whether an offline replica can be repaired without an operator: it
// follows a leader, or it leads with another in-sync replica to hand the leadership to.
func (s *replicaManager) repairable(rep *Replica) bool {
	if rep.repl == nil {
		return false
	}
	rs := rep.repl
	rs.mu.Lock()
	st, known := rs.state, rs.known
	rs.mu.Unlock()
	if !known || st.Leader == cluster.NoLeader {
		return false
	}
	return st.Leader != s.opts.ServerID || otherInSync(st, s.opts.ServerID)
}

// otherInSync reports whether st's ISR has a member besides self.
func otherInSync(st cluster.BucketState, self int32) bool {
	for _, id := range st.ISR {
		if id != self {
			return true
		}
	}
	return false
}

// offlineKind names why rep's log is offline, for the log lines: "EIO" for a media error
// (logstore's ioFailed), else "corrupt".
func offlineKind(rep *Replica) string {
	if diskwatch.IsMediaError(rep.Log.Offline()) {
		return "EIO"
	}
	return "corrupt"
}

// resignCorrupt hands the leadership of rep, whose log is offline (a corrupt batch, or a disk
// I/O error on a segment file), to another in-sync replica through the coordinator
// (cluster.LeadershipResigner). Nothing acknowledged is lost: an acks=all write was
// acknowledged only once every ISR member held it, and the coordinator elects only an ISR
// member. The offline replica serves nothing meanwhile (every request gets
// LOG_STORAGE_EXCEPTION, which clients retry) and becomes a follower with the new state,
// which repairCorrupt then rebuilds. With no other in-sync replica the bucket stays offline
// for the operator. Caller does not hold leadMu.
func (s *replicaManager) resignCorrupt(ctx context.Context, rep *Replica, st cluster.BucketState) {
	rc, ok := s.opts.Replication.(cluster.LeadershipResigner)
	if !ok {
		return
	}
	kind := offlineKind(rep)
	if !otherInSync(st, s.opts.ServerID) {
		if rep.repl.resignRefused.CompareAndSwap(false, true) {
			s.log.Error(kind+" leader replica has no other in-sync replica to hand its leadership to; the bucket stays offline for the operator",
				"bucket", rep.Bucket, "isr", st.ISR, "cause", rep.Log.Offline())
		}
		return
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	moved, err := rc.ResignLeadership(cctx, rep.Bucket, st.LeaderEpoch)
	switch {
	case err != nil:
		s.log.Warn(kind+" leader cannot hand its leadership over yet; retrying", "bucket", rep.Bucket, "leader_epoch", st.LeaderEpoch, "err", err)
	case !moved:
		s.log.Warn(kind+" leader: the coordinator found no other live in-sync replica; retrying", "bucket", rep.Bucket, "isr", st.ISR)
	default:
		s.log.Warn(kind+" leader handed its leadership to an in-sync replica; it rebuilds itself as a follower",
			"bucket", rep.Bucket, "old_leader_epoch", st.LeaderEpoch, "cause", rep.Log.Offline())
		s.repairs.kick()
	}
}

// rebuildBackoff paces the rebuilds of one follower replica whose log went offline for a disk
// I/O error: the first runs at once, each next one waits twice as long as the one before
// (mediaRebuildFirst up to mediaRebuildMax), and a bucket whose last rebuild is older than
// mediaRebuildReset starts over. A disk that answers again is therefore rebuilt onto within
// mediaRebuildMax; one that keeps failing costs a copy from the leader at most that often.
type rebuildBackoff struct {
	last  time.Time // the last rebuild
	delay time.Duration
}

const (
	mediaRebuildFirst = time.Second
	mediaRebuildMax   = 30 * time.Second
	mediaRebuildReset = 10 * time.Minute
)

// mediaRebuildDue reports whether the follower replica of b, offline for a disk I/O error,
// may be rebuilt now, and if so records the attempt. Caller holds leadMu.
func (s *replicaManager) mediaRebuildDue(b cluster.Bucket, now time.Time) bool {
	if s.mediaRebuilds == nil {
		s.mediaRebuilds = make(map[cluster.Bucket]*rebuildBackoff)
	}
	r := s.mediaRebuilds[b]
	if r == nil || now.Sub(r.last) > mediaRebuildReset {
		s.mediaRebuilds[b] = &rebuildBackoff{last: now, delay: mediaRebuildFirst}
		return true
	}
	if now.Sub(r.last) < r.delay {
		return false
	}
	r.last, r.delay = now, min(2*r.delay, mediaRebuildMax)
	return true
}
