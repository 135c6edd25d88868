package tablet

import (
	"context"
	"errors"
	"github.com/stromdb/strom/server/journal"
	"log/slog"
	"sync"
	"time"

	"github.com/stromdb/strom/server/cluster"
	"github.com/stromdb/strom/server/config"
	"github.com/stromdb/strom/server/kvstore"
	"github.com/stromdb/strom/server/logstore"
)

// replicaManager is the bucket lifecycle of the tablet server (Fluss's ReplicaManager): which
// buckets it holds, their storage (a log per bucket under Options.DataDir, the primary-key
// state in the shared Pebble store) and the state each was last given. It opens, closes and
// drops replicas (tablet.go, replication.go, strays.go), applies bucket states by handing
// replicated buckets to the leader or follower side (bucketRoles), replaces the log of a
// follower left behind its leader's log start (restartFollowerAt, bootstrapFromSnapshot), and
// answers which replicas it holds and leads to the other services (replicaLookup) and to the
// rest of the node.
//
// Invariants: leadMu serialises every change of the set of replicas and of their states
// (BecomeLeader, ApplyBucketStates, StopReplicas, UpdateTable, the restarts), so a bucket
// directory is never opened twice or re-created while it is being dropped; mu guards the
// replicas map alone, which readers take without leadMu.
type replicaManager struct {
	opts replicaManagerOptions
	log  *slog.Logger
	kv   *kvstore.Store
	// journal is the server-wide group-commit journal (nil when off and never used); logs
	// get it through logOptions when log.journal.mode is auto.
	journal *journal.Journal

	leadMu   sync.Mutex
	mu       sync.RWMutex // guards replicas
	replicas map[cluster.Bucket]*Replica

	standalone map[cluster.Bucket]cluster.BucketState // states held for single-replica buckets; guarded by leadMu
	// standaloneMu also guards standalone while ApplyBucketStates (holding leadMu) applies
	// several buckets at once; code holding leadMu outside that call needs no standaloneMu.
	standaloneMu sync.Mutex
	closed       bool // close ran; guarded by leadMu

	// standaloneEpochs holds the leader epoch of each standalone bucket (int32), readable
	// without leadMu (KV snapshots fence their commits with it).
	standaloneEpochs sync.Map

	scrubbed scrubCounters // the scrubber's counters (scrub.go)
	repairs  repairQueue   // wakes runRepairs (corrupt_repair.go)
	// mediaRebuilds paces the rebuilds of follower replicas offline for a disk I/O error
	// (corrupt_repair.go); guarded by leadMu.
	mediaRebuilds map[cluster.Bucket]*rebuildBackoff

	bucketRoles
}

// replicaManagerOptions are the parts of Options replicaManager reads.
type replicaManagerOptions struct {
	DataDir        string
	ServerID       int32
	Catalog        cluster.Catalog
	Config         config.Config
	Now            func() time.Time
	RetentionFloor func(cluster.Bucket) int64
	Snapshots      SnapshotSource
	Replication    cluster.ReplicationControl
}

// bucketRoles are the two sides of replication a replicated bucket is handed to.
type bucketRoles interface {
	becomeLeader(ctx context.Context, rep *Replica, st cluster.BucketState) error // leadership
	stopLeading(rep *Replica)                                                     // leadership
	awaitISRChanges()                                                             // leadership
	becomeFollower(rep *Replica, st cluster.BucketState) error                    // following
	stopFollowing(rep *Replica)                                                   // following
	stopFetchers()                                                                // following
}

// roles is bucketRoles over the two services.
type roles struct {
	*leadership
	*following
}

// checkpointHighWatermarks writes the high watermark of every replicated log to its
// checkpoint file.
func (s *replicaManager) checkpointHighWatermarks() {
	for _, r := range s.Replicas() {
		if r.repl != nil {
			if err := r.Log.Replica().CheckpointHighWatermark(); err != nil && !errors.Is(err, logstore.ErrClosed) {
				s.log.Warn("high-watermark checkpoint failed", "bucket", r.Bucket, "err", err)
			}
		}
	}
}

// enforceRetention checkpoints the Pebble store and deletes expired log segments.
func (s *replicaManager) enforceRetention() {
	s.mu.RLock()
	rs := make([]*Replica, 0, len(s.replicas))
	for _, r := range s.replicas {
		rs = append(rs, r)
	}
	s.mu.RUnlock()
	if err := s.kv.Checkpoint(); err != nil {
		s.log.Warn("kv checkpoint failed", "err", err)
	}
	for _, r := range rs {
		if _, err := r.Log.Retention().DeleteExpiredSegments(s.opts.Now().UnixMilli()); err != nil {
			s.log.Warn("log retention failed", "bucket", r.Bucket, "err", err)
		}
	}
}

// close stops the replication of every bucket and closes it; later state changes fail.
func (s *replicaManager) close() error {
	s.leadMu.Lock()
	defer s.leadMu.Unlock()
	s.closed = true
	for _, r := range s.Replicas() {
		s.stopReplication(r)
	}
	s.stopFetchers()
	s.awaitISRChanges()
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	for k, r := range s.replicas {
		if r.KV != nil {
			r.KV.Close()
		}
		errs = append(errs, r.Log.Close())
		delete(s.replicas, k)
	}
	errs = append(errs, s.kv.Close())
	errs = append(errs, closeJournal(s.journal))
	return errors.Join(errs...)
}
