package coordinator

import (
	"context"

	"github.com/stromdb/strom/server/cluster"
	"github.com/stromdb/strom/server/meta"
)

// Cluster is the control plane of a multi-node cluster as the coordinator uses it
// (server/control implements it). Options.Cluster is nil on the single node, which keeps its
// own path: every bucket led by the one tablet server, opened in process. Each service is
// handed only the part it needs: election (whether this node may write), placement (bucket
// states of creations and drops) or bucketStateReader (answering where buckets are).
//
// In a cluster the coordinator's store is fenced (meta.FencedStore): every DDL write fails
// with NOT_COORDINATOR_LEADER unless this node is the active coordinator, and a creation
// writes the bucket states Assign returns in the same transaction as the table or partition.
type Cluster interface {
	election
	placement
	bucketStateReader
}

// election says whether this node is the active coordinator.
type election interface {
	// Active reports whether this node is the active coordinator.
	Active() bool
}

// placement places and removes the buckets of tables and partitions.
type placement interface {
	// Assign places the buckets of a new table (partitionID NoPartition) or partition: the
	// puts of their states and the states themselves, or INVALID_REPLICATION_FACTOR.
	Assign(t *cluster.TableInfo, partitionID int64) ([]meta.Op, map[cluster.Bucket]cluster.BucketState, error)
	// DropOps returns the deletes of a dropped table's or partition's states.
	DropOps(tableID, partitionID int64) []meta.Op
	// Created tells the replicas of a committed creation and waits, bounded, for the leaders.
	Created(ctx context.Context, t *cluster.TableInfo, p *cluster.PartitionInfo, states map[cluster.Bucket]cluster.BucketState)
	// Dropped is called after a committed drop.
	Dropped(ctx context.Context, tableID, partitionID int64)
}

// bucketStateReader reads the stored bucket states.
type bucketStateReader interface {
	// BucketStates returns the states of n buckets of a table or partition.
	BucketStates(tableID, partitionID int64, n int32) ([]cluster.BucketState, []bool)
}

// role is the node's place in a cluster as the services see it; the zero role is the single
// node.
type role struct{ election election }

// clustered reports whether the coordinator runs in a cluster.
func (r role) clustered() bool { return r.election != nil }

// standby reports whether this coordinator is a standby of a cluster: it serves catalog
// reads from its cache and refuses (or forwards) writes.
func (r role) standby() bool { return r.election != nil && !r.election.Active() }

// roleOf returns the role of a node whose control plane is cl (nil: the single node).
func roleOf(cl Cluster) role {
	if cl == nil {
		return role{}
	}
	return role{election: cl}
}
