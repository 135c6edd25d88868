// Package cluster holds what the coordinator and the tablet server share: the catalog view of
// tables and partitions, the interface through which the coordinator tells a tablet server
// which buckets it leads, and the topology of listeners used to answer GET_METADATA.
//
// In the single-node server both roles live in one process and these interfaces are plain
// method calls; a multi-node deployment puts the same calls on the wire.
package cluster

import (
	"context"
	"fmt"

	"github.com/stromdb/strom/internal/metadata"
)

// TablePath names a table.
type TablePath struct {
	Database string
	Table    string
}

func (p TablePath) String() string { return p.Database + "." + p.Table }

// TableInfo is the coordinator's registration of a table. It is immutable once published:
// an update produces a new *TableInfo.
type TableInfo struct {
	Path       TablePath
	ID         int64
	SchemaID   int32
	Descriptor metadata.TableDescriptor // as stored, defaults applied
	// DescriptorJSON is Descriptor's Fluss JSON form, served as table_json.
	DescriptorJSON []byte
	CreatedMs      int64
	ModifiedMs     int64
}

// NumBuckets returns the table's bucket count (per partition for partitioned tables).
func (t *TableInfo) NumBuckets() int32 { return t.Descriptor.BucketCount }

// Partitioned reports whether the table has partition keys.
func (t *TableInfo) Partitioned() bool { return len(t.Descriptor.PartitionKeys) > 0 }

// HasPrimaryKey reports whether the table is a primary-key table.
func (t *TableInfo) HasPrimaryKey() bool { return len(t.Descriptor.Schema.PrimaryKey) > 0 }

// PartitionInfo is one partition of a partitioned table.
type PartitionInfo struct {
	TableID int64
	ID      int64
	// Name is the partition values joined with '$' in partition-key order.
	Name string
	// Values are the partition values in partition-key order.
	Values []string
}

// Bucket identifies one bucket of a table, or of a partition when PartitionID >= 0.
type Bucket struct {
	TableID     int64
	PartitionID int64 // -1 for non-partitioned tables
	Bucket      int32
}

// NoPartition is the PartitionID of buckets of non-partitioned tables.
const NoPartition int64 = -1

func (b Bucket) String() string {
	if b.PartitionID == NoPartition {
		return fmt.Sprintf("table %d bucket %d", b.TableID, b.Bucket)
	}
	return fmt.Sprintf("table %d partition %d bucket %d", b.TableID, b.PartitionID, b.Bucket)
}

// Catalog is the read side of the coordinator's metadata, as the tablet server needs it.
type Catalog interface {
	TableByID(id int64) (*TableInfo, bool)
	TableByPath(p TablePath) (*TableInfo, bool)
	// Schema returns the schema with the given id of a table.
	Schema(tableID int64, schemaID int32) (metadata.Schema, bool)
	PartitionByID(id int64) (*PartitionInfo, bool)
	PartitionByName(tableID int64, name string) (*PartitionInfo, bool)
	Partitions(tableID int64) []*PartitionInfo
}

// ReplicaManager is what a tablet server exposes to the coordinator: becoming leader of the
// buckets of a new table or partition, and dropping them.
type ReplicaManager interface {
	// BecomeLeader opens (creating if needed) storage for every bucket of the table, or of
	// one partition when partition is non-nil, and starts serving them. It returns once the
	// buckets accept reads and writes.
	BecomeLeader(ctx context.Context, table *TableInfo, partition *PartitionInfo) error
	// StopReplicas stops serving and deletes the buckets of a dropped table (partitionID ==
	// NoPartition) or partition.
	StopReplicas(ctx context.Context, tableID, partitionID int64) error
}

// BucketStateApplier is the replica side of the replication contract (docs/cluster.md): the
// tablet server applies the bucket states the control plane decided. It is separate from
// ReplicaManager until the coordinator switches to it (its test fakes implement only
// ReplicaManager).
type BucketStateApplier interface {
	// ApplyBucketStates makes this server leader or follower of each bucket, or stops and
	// deletes its replica when the state no longer lists it. An update not Newer than the
	// state held is ignored (except the first for a bucket). It returns once every bucket
	// this server leads accepts reads and writes; followers are set up without waiting for
	// them to catch up.
	ApplyBucketStates(ctx context.Context, updates []BucketUpdate) error
}
