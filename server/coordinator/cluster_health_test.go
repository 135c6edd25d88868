package coordinator

import (
	"context"
	"testing"

	"github.com/stromdb/strom/server/cluster"
)

// leadsOnly is a tablet server that leads only the buckets in it.
type leadsOnly map[cluster.Bucket]bool

func (l leadsOnly) Leads(b cluster.Bucket) bool { return l[b] }

// liveSet is a control plane's view of the registered tablet servers.
type liveSet map[int32]bool

func (l liveSet) IsLive(id int32) bool { return l[id] }

func TestClusterHealthStatus(t *testing.T) {
	ctx := context.Background()
	c := newTestCatalog(t, newMemStore())
	if err := c.CreateTable(ctx, cluster.TablePath{Database: DefaultDatabase, Table: "t"}, tableJSON(2, nil), false); err != nil {
		t.Fatal(err)
	}
	tbl := mustTable(t, c, "t")
	b0 := cluster.Bucket{TableID: tbl.ID, PartitionID: cluster.NoPartition, Bucket: 0}
	b1 := b0
	b1.Bucket = 1

	single := &healthService{catalog: c.cache}
	if h := single.clusterHealth(); h.GetStatus() != healthGreen || h.GetNumLeaderReplicas() != 2 || h.GetActiveLeaderReplicas() != 2 {
		t.Fatalf("single node, every bucket led: %v", h)
	}
	single.leader = leadsOnly{b0: true}
	if h := single.clusterHealth(); h.GetStatus() != healthRed || h.GetActiveLeaderReplicas() != 1 {
		t.Fatalf("single node, bucket 1 not led: %v, want RED", h)
	}

	states := &statesCluster{st: cluster.BucketState{Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}, Leader: 1}}
	clustered := &healthService{catalog: c.cache, states: states, live: liveSet{1: true, 2: true, 3: true}}
	if h := clustered.clusterHealth(); h.GetStatus() != healthGreen || h.GetNumReplicas() != 6 || h.GetInSyncReplicas() != 6 {
		t.Fatalf("cluster, all in sync: %v", h)
	}
	states.set(cluster.BucketState{Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2}, Leader: 1})
	if h := clustered.clusterHealth(); h.GetStatus() != healthYellow || h.GetInSyncReplicas() != 4 {
		t.Fatalf("cluster, one replica out of sync: %v, want YELLOW", h)
	}
	clustered.live = liveSet{2: true, 3: true}
	if h := clustered.clusterHealth(); h.GetStatus() != healthRed || h.GetActiveLeaderReplicas() != 0 {
		t.Fatalf("cluster, leader not registered: %v, want RED", h)
	}
}
