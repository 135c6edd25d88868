package cluster_test

import (
	"maps"
	"testing"
	"time"

	"github.com/stromdb/strom/tests/clustertest"
)

// TestCutReplicationLinkAndHeal black-holes the replication link into a bucket's leader (a
// TCP proxy in front of its internal listener: its followers' fetches stall, its clients and
// its etcd session do not) while acks=all appends stream in, then heals it. With
// log.replica.min-in-sync-replicas-number 1 the leader shrinks its ISR to itself after the lag
// time and goes on acknowledging; once healed, the followers catch up and rejoin. Every
// acknowledged append is in the log exactly once, the replicas end byte-identical, and the
// bucket never goes without a live leader beyond leaderlessBound.
func TestCutReplicationLinkAndHeal(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process cluster test (-short)")
	}
	set := maps.Clone(faultOptions)
	set["log.replica.min-in-sync-replicas-number"] = "1"
	c := clustertest.StartCluster(t, stromBin, clustertest.ClusterOptions{Set: set, ProxyReplication: true})
	ctx := testContext(t)
	conn := connect(t, ctx, c)
	desc := logTable()
	desc.BucketCount = 1
	table := createTable(t, ctx, conn, "log_link_cut", desc)
	s := startAppends(t, ctx, table)
	lw := watchLeaders(ctx, c, table)
	waitAcked(t, s.acked, 2000, 60*time.Second)
	leader := c.Node(leaderOf(t, ctx, conn, table, 0))
	t.Logf("cutting the replication link into node %d, leader of bucket 0, after %d acknowledged appends", leader.ID, s.count())
	leader.ReplicationProxy.Blackhole()
	// Acknowledgements go on once the leader has dropped its unreachable followers from the
	// ISR (lag time 3 s); until then acks=all writes wait.
	waitAcked(t, s.acked, s.count()+2000, 60*time.Second)
	leader.ReplicationProxy.Heal()
	t.Logf("healed after %d acknowledged appends", s.count())
	waitAcked(t, s.acked, s.count()+2000, 60*time.Second)
	s.end()
	lw.end(t, leaderlessBound)

	checkNoFailedWrites(t, s.acked)
	checkLogExactlyOnce(t, s.acked, readLog(t, ctx, conn, table))
	checkReplicasIdentical(t, c, table)
}
