package cluster_test

import (
	"context"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stromdb/strom/fluss"
	"github.com/stromdb/strom/tests/clustertest"
)

// TestMoveTrimmedPKBucketsToANewServer moves primary-key buckets whose changelog retention
// has already trimmed the start of the changelog onto a server that joined empty. Replaying
// the changelog cannot rebuild their state, so each new replica first loads the bucket's
// latest KV snapshot (docs/cluster.md, "Snapshot bootstrap"); the moves complete, the new
// server leads buckets after the leader-distribution goal, and lookups return every
// acknowledged upsert — those of the buckets it leads served from the state it bootstrapped.
func TestMoveTrimmedPKBucketsToANewServer(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process cluster test (-short)")
	}
	set := maps.Clone(faultOptions)
	set["remote.data.dir"] = t.TempDir() // one directory all nodes share
	set["kv.snapshot.interval"] = "500ms"
	set["log.segment.file-size"] = "4kb"
	set["log.retention.check-interval"] = "200ms"
	c := clustertest.StartCluster(t, stromBin, clustertest.ClusterOptions{Set: set})
	ctx := testContext(t)
	conn := connect(t, ctx, c)
	admin := conn.Admin()
	desc := pkTable()
	desc.BucketCount = 3
	desc.Properties = map[string]string{"table.log.ttl": "1ms"}
	table := createTable(t, ctx, conn, "moved_pk", desc)

	w, err := table.NewUpsert().CreateWriter()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	const keys = 300
	upserts := startStream(ctx, func(ctx context.Context, id int64) (*fluss.WriteResult, error) {
		return w.Upsert(ctx, fluss.Row{id % keys, id})
	}, func(id int64) int64 { return id })
	waitAcked(t, upserts.acked, 3000, 60*time.Second)
	// Wait until retention has trimmed every bucket's changelog start (a snapshot covers it).
	deadline := time.Now().Add(60 * time.Second)
	for {
		earliest, err := admin.ListOffsets(ctx, table.Path(), []int32{0, 1, 2}, fluss.OffsetEarliest())
		if err == nil && earliest[0] > 0 && earliest[1] > 0 && earliest[2] > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("changelogs not trimmed after a minute: %v %v", earliest, err)
		}
		time.Sleep(200 * time.Millisecond)
	}

	coord := activeCoordinator(t, ctx, c, conn)
	victim := c.Nodes[0]
	for _, n := range c.Nodes {
		if n != coord {
			victim = n
		}
	}
	t.Logf("killing node %d after %d acknowledged upserts", victim.ID, upserts.count())
	victim.Kill()
	waitServers(t, ctx, conn, 2)
	if err := admin.AddServerTag(ctx, []int32{victim.ID}, fluss.PermanentOffline); err != nil {
		t.Fatalf("tag the dead server: %v", err)
	}
	fresh := c.AddTabletServer(4, set)
	waitServers(t, ctx, conn, 3)
	id, err := admin.Rebalance(ctx, fluss.ReplicaDistribution, fluss.LeaderDistribution)
	if err != nil {
		t.Fatalf("rebalance: %v", err)
	}
	var p *fluss.RebalanceProgress
	for start := time.Now(); ; time.Sleep(100 * time.Millisecond) {
		if p, err = admin.ListRebalanceProgress(ctx, id); err != nil {
			t.Fatalf("rebalance progress: %v", err)
		}
		if p.Status.Final() {
			break
		}
		if time.Since(start) > 90*time.Second {
			t.Fatalf("rebalance not done after 90 s: %+v", p)
		}
	}
	if p.Status != fluss.RebalanceCompleted || len(p.Moves) == 0 {
		t.Fatalf("rebalance ended %s with %d moves: %+v", p.Status, len(p.Moves), p.Moves)
	}
	waitAcked(t, upserts.acked, upserts.count()+1000, 60*time.Second)
	upserts.end()
	checkNoFailedWrites(t, upserts.acked)

	log, err := os.ReadFile(fresh.LogPath())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(log), "follower bootstrapped from KV snapshot") {
		t.Fatal("the new server's replicas did not bootstrap from a KV snapshot")
	}
	leaders, err := admin.BucketLeaders(ctx, table.Path(), "")
	if err != nil {
		t.Fatal(err)
	}
	led := 0
	for _, n := range leaders {
		if n.ID == fresh.ID {
			led++
		}
	}
	replicas := bucketReplicas(t, ctx, coord.CoordinatorAddr, table)
	for b, rs := range replicas {
		if slices.Contains(rs, victim.ID) || len(rs) != 3 {
			t.Fatalf("bucket %d has replicas %v (dead server %d)", b, rs, victim.ID)
		}
	}
	if led == 0 {
		t.Fatalf("the new server leads no bucket after a leader-distribution rebalance: %v", leaders)
	}
	checkLookups(t, ctx, table, upserts.acked, keys)
}
