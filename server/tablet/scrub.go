package tablet

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"github.com/stromdb/strom/internal/options"
	"github.com/stromdb/strom/server/cluster"
	"github.com/stromdb/strom/server/diskwatch"
	"github.com/stromdb/strom/server/logstore"
)

// ScrubStats counts what the scrubber did since the server started.
type ScrubStats struct {
	Bytes    int64 // bytes of sealed segments re-read and checked
	Corrupt  int64 // replicas found corrupt by the scrubber
	Repaired int64 // corrupt replicas, and replicas offline for a disk I/O error, rebuilt from their leader
	Cut      int64 // of Repaired: corrupt logs cut at their last good batch rather than rebuilt whole
}

// scrubCounters are the live ScrubStats.
type scrubCounters struct {
	bytes, corrupt, repaired, cut atomic.Int64
}

// ScrubStats returns the scrubber's counters; zero for a nil Server.
func (s *Server) ScrubStats() ScrubStats {
	if s == nil || s.buckets == nil {
		return ScrubStats{} // a node without a tablet server
	}
	c := &s.buckets.scrubbed
	return ScrubStats{Bytes: c.bytes.Load(), Corrupt: c.corrupt.Load(), Repaired: c.repaired.Load(), Cut: c.cut.Load()}
}

// runScrubber re-checks the sealed segments of every log this server holds, one pass every
// log.scrub.interval at log.scrub.rate bytes per second, until ctx ends
// (docs/durability.md, "The scrubber"). A replica found corrupt — by the scrubber or earlier
// by a read — goes offline and, when it follows a leader, is rebuilt from that leader.
func (s *replicaManager) runScrubber(ctx context.Context) {
	bps, err := options.LogScrubRate.Get(s.opts.Config.Raw)
	if err != nil || bps <= 0 {
		return // checked at start (config.Finish); 0 turns the scrubber off
	}
	interval, err := options.LogScrubInterval.Get(s.opts.Config.Raw)
	if err != nil {
		return
	}
	lim := rate.NewLimiter(rate.Limit(bps), int(min(bps, 1<<20)))
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(interval):
		}
		for _, r := range s.Replicas() {
			if ctx.Err() != nil {
				return
			}
			s.scrubReplica(ctx, r, lim)
		}
	}
}

// scrubReplica checks one replica's log and repairs it when it is corrupt.
func (s *replicaManager) scrubReplica(ctx context.Context, r *Replica, lim *rate.Limiter) {
	if r.Log.Offline() != nil {
		s.repairCorrupt(ctx, r) // found by a read, or by an earlier pass whose repair could not run
		return
	}
	res, err := r.Log.Scrub(ctx, lim)
	s.scrubbed.bytes.Add(res.Bytes)
	switch {
	case res.Corrupt != nil:
		s.scrubbed.corrupt.Add(1)
		s.log.Warn("scrubber: bytes of a sealed log segment went bad after they were written; replica offline",
			"bucket", r.Bucket, "file", res.Corrupt.File, "position", res.Corrupt.Position, "offset", res.Corrupt.Offset, "cause", res.Corrupt.Cause)
		s.repairCorrupt(ctx, r)
	case err != nil && ctx.Err() == nil && !errors.Is(err, logstore.ErrClosed):
		s.log.Warn("scrubber: cannot check a log", "bucket", r.Bucket, "err", err)
	}
}

// repairCorrupt repairs the offline log of a replicated replica (docs/durability.md, "The
// scrubber"):
//
//   - a follower is rebuilt from its leader: the corrupt log (and a primary-key bucket's
//     state) is dropped and an empty one follows the leader again, which copies every batch
//     back. A log table restarts at its old log start (the leader's retention may move that
//     start up: restartFollowerAt); a primary-key bucket at 0, so that its state is rebuilt
//     from the whole changelog, or from a KV snapshot when the leader's changelog starts later
//     (bootstrapFromSnapshot). Until the copy catches up it is out of the ISR; the bucket
//     keeps serving from its leader.
//   - a leader resigns first (resignCorrupt): the coordinator elects another in-sync replica,
//     and the state that makes this replica a follower brings it back here.
//
// A log offline for a disk I/O error (EIO on a segment write or sync) is handled the same
// way — its leadership moves, the follower is rebuilt — except that the rebuilds of a
// follower are paced (mediaRebuildDue): a disk that still fails takes the new log offline at
// its first append, and each attempt costs a copy from the leader.
//
// A standalone bucket, or a leader with no other live in-sync replica, stays offline for the
// operator (docs/durability.md, "Operator procedure for an offline bucket").
func (s *replicaManager) repairCorrupt(ctx context.Context, rep *Replica) {
	s.leadMu.Lock()
	cur := s.hosted(rep.Bucket)
	if s.closed || cur == nil || cur.Log != rep.Log || cur.repl == nil || cur.Log.Offline() == nil {
		s.leadMu.Unlock()
		return
	}
	rs := cur.repl
	rs.mu.Lock()
	st, known, leading := rs.state, rs.known, rs.leading.Load()
	rs.mu.Unlock()
	if known && (leading || st.Leader == s.opts.ServerID) {
		// Resigning goes through the coordinator, whose new state comes back through
		// ApplyBucketStates (leadMu) — in process when this node is the coordinator.
		s.leadMu.Unlock()
		s.resignCorrupt(ctx, cur, st)
		return
	}
	defer s.leadMu.Unlock()
	if !known || st.Leader == cluster.NoLeader {
		return
	}
	cause := cur.Log.Offline()
	media := diskwatch.IsMediaError(cause)
	if media && !s.mediaRebuildDue(cur.Bucket, time.Now()) {
		return // the disk failed the last rebuild too recently; runRepairs comes back
	}
	start := cur.Log.LogStartOffset()
	if cur.KV != nil {
		start = 0
	}
	if !media && cur.KV == nil {
		if s.cutCorruptFollower(ctx, cur, st) {
			return
		}
		// The cut failed; cur is closed, its directory as the cut left it: rebuild it whole.
	}
	if media {
		s.log.Warn("rebuilding a follower log offline for a disk I/O error from its leader", "bucket", cur.Bucket, "leader", st.Leader,
			"from_offset", start, "primary_key", cur.KV != nil, "cause", cause)
	} else {
		s.log.Warn("repairing a corrupt follower log from its leader", "bucket", cur.Bucket, "leader", st.Leader, "from_offset", start, "primary_key", cur.KV != nil)
	}
	if err := s.dropReplica(cur); err != nil {
		s.log.Error("drop corrupt follower log", "bucket", cur.Bucket, "err", err)
		return
	}
	nr, err := s.openReplica(ctx, cur.Bucket, cur.Table, cur.Partition, true, start)
	if err != nil {
		s.log.Error("reopen corrupt follower log", "bucket", cur.Bucket, "err", err)
		return
	}
	if err := s.becomeFollower(nr, st); err != nil {
		s.log.Error("follow again after rebuilding a corrupt log", "bucket", cur.Bucket, "err", err)
		return
	}
	s.scrubbed.repaired.Add(1)
}

