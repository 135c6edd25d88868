package cluster_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/stromdb/strom/server/remote/remotetest"
	"github.com/stromdb/strom/tests/clustertest"
)

// remoteRecord is the committed remote log of a bucket in etcd (server/remotelog).
type remoteRecord struct {
	EndOffset   int64 `json:"remote_log_end_offset"`
	LeaderEpoch int32 `json:"leader_epoch"`
}

// TestRemoteLogAcrossLeaderFailover tiers a log table's segments to remote storage — a
// directory the nodes share, and S3 — on a 3-node RF=3 cluster (docs/tiered-storage.md) while
// appends stream:
//
//   - followers delete local segments only once the leader's copy is committed, so each node
//     keeps few segments;
//   - the leader is killed -9; the new leader continues tiering from the committed manifest,
//     at its own leader epoch;
//   - the old leader comes back (behind the new leader's local log start), catches up and
//     rejoins the ISR;
//   - a scan from the earliest offset (remote segments, then the local tail) reads every
//     acknowledged row exactly once.
func TestRemoteLogAcrossLeaderFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process cluster test (-short)")
	}
	t.Run("shared-directory", func(t *testing.T) {
		remoteLogAcrossLeaderFailover(t, map[string]string{"remote.data.dir": t.TempDir()}) // one directory all three nodes share
	})
	t.Run("s3", func(t *testing.T) {
		// No shared directory: the nodes and the client meet in the bucket.
		remoteLogAcrossLeaderFailover(t, remotetest.Start(t).Options("cluster"))
	})
}

func remoteLogAcrossLeaderFailover(t *testing.T, remoteOpts map[string]string) {
	set := maps.Clone(faultOptions)
	maps.Copy(set, remoteOpts)
	set["log.segment.file-size"] = "16kb"
	set["remote.log.task-interval-duration"] = "200ms"
	c := clustertest.StartCluster(t, stromBin, clustertest.ClusterOptions{Set: set})
	ctx := testContext(t)
	conn := connect(t, ctx, c)
	desc := logTable()
	desc.BucketCount = 1
	desc.Properties = map[string]string{"table.log.tiered.local-segments": "1"}
	table := createTable(t, ctx, conn, "tiered", desc)
	tableID := table.Info().TableID
	etcd, err := clientv3.New(clientv3.Config{Endpoints: []string{c.Nodes[0].ClientURL, c.Nodes[1].ClientURL, c.Nodes[2].ClientURL}, DialTimeout: 5 * time.Second, TLS: c.EtcdTLS()})
	if err != nil {
		t.Fatal(err)
	}
	defer etcd.Close()
	record := func() remoteRecord {
		t.Helper()
		resp, err := etcd.Get(ctx, fmt.Sprintf("/strom/remote-log/%d/-1/0", tableID))
		if err != nil {
			t.Fatal(err)
		}
		var r remoteRecord
		if len(resp.Kvs) > 0 {
			if err := json.Unmarshal(resp.Kvs[0].Value, &r); err != nil {
				t.Fatal(err)
			}
		}
		return r
	}
	waitRecord := func(what string, ok func(remoteRecord) bool) remoteRecord {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for {
			if r := record(); ok(r) {
				return r
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: remote log record %+v", what, record())
			}
			time.Sleep(100 * time.Millisecond)
		}
	}

	appends := startAppends(t, ctx, table)
	waitAcked(t, appends.acked, 3000, 60*time.Second)
	first := waitRecord("first commit", func(r remoteRecord) bool { return r.EndOffset > 1000 })
	leader := c.Node(leaderOf(t, ctx, conn, table, 0))

	leader.Kill()
	waitAcked(t, appends.acked, appends.count()+3000, 90*time.Second)
	after := waitRecord("commit by the new leader", func(r remoteRecord) bool {
		return r.LeaderEpoch > first.LeaderEpoch && r.EndOffset > first.EndOffset
	})
	leader.Restart()
	leader.WaitReady(60 * time.Second)
	appends.end()
	if len(appends.failed) > 0 {
		t.Logf("%d writes failed during the failover (not acknowledged): first %v", len(appends.failed), appends.failed[0])
	}
	waitRecord("tiering goes on", func(r remoteRecord) bool { return r.EndOffset > after.EndOffset })
	// The old leader's log typically ends below the new leader's local log start (3000 rows
	// over 16 KB segments later; the rest is in remote storage): it restarts there instead of
	// stalling, and rejoins the ISR.
	for deadline := time.Now().Add(60 * time.Second); !slices.Contains(bucketState(t, ctx, etcd, tableID).ISR, leader.ID); {
		if time.Now().After(deadline) {
			t.Fatalf("node %d did not rejoin the ISR: %+v", leader.ID, bucketState(t, ctx, etcd, tableID))
		}
		time.Sleep(100 * time.Millisecond)
	}

	checkLogExactlyOnce(t, appends.acked, readLog(t, ctx, conn, table))
	for _, n := range c.Nodes {
		dir := filepath.Join(n.DataDir, "tablet", fmt.Sprintf("table-%d", tableID), "bucket-0")
		ents, _ := os.ReadDir(dir)
		segs := 0
		for _, e := range ents {
			if strings.HasSuffix(e.Name(), ".log") {
				segs++
			}
		}
		// Written: hundreds of KB over 16 KB segments; kept: what is not yet committed.
		if segs > 10 {
			t.Errorf("node %d keeps %d local segments", n.ID, segs)
		}
	}
}
