package lakeconf

import "errors"

// BucketKey names one bucket of a table: PartitionID is cluster.NoPartition for
// non-partitioned tables.
type BucketKey struct {
	PartitionID int64
	Bucket      int32
}

// Offsets maps each tiered bucket of one table to its tiered log end offset: the offset of the
// first record not yet in Iceberg.
type Offsets map[BucketKey]int64

// LakeSnapshot is one tiering commit: its Iceberg snapshot id and the tiered log end offset
// of every bucket tiered so far.
type LakeSnapshot struct {
	SnapshotID int64
	TableID    int64
	Offsets    Offsets
}

// ErrNoSnapshot is returned when the table has no snapshot committed by the tiering.
var ErrNoSnapshot = errors.New("no lake snapshot")