// cutCorruptFollower repairs the corrupt log of a log table's follower replica cur by
// cutting it at the corrupt batch and fetching the rest from the leader, instead of copying
// the whole bucket again (docs/durability.md, "The scrubber"):
//
//  1. cur is closed and the log cut where the corruption marker says (logstore's
//     AcceptTruncation: the bad batch and every batch after it go, later segments too);
//  2. the log is opened again (recovery runs in full: no clean marker) and every sealed
//     segment re-read and checked (Scrub), so the kept prefix is byte-for-byte what passed
//     its CRC-32C checks;
//  3. it follows the leader as any restarted follower does: the leader-epoch lineage
//     truncates whatever the kept prefix has that the leader's log does not (the epoch cache
//     is cut to the new log end at open), and the fetcher copies the rest.
//
// A batch that passed its CRC at the same offset and leader epoch as the leader's is the
// leader's batch (the epoch-lineage invariant every follower truncation relies on), so the
// repaired log ends byte-identical to the leader's. Primary-key buckets are rebuilt whole:
// their state may have applied batches the cut removes. It reports false when any step
// failed; cur is then closed and out of the replica set, and the caller rebuilds the bucket
// whole. Caller holds leadMu.
func (s *replicaManager) cutCorruptFollower(ctx context.Context, cur *Replica, st cluster.BucketState) bool {
	dir := bucketDir(s.opts.DataDir, cur.Bucket)
	leo, start := cur.Log.LogEndOffset(), cur.Log.LogStartOffset()
	if err := s.closeReplica(cur); err != nil {
		s.log.Warn("close corrupt follower log before cutting it", "bucket", cur.Bucket, "err", err)
	}
	rep, err := logstore.AcceptTruncation(dir)
	if err != nil {
		s.log.Warn("cannot cut the corrupt follower log at its last good batch; rebuilding it whole", "bucket", cur.Bucket, "err", err)
		return false
	}
	nr, err := s.openReplica(ctx, cur.Bucket, cur.Table, cur.Partition, true, start)
	if err != nil {
		s.log.Warn("cannot reopen the cut follower log; rebuilding it whole", "bucket", cur.Bucket, "err", err)
		return false
	}
	fail := func(why string, err error) bool {
		s.log.Warn(why+"; rebuilding it whole", "bucket", cur.Bucket, "err", err)
		if cerr := s.closeReplica(nr); cerr != nil {
			s.log.Warn("close the cut follower log", "bucket", cur.Bucket, "err", cerr)
		}
		return false
	}
	if err := nr.Log.Offline(); err != nil {
		return fail("the cut follower log is still corrupt", err)
	}
	res, err := nr.Log.Scrub(ctx, nil)
	s.scrubbed.bytes.Add(res.Bytes)
	if res.Corrupt != nil || err != nil {
		return fail("the kept part of the cut follower log does not check", err)
	}
	if err := nr.Log.ClearOperatorTruncation(); err != nil { // no state derives from a log table's log
		return fail("clear the cut marker", err)
	}
	if err := s.becomeFollower(nr, st); err != nil {
		s.log.Error("follow again after cutting a corrupt log", "bucket", cur.Bucket, "err", err)
		return true // the log is sound; the next state makes it follow
	}
	s.log.Warn("repairing a corrupt follower log from its leader: cut at the last good batch, the rest fetched again",
		"bucket", cur.Bucket, "leader", st.Leader, "cut_at_offset", rep.LogEnd, "log_end_before", leo,
		"removed_bytes", rep.RemovedBytes, "removed_segments", len(rep.RemovedSegments), "kept_checked_bytes", res.Bytes)
	s.scrubbed.repaired.Add(1)
	s.scrubbed.cut.Add(1)
	return true
}
