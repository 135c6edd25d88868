package server

import "github.com/stromdb/strom/server/cluster"

func bucketOf(tableID int64, b int32) cluster.Bucket {
	return cluster.Bucket{TableID: tableID, PartitionID: cluster.NoPartition, Bucket: b}
}

// crash stops node i as a killed process would leave the cluster: no controlled shutdown,
// no lease revoked.
func (tc *testCluster) crash(i int) {
	tc.t.Helper()
	tc.nodes[i].Control().Abandon()
	tc.nodes[i].Close()
	tc.nodes[i] = nil
}
