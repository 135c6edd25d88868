package fluss

import (
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/record"
)

// Start offsets for Subscribe.
const (
	// EarliestOffset subscribes from the first offset still in the bucket's log.
	EarliestOffset int64 = -2
	// LatestOffset subscribes from the bucket's current end: only records written later.
	LatestOffset int64 = -1
)

// TablePath names a table: database and table name.
type TablePath struct {
	Database string
	Table    string
}

// NewTablePath returns the path of table in database.
func NewTablePath(database, table string) TablePath { return TablePath{database, table} }

// String returns "database.table".
func (p TablePath) String() string { return p.Database + "." + p.Table }

// TableBucket identifies one bucket of a table, or of one partition of a partitioned table.
// PartitionID is -1 (NoPartition) for non-partitioned tables.
type TableBucket struct {
	TableID     int64
	PartitionID int64
	Bucket      int32
}

// clientFollowerID is the follower_server_id of FETCH_LOG and LIST_OFFSETS requests sent by
// clients rather than by replicating tablet servers.
const clientFollowerID int32 = -1

// NoPartition is the PartitionID of buckets of non-partitioned tables.
const NoPartition int64 = -1

// NewTableBucket returns bucket of a non-partitioned table.
func NewTableBucket(tableID int64, bucket int32) TableBucket {
	return TableBucket{TableID: tableID, PartitionID: NoPartition, Bucket: bucket}
}

// NewPartitionBucket returns bucket of partition partitionID of a partitioned table.
func NewPartitionBucket(tableID, partitionID int64, bucket int32) TableBucket {
	return TableBucket{TableID: tableID, PartitionID: partitionID, Bucket: bucket}
}

// IsPartitioned reports whether the bucket belongs to a partition.
func (b TableBucket) IsPartitioned() bool { return b.PartitionID >= 0 }

// partitionIDField is the optional partition_id of a per-bucket request: nil for buckets of
// non-partitioned tables.
func (b TableBucket) partitionIDField() *int64 {
	if !b.IsPartitioned() {
		return nil
	}
	return proto.Int64(b.PartitionID)
}

// String returns a readable form such as "TableBucket{table=3, partition=5, bucket=0}".
func (b TableBucket) String() string {
	if b.IsPartitioned() {
		return fmt.Sprintf("TableBucket{table=%d, partition=%d, bucket=%d}", b.TableID, b.PartitionID, b.Bucket)
	}
	return fmt.Sprintf("TableBucket{table=%d, bucket=%d}", b.TableID, b.Bucket)
}

// ChangeType is the kind of change a scanned record represents.
type ChangeType byte

// Change types, with their wire values (the change-type byte of a Fluss log record).
const (
	AppendOnly   ChangeType = 0 // +A: a row of a log table
	Insert       ChangeType = 1 // +I: a new key
	UpdateBefore ChangeType = 2 // -U: the row an update replaced
	UpdateAfter  ChangeType = 3 // +U: the row after an update
	Delete       ChangeType = 4 // -D: a deleted key (carries the old row)
)

// ShortString returns "+A", "+I", "-U", "+U" or "-D".
func (c ChangeType) ShortString() string { return record.ChangeType(c).ShortString() }

// String returns the change type's name, e.g. "UpdateAfter".
func (c ChangeType) String() string {
	switch c {
	case AppendOnly:
		return "AppendOnly"
	case Insert:
		return "Insert"
	case UpdateBefore:
		return "UpdateBefore"
	case UpdateAfter:
		return "UpdateAfter"
	case Delete:
		return "Delete"
	}
	return fmt.Sprintf("ChangeType(%d)", byte(c))
}

// OffsetSpec selects which offset ListOffsets returns for each bucket.
type OffsetSpec struct {
	kind      int32 // the protocol's offset_type: one of the offsetKind constants
	timestamp int64
}

// ListOffsetsRequest.offset_type values.
const (
	offsetKindEarliest  int32 = 0
	offsetKindLatest    int32 = 1
	offsetKindTimestamp int32 = 2
)

// OffsetEarliest asks for each bucket's log start offset.
func OffsetEarliest() OffsetSpec { return OffsetSpec{kind: offsetKindEarliest} }

// OffsetLatest asks for each bucket's high watermark (the offset the next record will get).
func OffsetLatest() OffsetSpec { return OffsetSpec{kind: offsetKindLatest} }

// OffsetAtTimestamp asks for the first offset whose record timestamp is >= ts (epoch ms).
func OffsetAtTimestamp(ts int64) OffsetSpec {
	return OffsetSpec{kind: offsetKindTimestamp, timestamp: ts}
}

// ServerType is the role of a server in the cluster.
type ServerType string

// Server roles.
const (
	CoordinatorServer ServerType = "coordinator"
	TabletServer      ServerType = "tablet"
)

// ServerNode is a server of the cluster as reported by metadata.
type ServerNode struct {
	ID   int32
	Host string
	Port int32
	Type ServerType
}

// Addr returns "host:port".
func (n ServerNode) Addr() string { return fmt.Sprintf("%s:%d", n.Host, n.Port) }

// uid is the connection-pool key: servers of each role have their own id space.
func (n ServerNode) uid() string {
	if n.Type == CoordinatorServer {
		return fmt.Sprintf("cs-%d", n.ID)
	}
	return fmt.Sprintf("ts-%d", n.ID)
}

// PartitionInfo describes one partition of a partitioned table.
type PartitionInfo struct {
	ID   int64
	Name string // values joined with '$' in partition-key order
	// Spec maps each partition key to its value.
	Spec map[string]string
}

// DatabaseInfo describes a database.
type DatabaseInfo struct {
	Name         string
	Descriptor   DatabaseDescriptor
	CreatedTime  int64 // epoch ms
	ModifiedTime int64 // epoch ms
}

// LakeSnapshot is the latest snapshot of a table tiered to a data lake.
type LakeSnapshot struct {
	SnapshotID int64
	// BucketOffsets maps each tiered bucket to the log offset the snapshot covers.
	BucketOffsets map[TableBucket]int64
}
