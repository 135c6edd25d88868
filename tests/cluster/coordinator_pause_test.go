package cluster_test

import (
	"context"
	"fmt"
	"maps"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stromdb/strom/fluss"
	"github.com/stromdb/strom/tests/clustertest"
)

// coordinatorLedTable returns a one-bucket log table of database db whose leader is on the
// node of the active coordinator, creating tables name_0, name_1, ... until one is (at most
// 9; placement spreads leaders over the nodes).
func coordinatorLedTable(t testing.TB, ctx context.Context, c *clustertest.Cluster, conn *fluss.Connection, db, name string) (fluss.TablePath, *clustertest.Node) {
	t.Helper()
	admin := conn.Admin()
	for i := range 9 {
		coord := activeCoordinator(t, ctx, c, conn)
		path := fluss.TablePath{Database: db, Table: fmt.Sprintf("%s_%d", name, i)}
		desc := logTable()
		desc.BucketCount = 1
		if err := admin.CreateTable(ctx, path, desc, true); err != nil {
			t.Fatal(err)
		}
		for range 100 {
			leaders, err := admin.BucketLeaders(ctx, path, "")
			if err == nil && leaders[0].ID >= 0 {
				if leaders[0].ID == coord.ID {
					return path, coord
				}
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	t.Fatal("no table of 9 has its leader on the active coordinator's node")
	return fluss.TablePath{}, nil
}

// TestPauseCoordinatorAndLeader stops (SIGSTOP) the node that is both the active coordinator
// and a bucket's leader while acks=all appends stream in, with 10 s leases so that neither
// lease can expire within the bound: the standbys depose the silent coordinator
// (docs/cluster.md, "A paused active coordinator"), the successor fences the paused tablet
// server and elects another leader. Nothing acknowledged is lost or doubled, the replicas
// end identical, the resumed node is no longer the coordinator and DDL works.
func TestPauseCoordinatorAndLeader(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process cluster test (-short)")
	}
	set := maps.Clone(faultOptions)
	set["tablet-server.lease-ttl"], set["coordinator.lease-ttl"] = "10s", "10s"
	c := clustertest.StartCluster(t, stromBin, clustertest.ClusterOptions{Set: set})
	ctx := testContext(t)
	conn := connect(t, ctx, c)
	if err := conn.Admin().CreateDatabase(ctx, "fault", nil, true); err != nil {
		t.Fatal(err)
	}
	path, victim := coordinatorLedTable(t, ctx, c, conn, "fault", "coord_pause")
	table, err := conn.Table(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	s := startAppends(t, ctx, table)
	lw := watchLeaders(ctx, c, table)
	waitAcked(t, s.acked, 2000, 60*time.Second)
	start := time.Now()
	t.Logf("pausing node %d, the active coordinator and leader of %s, after %d acknowledged appends, at %s", victim.ID, path.Table, s.count(), start.UTC().Format("15:04:05.000"))
	victim.Pause()
	lw.markDown(victim.ID)
	// The first acks=all append acknowledged after the pause, through fresh connections (the
	// stream's requests queued on the paused node wait for it).
	var first time.Duration
	for first == 0 && time.Since(start) < 30*time.Second {
		actx, cancel := context.WithTimeout(ctx, time.Second)
		if freshAppend(actx, c.Bootstrap(), path, -1) == nil {
			first = time.Since(start)
		}
		cancel()
	}
	t.Logf("first acknowledged append after the pause: %s", first.Round(time.Millisecond))
	if first == 0 || first > 6*time.Second {
		t.Errorf("first append after the pause took %s; the 10 s leases would explain anything beyond 6 s", first)
	}
	time.Sleep(time.Until(start.Add(7 * time.Second)))
	victim.Resume()
	lw.markUp(victim.ID)
	waitAcked(t, s.acked, s.count()+2000, 60*time.Second)
	s.end()
	lw.end(t, 6*time.Second)

	logFailoverSteps(t, c)
	checkNoFailedWrites(t, s.acked)
	log := readLog(t, ctx, conn, table)
	// The probe appends (id -1) are acknowledged once each at most, outside the stream.
	for b, recs := range log {
		kept := recs[:0]
		for _, r := range recs {
			if r.Row[0] != int64(-1) {
				kept = append(kept, r)
			}
		}
		log[b] = kept
	}
	checkLogExactlyOnce(t, s.acked, log)
	checkReplicasIdentical(t, c, table)
	if n := activeCoordinator(t, ctx, c, conn); n == victim {
		t.Fatalf("the resumed node %d is still the active coordinator", victim.ID)
	}
	desc := logTable()
	// Replication factor 2: the resumed node may not have registered again yet.
	desc.Properties = map[string]string{"table.replication.factor": "2"}
	if err := conn.Admin().CreateTable(ctx, fluss.TablePath{Database: "fault", Table: "after_pause"}, desc, false); err != nil {
		t.Fatalf("DDL after the coordinator's deposition: %v", err)
	}
}

// logFailoverSteps logs the nodes' lines about heartbeats and the coordinator election: the
// server side of a failover, step by step.
func logFailoverSteps(t *testing.T, c *clustertest.Cluster) {
	t.Helper()
	for _, n := range c.Nodes {
		data, err := os.ReadFile(n.LogPath())
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(data), "\n") {
			if strings.Contains(line, "heartbeats:") || strings.Contains(line, "active coordinator") || strings.Contains(line, "stepping down") {
				t.Logf("node %d: %s", n.ID, line)
			}
		}
	}
}
