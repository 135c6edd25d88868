package cluster

import (
	"context"
	"slices"
)

// NoLeader is BucketState.Leader while no replica leads the bucket (none of the in-sync
// replicas is alive, and unclean election is off).
const NoLeader int32 = -1

// BucketState is a bucket's replication record, stored in the metadata store (etcd) and
// changed only by compare-and-swap transactions (see docs/cluster.md). It is Fluss's
// LeaderAndIsr plus the replica assignment.
//
// Invariants: Leader is NoLeader or a member of ISR; ISR is a subset of Replicas; a leader
// change increments LeaderEpoch and BucketEpoch; an ISR-only change increments BucketEpoch.
type BucketState struct {
	Replicas         []int32 `json:"replicas"`
	Leader           int32   `json:"leader"`
	LeaderEpoch      int32   `json:"leader_epoch"`
	ISR              []int32 `json:"isr"`
	CoordinatorEpoch int64   `json:"coordinator_epoch"`
	BucketEpoch      int32   `json:"bucket_epoch"`
}

// InISR reports whether server id is in the in-sync replica set.
func (s BucketState) InISR(id int32) bool { return slices.Contains(s.ISR, id) }

// IsReplica reports whether server id holds a replica of the bucket.
func (s BucketState) IsReplica(id int32) bool { return slices.Contains(s.Replicas, id) }

// Newer reports whether s is a later version of the record than o: a higher leader epoch,
// or the same leader epoch and a higher bucket epoch. Replicas apply a state only if it is
// newer than the one they hold, so a late or repeated notification is harmless.
func (s BucketState) Newer(o BucketState) bool {
	if s.LeaderEpoch != o.LeaderEpoch {
		return s.LeaderEpoch > o.LeaderEpoch
	}
	return s.BucketEpoch > o.BucketEpoch
}

// BucketUpdate tells a tablet server the replication state of one bucket.
type BucketUpdate struct {
	Table     *TableInfo
	Partition *PartitionInfo // nil for non-partitioned tables
	Bucket    Bucket
	State     BucketState
}

// EpochStart is one entry of a leader's epoch lineage: the first offset written under a
// leader epoch. A follower compares the leader's lineage with its own to find where its log
// stops agreeing with the leader's, and truncates there (docs/cluster.md, "Replication inside the tablet server").
type EpochStart struct {
	Epoch       int32 `json:"epoch"`
	StartOffset int64 `json:"start_offset"`
}

// Lineage is the epoch lineage the leader of LeaderEpoch published: every epoch its log
// holds, ending with LeaderEpoch itself, whose StartOffset was the leader's log end at its
// promotion.
type Lineage struct {
	LeaderEpoch int32        `json:"leader_epoch"`
	Entries     []EpochStart `json:"entries"`
}

// ReplicationControl is what a tablet server needs from the control plane to replicate a
// bucket. The control plane implements it over the metadata store; tests may fake it.
type ReplicationControl interface {
	// AdjustISR replaces the ISR of bucket b, which this server leads under expect
	// (compared by LeaderEpoch and BucketEpoch). It returns the stored new state (BucketEpoch
	// incremented), or a ferr error: FENCED_LEADER_EPOCH when the stored state moved on, or
	// INVALID_UPDATE_VERSION for an ISR that breaks the invariants.
	AdjustISR(ctx context.Context, b Bucket, expect BucketState, isr []int32) (BucketState, error)
	// PublishLineage stores the lineage of the leader of epoch l.LeaderEpoch; it fails with
	// FENCED_LEADER_EPOCH when the bucket's leader epoch is no longer l.LeaderEpoch.
	PublishLineage(ctx context.Context, b Bucket, l Lineage) error
	// Lineage returns the latest published lineage of b, ok false if none was published.
	Lineage(ctx context.Context, b Bucket) (l Lineage, ok bool, err error)
	// ReplicationAddr returns the host:port of server id's internal listener, where
	// followers fetch from it; ok false when the server is not registered (not alive).
	ReplicationAddr(id int32) (addr string, ok bool)
}

// LineageLister is implemented by a ReplicationControl that reads the lineages of many
// buckets at once: a server whose followers wait for thousands of lineages after a failover
// reads them per table instead of per bucket (docs/cluster.md, "Scale").
type LineageLister interface {
	// TableLineages returns the published lineages of the buckets of one table (partitionID
	// NoPartition) or of one partition; a bucket without one is absent.
	TableLineages(ctx context.Context, tableID, partitionID int64) (map[Bucket]Lineage, error)
}

// LeadershipResigner is implemented by a ReplicationControl that can move the leadership of
// one bucket away from this server through the active coordinator's election: what a leader
// whose replica is corrupt asks for (docs/durability.md, "The scrubber"). moved is false
// with a nil error when the bucket has no other live in-sync replica and keeps its leader.
type LeadershipResigner interface {
	ResignLeadership(ctx context.Context, b Bucket, leaderEpoch int32) (moved bool, err error)
}
