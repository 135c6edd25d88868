package tablet

import (
	"context"
	"time"

	"github.com/stromdb/strom/server/cluster"
	"github.com/stromdb/strom/server/kvstore"
)

// Snapshot bootstrap of primary-key replicas (docs/cluster.md, "Snapshot bootstrap").
//
// A follower copies its leader's changelog from its own log end. When the leader's log no
// longer starts at or below that offset (its retention removed the range: a follower that was
// down longer than table.log.ttl, or a new, empty replica), a log-table follower restarts its
// log at the leader's log start (restartFollowerAt), but a primary-key follower cannot: its
// state needs every change below. It loads the bucket's latest KV snapshot instead — the rows
// as of the snapshot's log offset, which the leader's retention keeps (kvsnap's floor) — and
// fetches the changelog from that offset.

// SnapshotSource opens the latest KV snapshot of a bucket (kvsnap.Manager in a server).
type SnapshotSource interface {
	// OpenLatestState returns the rows of b's newest committed snapshot and its log offset;
	// ok is false when b has no snapshot yet.
	OpenLatestState(ctx context.Context, b cluster.Bucket) (rows kvstore.SnapshotRows, logOffset int64, ok bool, err error)
}

// NeedsSnapshotBootstrap is the condition under which a replica of table t must bootstrap from
// a KV snapshot before it can follow: a primary-key table, and the replica's log ends below
// the leader's log start (the changelog it lacks is gone). A new replica has log end 0. A
// move (reassignment) that adds a replica to such a bucket completes only once the bucket has
// a snapshot at or above the leader's log start, which it has whenever that start is above 0
// (docs/kv-snapshots.md, "Schedule, retention and leases").
func NeedsSnapshotBootstrap(t *cluster.TableInfo, replicaLogEnd, leaderLogStart int64) bool {
	return t != nil && t.HasPrimaryKey() && replicaLogEnd < leaderLogStart
}

// ReplicaNeedsSnapshotBootstrap reports, on b's leader, whether a replica of b whose log ends
// at replicaLogEnd (0 for a new one) needs a snapshot bootstrap to follow this leader.
func (s *replicaManager) ReplicaNeedsSnapshotBootstrap(b cluster.Bucket, replicaLogEnd int64) (bool, error) {
	rep, err := s.replica(b)
	if err != nil {
		return false, err
	}
	return NeedsSnapshotBootstrap(rep.Table, replicaLogEnd, rep.Log.LogStartOffset()), nil
}

// LeaderEpoch returns the leader epoch at which this server leads b; leading is false when it
// does not lead b (a follower, or a bucket it does not hold).
func (s *replicaManager) LeaderEpoch(b cluster.Bucket) (epoch int32, leading bool) {
	s.mu.RLock()
	rep, ok := s.replicas[b]
	s.mu.RUnlock()
	if !ok {
		return 0, false
	}
	if rs := rep.repl; rs != nil {
		rs.mu.Lock()
		defer rs.mu.Unlock()
		return rs.state.LeaderEpoch, rs.leading.Load()
	}
	if e, ok := s.standaloneEpochs.Load(b); ok {
		return e.(int32), true
	}
	return 0, true
}

// snapshotLoadTimeout bounds one bootstrap's load.
const snapshotLoadTimeout = 10 * time.Minute

// bootstrapFromSnapshot replaces the log and state of a primary-key follower that lags behind
// the start of its leader's log (leaderStart) with the bucket's latest KV snapshot, and
// follows again from the snapshot's log offset. Without a usable snapshot it changes nothing
// and says why; the next fetch answered LOG_OFFSET_OUT_OF_RANGE tries again. It runs under
// leadMu, as restartFollowerAt: the bucket's state changes wait for the load.
func (s *replicaManager) bootstrapFromSnapshot(rep *Replica, leaderStart int64) {
	defer rep.repl.restarting.Store(false)
	if s.opts.Snapshots == nil {
		s.log.Warn("primary-key follower is behind the start of the leader's log and this server has no KV snapshots to bootstrap from",
			"bucket", rep.Bucket, "log_end", rep.Log.LogEndOffset(), "leader_log_start", leaderStart)
		return
	}
	s.leadMu.Lock()
	defer s.leadMu.Unlock()
	rep, st, ok := s.stillLagging(rep, leaderStart)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), snapshotLoadTimeout)
	defer cancel()
	rows, offset, ok, err := s.opts.Snapshots.OpenLatestState(ctx, rep.Bucket)
	switch {
	case err != nil:
		s.log.Warn("primary-key follower behind the leader's log start cannot read the latest KV snapshot", "bucket", rep.Bucket, "err", err)
		return
	case !ok:
		s.log.Warn("primary-key follower is behind the leader's log start and the bucket has no KV snapshot yet; waiting for one",
			"bucket", rep.Bucket, "log_end", rep.Log.LogEndOffset(), "leader_log_start", leaderStart)
		return
	}
	defer rows.Close()
	if offset < leaderStart {
		s.log.Warn("the latest KV snapshot is older than the leader's log start; waiting for a newer one",
			"bucket", rep.Bucket, "snapshot_log_offset", offset, "leader_log_start", leaderStart)
		return
	}
	s.log.Warn("primary-key follower is behind the start of the leader's log; bootstrapping from the latest KV snapshot",
		"bucket", rep.Bucket, "log_end", rep.Log.LogEndOffset(), "leader_log_start", leaderStart, "snapshot_log_offset", offset)
	if err := s.dropReplica(rep); err != nil {
		s.log.Error("drop lagging primary-key follower", "bucket", rep.Bucket, "err", err)
		return
	}
	start := offset
	n, err := s.kv.LoadBucket(ctx, rep.Bucket, offset, rows)
	if err != nil {
		// Start over empty: the next out-of-range answer bootstraps again.
		s.log.Error("load KV snapshot into follower", "bucket", rep.Bucket, "err", err)
		start = 0
		if _, err := s.kv.LoadBucket(ctx, rep.Bucket, 0, emptyRows{}); err != nil {
			s.log.Error("reset follower state", "bucket", rep.Bucket, "err", err)
		}
	}
	nr, err := s.openReplica(ctx, rep.Bucket, rep.Table, rep.Partition, true, start)
	if err != nil {
		s.log.Error("reopen follower after the snapshot load", "bucket", rep.Bucket, "err", err)
		return
	}
	if start > 0 {
		s.log.Info("follower bootstrapped from KV snapshot", "bucket", rep.Bucket, "rows", n, "log_offset", offset)
	}
	if err := s.becomeFollower(nr, st); err != nil {
		s.log.Error("follow again after the snapshot bootstrap", "bucket", rep.Bucket, "err", err)
	}
}

// emptyRows is a snapshot without rows.
type emptyRows struct{}

func (emptyRows) Valid() bool   { return false }
func (emptyRows) Key() []byte   { return nil }
func (emptyRows) Value() []byte { return nil }
func (emptyRows) Next()         {}
func (emptyRows) Err() error    { return nil }
func (emptyRows) Close() error  { return nil }
