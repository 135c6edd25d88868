package lakeconf

import (
	"errors"
	"math"
)

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

// RetentionFloor is the first offset of a bucket that retention must keep for the tiering:
// MaxInt64 (no constraint) when its table is not tiered, else the bucket's tiered offset in
// committed, which is nil while the table's offsets are not known (before the tiering read
// them back from Iceberg, after a failed commit, while the tiering restarts): then 0, keep
// everything.
func RetentionFloor(tiered bool, committed Offsets, b BucketKey) int64 {
	if !tiered {
		return math.MaxInt64
	}
	return committed[b] // 0 when committed is nil or lacks b
}
