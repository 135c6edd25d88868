package fluss_test

import (
	"testing"

	"github.com/stromdb/strom/fluss"
)

// GET_CLUSTER_HEALTH through the client: a single node with one table of three buckets has
// three in-sync replicas, three active leaders, and is GREEN.
func TestGetClusterHealth(t *testing.T) {
	needsStrom(t) // an external cluster holds other tables
	conn, ctx := connect(t)
	createTable(t, ctx, conn, "healthy", pkDesc(3))
	h, err := conn.Admin().GetClusterHealth(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := fluss.ClusterHealth{Replicas: 3, InSyncReplicas: 3, LeaderReplicas: 3, ActiveLeaderReplicas: 3, Status: fluss.HealthGreen}
	if h != want || h.UnderReplicated() != 0 || h.OfflineBuckets() != 0 || h.Status.String() != "GREEN" {
		t.Errorf("health = %+v, want %+v", h, want)
	}
}
