package server

import "github.com/stromdb/strom/server/cluster"

func bucketOf(tableID int64, b int32) cluster.Bucket {
	return cluster.Bucket{TableID: tableID, PartitionID: cluster.NoPartition, Bucket: b}
}
