package cluster_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/fluss"
	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
	"github.com/stromdb/strom/tests/clustertest"
)

// TestReplaceDeadServer replaces a tablet server gone for good, as docs/cluster.md
// ("Membership changes") tells an operator to: while acks=all appends and upserts stream
// into an RF=3 log table and PK table, one node is killed with kill -9; it is tagged
// PERMANENT_OFFLINE, a fresh fourth tablet server joins, and a rebalance moves the dead
// server's replicas to it. Then: the rebalance completed with every move completed, no
// bucket lists the dead server, the new server holds replicas, every acknowledged append
// is in the log exactly once, lookups return every acknowledged upsert, and the replicas of
// the new replica sets are byte-identical.
func TestReplaceDeadServer(t *testing.T) {
	c := startCluster(t)
	ctx := testContext(t)
	conn := connect(t, ctx, c)
	admin := conn.Admin()
	logT := createTable(t, ctx, conn, "replace_log", logTable())
	pkT := createTable(t, ctx, conn, "replace_pk", pkTable())

	keys := int64(300)
	phase := 1000
	if long() {
		keys, phase = 3000, 10000
	}
	appends := startAppends(t, ctx, logT)
	uw, err := pkT.NewUpsert().CreateWriter()
	if err != nil {
		t.Fatal(err)
	}
	defer uw.Close()
	upserts := startStream(ctx, func(ctx context.Context, id int64) (*fluss.WriteResult, error) {
		return uw.Upsert(ctx, fluss.Row{id % keys, id})
	}, func(id int64) int64 { return id })
	waitAcked(t, appends.acked, phase, 60*time.Second)
	waitAcked(t, upserts.acked, phase, 60*time.Second)

	// The victim is not the active coordinator, so no coordinator failover adds to the wait.
	coord := activeCoordinator(t, ctx, c, conn)
	victim := c.Nodes[0]
	for _, n := range c.Nodes {
		if n != coord {
			victim = n
		}
	}
	t.Logf("killing node %d; %d appends and %d upserts acknowledged", victim.ID, appends.count(), upserts.count())
	victim.Kill()
	waitServers(t, ctx, conn, 2)
	waitAcked(t, appends.acked, appends.count()+phase, 60*time.Second)

	if err := admin.AddServerTag(ctx, []int32{victim.ID}, fluss.PermanentOffline); err != nil {
		t.Fatalf("tag the dead server: %v", err)
	}
	fresh := c.AddTabletServer(4, faultOptions)
	waitServers(t, ctx, conn, 3)
	id, err := admin.Rebalance(ctx, fluss.ReplicaDistribution, fluss.LeaderDistribution)
	if err != nil {
		t.Fatalf("rebalance: %v", err)
	}
	start := time.Now()
	var p *fluss.RebalanceProgress
	for {
		p, err = admin.ListRebalanceProgress(ctx, id)
		if err != nil {
			t.Fatalf("rebalance progress: %v", err)
		}
		if p.Status.Final() {
			break
		}
		if time.Since(start) > 60*time.Second {
			t.Fatalf("rebalance not done after a minute: %+v", p)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("rebalance %s: %s in %s, %d moves", id, p.Status, time.Since(start).Round(time.Millisecond), len(p.Moves))
	if p.Status != fluss.RebalanceCompleted || len(p.Moves) == 0 {
		t.Fatalf("rebalance ended %s with %d moves: %+v", p.Status, len(p.Moves), p.Moves)
	}
	for _, m := range p.Moves {
		if m.Status != fluss.RebalanceCompleted || slices.Contains(m.NewReplicas, victim.ID) {
			t.Fatalf("move %+v", m)
		}
	}
	// Writes go on through the moves.
	waitAcked(t, appends.acked, appends.count()+phase, 60*time.Second)
	waitAcked(t, upserts.acked, upserts.count()+phase, 60*time.Second)
	appends.end()
	upserts.end()
	checkNoFailedWrites(t, appends.acked)
	checkNoFailedWrites(t, upserts.acked)

	freshHolds := 0
	for _, table := range []*fluss.Table{logT, pkT} {
		replicas := bucketReplicas(t, ctx, coord.CoordinatorAddr, table)
		for b, rs := range replicas {
			if slices.Contains(rs, victim.ID) {
				t.Fatalf("%s bucket %d still lists the dead server %d: %v", table.Path(), b, victim.ID, rs)
			}
			if len(rs) != 3 {
				t.Fatalf("%s bucket %d has replicas %v, want 3", table.Path(), b, rs)
			}
			if slices.Contains(rs, fresh.ID) {
				freshHolds++
			}
		}
		checkReplicaSetsIdentical(t, c, table, replicas)
	}
	if freshHolds == 0 {
		t.Fatal("the new server holds no replica")
	}
	checkLogExactlyOnce(t, appends.acked, readLog(t, ctx, conn, logT))
	checkLookups(t, ctx, pkT, upserts.acked, keys)
}

// bucketReplicas returns the replicas of each bucket of table, from GET_METADATA.
func bucketReplicas(t *testing.T, ctx context.Context, addr string, table *fluss.Table) map[int32][]int32 {
	t.Helper()
	cc, err := wire.Dial(ctx, addr, wire.ClientConfig{SoftwareName: "membership-test"})
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	path := table.Path()
	var resp flusspb.MetadataResponse
	req := &flusspb.MetadataRequest{TablePath: []*flusspb.PbTablePath{{DatabaseName: proto.String(path.Database), TableName: proto.String(path.Table)}}}
	if err := cc.Call(ctx, wire.GetMetadata, req, &resp); err != nil {
		t.Fatalf("metadata of %s: %v", path, err)
	}
	out := map[int32][]int32{}
	for _, tm := range resp.GetTableMetadata() {
		for _, bm := range tm.GetBucketMetadata() {
			out[bm.GetBucketId()] = bm.GetReplicaId()
		}
	}
	if len(out) != int(table.Info().NumBuckets()) {
		t.Fatalf("metadata of %s has %d buckets", path, len(out))
	}
	return out
}

// checkReplicaSetsIdentical waits until every replica of each bucket (by replicas) holds the
// same log bytes. (A bucket may be empty: log writers pick buckets per batch.)
func checkReplicaSetsIdentical(t *testing.T, c *clustertest.Cluster, table *fluss.Table, replicas map[int32][]int32) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for b, rs := range replicas {
		for {
			err := compareReplicaSet(c, table.Info().TableID, b, rs)
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s bucket %d: replicas %v differ: %v", table.Path(), b, rs, err)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
}

func compareReplicaSet(c *clustertest.Cluster, tableID int64, bucket int32, rs []int32) error {
	var first []byte
	for i, id := range rs {
		b, err := bucketLog(c.Node(id), tableID, bucket)
		if err != nil {
			return err
		}
		if i == 0 {
			first = b
		} else if string(b) != string(first) {
			return fmt.Errorf("node %d holds %d bytes, node %d %d bytes (common prefix %d)", rs[0], len(first), id, len(b), commonPrefix(first, b))
		}
	}
	return nil
}

// checkLookups checks that a lookup of every key returns at least its last acknowledged
// version (writes are sequential per key; a later unacknowledged one may have landed too).
func checkLookups(t *testing.T, ctx context.Context, table *fluss.Table, a *acked, keys int64) {
	t.Helper()
	latest := map[int64]int64{}
	for id := range a.ids {
		if k := id % keys; id > latest[k] || latest[k] == 0 {
			latest[k] = id
		}
	}
	lk, err := table.NewLookup().CreateLookuper()
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range latest {
		row, err := lk.Lookup(ctx, fluss.Row{k})
		if err != nil {
			t.Fatalf("lookup %d: %v", k, err)
		}
		if row == nil || row[1].(int64) < v {
			t.Fatalf("key %d: acknowledged version %d, lookup returns %v", k, v, row)
		}
	}
}
