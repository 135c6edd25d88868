package tablet

import (
	"slices"
	"time"

	"github.com/stromdb/strom/server/cluster"
)

// ReplicaProgress is what the leader of a replicated bucket knows of its followers: the
// numbers behind the ISR decisions (docs/cluster.md, "Replication inside the tablet
// server"), reported to operators by the node's HTTP listener and the console.
type ReplicaProgress struct {
	Bucket        cluster.Bucket
	LeaderEpoch   int32
	ISR           []int32
	LogEndOffset  int64 // the leader's
	HighWatermark int64
	Followers     []FollowerProgress // by id
}

// FollowerProgress is one follower as its leader sees it.
type FollowerProgress struct {
	ID int32
	// LogEndOffset is the offset the follower last fetched from (its durable log end), -1
	// until it fetched in this leadership.
	LogEndOffset int64
	// Lag is the leader's log end minus the follower's, in records; -1 while unknown.
	Lag int64
	// LastCaughtUp is when the follower last was at the leader's log end (Kafka's rule);
	// a follower not caught up within log.replica.max-lag-time leaves the ISR.
	LastCaughtUp time.Time
}

// LeaderProgress returns the progress of the followers of every replicated bucket this
// server leads of a table (partitionID cluster.NoPartition) or partition, by bucket id.
// Standalone buckets (replicas exactly this server) have no followers and are left out.
func (s *Server) LeaderProgress(tableID, partitionID int64) []ReplicaProgress {
	var out []ReplicaProgress
	for _, r := range s.Replicas() {
		rs := r.repl
		if r.Bucket.TableID != tableID || r.Bucket.PartitionID != partitionID || rs == nil {
			continue
		}
		leo := r.Log.LogEndOffset()
		rs.mu.Lock()
		if !rs.leading.Load() {
			rs.mu.Unlock()
			continue
		}
		p := ReplicaProgress{Bucket: r.Bucket, LeaderEpoch: rs.state.LeaderEpoch, ISR: slices.Clone(rs.state.ISR),
			LogEndOffset: leo, HighWatermark: r.Log.HighWatermark()}
		for id, f := range rs.followers {
			fp := FollowerProgress{ID: id, LogEndOffset: f.leo, Lag: -1, LastCaughtUp: f.lastCaughtUp}
			if f.leo >= 0 {
				fp.Lag = max(leo-f.leo, 0)
			}
			p.Followers = append(p.Followers, fp)
		}
		rs.mu.Unlock()
		slices.SortFunc(p.Followers, func(a, b FollowerProgress) int { return int(a.ID - b.ID) })
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b ReplicaProgress) int { return int(a.Bucket.Bucket - b.Bucket.Bucket) })
	return out
}
