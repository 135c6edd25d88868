package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stromdb/strom/fluss"
	"github.com/stromdb/strom/server/cluster"
)

// scrapeGauge returns the value of an unlabelled-but-server gauge on node i's /metrics.
func (tc *testCluster) scrapeGauge(i int, name string) float64 {
	tc.t.Helper()
	resp, err := http.Get("http://" + tc.nodes[i].HTTPAddr() + "/metrics")
	if err != nil {
		tc.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(line, name+"{") {
			var v float64
			if _, err := fmt.Sscan(line[strings.LastIndexByte(line, ' ')+1:], &v); err != nil {
				tc.t.Fatalf("%s: %v", line, err)
			}
			return v
		}
	}
	tc.t.Fatalf("node %d has no %s", i+1, name)
	return 0
}

// The cluster gauges count the cluster: exactly one node reports itself the active
// coordinator, every node the live tablet servers; a crashed server leaves the count, and a
// takeover moves the active coordinator.
func TestClusterGaugesCountTheCluster(t *testing.T) {
	tc := startTestCluster(t, 3, [2]string{"http.listen", "127.0.0.1:0"})
	check := func(live []int, servers float64) bool {
		active := 0.0
		for _, i := range live {
			if tc.scrapeGauge(i, "fluss_coordinator_activeTabletServerCount") != servers {
				return false
			}
			active += tc.scrapeGauge(i, "fluss_coordinator_activeCoordinatorCount")
		}
		return active == 1
	}
	tc.waitFor("one active coordinator and 3 tablet servers on every node", func() bool { return check([]int{0, 1, 2}, 3) })
	act := tc.active()
	tc.crash(act)
	var live []int
	for i := range 3 {
		if i != act {
			live = append(live, i)
		}
	}
	tc.waitFor("a new active coordinator and 2 tablet servers on the survivors", func() bool { return check(live, 2) })
}

// BucketReplication reports the control plane's ISR and, from each bucket's leader (over
// the leader node's HTTP listener when it is another node), its followers' log ends and
// lag; a follower gone beyond log.replica.max-lag-time is out of the ISR.
func TestClusterBucketReplication(t *testing.T) {
	tc := startTestCluster(t, 3, [2]string{"http.listen", "127.0.0.1:0"}, [2]string{"log.replica.max-lag-time", "1s"})
	ctx := context.Background()
	var addrs []string
	for _, n := range tc.nodes {
		addrs = append(addrs, n.Addr("coordinator"))
	}
	conn, err := fluss.Connect(ctx, fluss.Config{BootstrapServers: strings.Join(addrs, ","), WriterBatchTimeout: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	path := fluss.TablePath{Database: "fluss", Table: "repl"}
	desc := fluss.TableDescriptor{Schema: fluss.NewSchema([]fluss.Column{fluss.NewColumn("id", fluss.BigInt())}),
		BucketCount: 3, Properties: map[string]string{"table.replication.factor": "3"}}
	if err := conn.Admin().CreateTable(ctx, path, desc, false); err != nil {
		t.Fatal(err)
	}
	table, err := conn.Table(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := table.NewAppend().CreateWriter()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for i := range int64(30) {
		r, err := w.Append(ctx, fluss.Row{i})
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Wait(ctx); err != nil { // acks=all: every ISR member has it
			t.Fatal(err)
		}
	}
	tableID := table.Info().TableID

	// From every node (so through a peer's HTTP listener for buckets it does not lead):
	// the ISR is all three, both followers are known and caught up (lag 0).
	for i := range tc.nodes {
		tc.waitFor(fmt.Sprintf("node %d sees every follower caught up", i+1), func() bool {
			reps := tc.nodes[i].BucketReplication(ctx, tableID, cluster.NoPartition, 3)
			for _, r := range reps {
				if len(r.ISR) != 3 || len(r.Followers) != 2 || r.ProgressError != "" {
					return false
				}
				for _, f := range r.Followers {
					if f.Lag != 0 || f.LogEndOffset < 0 || f.ID == r.Leader || !slices.Contains(r.Replicas, f.ID) {
						return false
					}
				}
			}
			return true
		})
	}
	// The served form of the same, on the leader's own listener.
	reps := tc.nodes[0].BucketReplication(ctx, tableID, cluster.NoPartition, 3)
	leaderNode := int(reps[0].Leader) - 1
	resp, err := http.Get(fmt.Sprintf("http://%s%s?table_id=%d", tc.nodes[leaderNode].HTTPAddr(), ReplicaStatusPath, tableID))
	if err != nil {
		t.Fatal(err)
	}
	var served struct {
		ServerID int32                 `json:"server_id"`
		Buckets  []replicaProgressJSON `json:"buckets"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&served); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if served.ServerID != reps[0].Leader || !slices.ContainsFunc(served.Buckets, func(b replicaProgressJSON) bool {
		return b.Bucket == 0 && b.LogEndOffset == b.HighWatermark && len(b.Followers) == 2
	}) {
		t.Fatalf("%s of the leader of bucket 0: %+v", ReplicaStatusPath, served)
	}

	// Crash a follower of bucket 0 (not the active coordinator, so no takeover muddles it):
	// the ISR of its buckets shrinks to the other two.
	act := tc.active()
	victim := int32(-1)
	for _, id := range reps[0].Replicas {
		if id != reps[0].Leader && int(id-1) != act {
			victim = id
		}
	}
	if victim < 0 {
		t.Fatalf("no follower of bucket 0 (replicas %v) is a standby", reps[0].Replicas)
	}
	tc.crash(int(victim - 1))
	tc.waitFor(fmt.Sprintf("server %d out of the ISR of every bucket", victim), func() bool {
		for _, r := range tc.nodes[act].BucketReplication(ctx, tableID, cluster.NoPartition, 3) {
			if len(r.ISR) != 2 || slices.Contains(r.ISR, victim) || r.Leader == victim {
				return false
			}
		}
		return true
	})
}
