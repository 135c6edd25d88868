package cluster_test

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stromdb/strom/fluss"
)

// TestLoseDiskOfOneNode kills -9 the leader of a bucket while appends stream in, deletes its
// whole data directory (its etcd member's data, logs and primary-key state: a lost disk), and
// starts it again with etcd.join-endpoints, as docs/cluster.md tells an operator to. Its etcd
// member replaces its dead registration and rejoins, and its replicas fetch everything again
// from the leaders: afterwards every replica is byte-identical, every acknowledged append is
// present exactly once, and every acknowledged upsert is found.
func TestLoseDiskOfOneNode(t *testing.T) {
	c := startCluster(t)
	ctx := testContext(t)
	conn := connect(t, ctx, c)
	logT := createTable(t, ctx, conn, "disk_loss_log", logTable())
	pkT := createTable(t, ctx, conn, "disk_loss_pk", pkTable())
	uw, err := pkT.NewUpsert().CreateWriter()
	if err != nil {
		t.Fatal(err)
	}
	defer uw.Close()
	keys := int64(1000)
	for id := range keys {
		if _, err := uw.Upsert(ctx, fluss.Row{id, id * 10}); err != nil {
			t.Fatal(err)
		}
	}
	if err := uw.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	s := startAppends(t, ctx, logT)
	a := s.acked
	waitAcked(t, a, 2000, 60*time.Second)

	victim := c.Node(leaderOf(t, ctx, conn, logT, 0))
	t.Logf("killing node %d, leader of bucket 0, and deleting its data directory", victim.ID)
	victim.Kill()
	if err := os.RemoveAll(victim.DataDir); err != nil {
		t.Fatal(err)
	}
	waitAcked(t, a, a.count()+2000, 60*time.Second)
	var join []string
	for _, n := range c.Nodes {
		if n != victim {
			join = append(join, n.ClientURL)
		}
	}
	victim.AddArgs("--set", "etcd.join-endpoints="+strings.Join(join, ","))
	victim.Start()
	victim.WaitReady(60 * time.Second)
	waitAcked(t, a, a.count()+2000, 60*time.Second)
	s.end()

	checkNoFailedWrites(t, a)
	checkLogExactlyOnce(t, a, readLog(t, ctx, conn, logT))
	checkReplicasIdentical(t, c, logT)
	checkReplicasIdentical(t, c, pkT)
	lk, err := pkT.NewLookup().CreateLookuper()
	if err != nil {
		t.Fatal(err)
	}
	for id := range keys {
		row, err := lk.Lookup(ctx, fluss.Row{id})
		if err != nil {
			t.Fatalf("lookup %d: %v", id, err)
		}
		if row == nil || row[1].(int64) != id*10 {
			t.Fatalf("lookup %d: %v, want version %d", id, row, id*10)
		}
	}
}
