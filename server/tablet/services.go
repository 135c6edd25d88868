package tablet

import (
	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/batchstats"
	"github.com/stromdb/strom/internal/record"
	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
	"github.com/stromdb/strom/server/cluster"
)

// The narrow interfaces between the tablet server's services (docs/architecture.md, "The
// tablet server's services"). A service embeds the interfaces of what it calls, so a handler
// reads as it would on one type while the compiler holds each service to its list; Server
// wires every service to the others.

// replicaLookup finds the replica of a bucket (replicaManager).
type replicaLookup interface {
	// replica returns the bucket's replica for a client's data request: this server must
	// lead it (NOT_LEADER_OR_FOLLOWER, UNKNOWN_TABLE_OR_BUCKET otherwise).
	replica(b cluster.Bucket) (*Replica, error)
}

// replicaHolder lists the replicas held, whatever their role (replicaManager).
type replicaHolder interface {
	hosted(b cluster.Bucket) *Replica // nil if this server holds none
	Replicas() []*Replica
}

// leadingControl ends a leadership (leadership).
type leadingControl interface {
	stopLeading(rep *Replica)
}

// followingControl ends a bucket's following (following).
type followingControl interface {
	stopFollowing(rep *Replica)
}

// lagRecovery replaces the log of a follower left behind its leader's log start
// (replicaManager, under its lock of the bucket states).
type lagRecovery interface {
	restartFollowerAt(rep *Replica, start int64)           // a log table: an empty log there
	bootstrapFromSnapshot(rep *Replica, leaderStart int64) // a primary-key table: its latest KV snapshot
}

// writeAdmission admits client writes to replicated buckets (leadership).
type writeAdmission interface {
	// admitWrite checks that this server leads rep and, for acks=-1, that the ISR is large
	// enough; it returns the fence of the current leadership. The caller holds
	// rep.repl.roleMu for reading until its append is done.
	admitWrite(rep *Replica, acks int32) (<-chan struct{}, error)
}

// followerFetches serves the FETCH_LOG of a follower (leadership).
type followerFetches interface {
	// serveFollowerFetch answers r, a fetch with follower_server_id set, decoded from req.
	serveFollowerFetch(req *wire.Request, r *flusspb.FetchLogRequest) (proto.Message, error)
}

// statsRecorder records the statistics of appended batches for filtered fetches
// (fetchService).
type statsRecorder interface {
	// noteAppended records stats[i] as the statistics of batches[i], whose offsets are
	// assigned, computing those that are nil.
	noteAppended(rep *Replica, batches []record.Batch, stats []*batchstats.Batch)
}
