package lake

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/stromdb/strom/server/cluster"
	"github.com/stromdb/strom/server/lakeconf"
)

// BucketKey and Offsets are lakeconf's, shared with the tablet server's lake host.
type (
	BucketKey = lakeconf.BucketKey
	Offsets   = lakeconf.Offsets
)

// offsetsFile is Fluss's TableBucketOffsets JSON (TableBucketOffsetsJsonSerde, version 1):
// per bucket id an offset, -1 for a bucket with none, grouped by partition for partitioned
// tables. The tiering writes one such file per commit and names it in the snapshot summary.
type offsetsFile struct {
	Version          int               `json:"version"`
	TableID          int64             `json:"table_id"`
	BucketOffsets    []int64           `json:"bucket_offsets,omitempty"`
	PartitionOffsets []partitionOffset `json:"partition_offsets,omitempty"`
}

type partitionOffset struct {
	PartitionID   int64   `json:"partition_id"`
	BucketOffsets []int64 `json:"bucket_offsets"`
}

const unknownOffset = -1

// EncodeOffsets renders o in Fluss's offsets-file JSON.
func EncodeOffsets(tableID int64, o Offsets) ([]byte, error) {
	f := offsetsFile{Version: 1, TableID: tableID}
	byPartition := map[int64][]int64{}
	for k, off := range o {
		bs := byPartition[k.PartitionID]
		for int32(len(bs)) <= k.Bucket {
			bs = append(bs, unknownOffset)
		}
		bs[k.Bucket] = off
		byPartition[k.PartitionID] = bs
	}
	if bs, ok := byPartition[cluster.NoPartition]; ok {
		if len(byPartition) > 1 {
			return nil, fmt.Errorf("offsets mix partitioned and non-partitioned buckets")
		}
		f.BucketOffsets = bs
	} else {
		for _, pid := range slices.Sorted(maps.Keys(byPartition)) {
			f.PartitionOffsets = append(f.PartitionOffsets, partitionOffset{PartitionID: pid, BucketOffsets: byPartition[pid]})
		}
	}
	return json.Marshal(f)
}

// DecodeOffsets parses Fluss's offsets-file JSON.
func DecodeOffsets(data []byte) (tableID int64, o Offsets, err error) {
	var f offsetsFile
	if err := json.Unmarshal(data, &f); err != nil {
		return 0, nil, fmt.Errorf("parse offsets file: %w", err)
	}
	if f.Version != 1 {
		return 0, nil, fmt.Errorf("unsupported offsets file version %d", f.Version)
	}
	if f.BucketOffsets != nil && f.PartitionOffsets != nil {
		return 0, nil, fmt.Errorf("offsets file has both bucket_offsets and partition_offsets")
	}
	o = Offsets{}
	add := func(pid int64, bs []int64) {
		for b, off := range bs {
			if off != unknownOffset {
				o[BucketKey{PartitionID: pid, Bucket: int32(b)}] = off
			}
		}
	}
	add(cluster.NoPartition, f.BucketOffsets)
	for _, p := range f.PartitionOffsets {
		add(p.PartitionID, p.BucketOffsets)
	}
	return f.TableID, o, nil
}
