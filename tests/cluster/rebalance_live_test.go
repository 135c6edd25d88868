package cluster_test

import (
	"slices"
	"testing"
	"time"

	"github.com/stromdb/strom/fluss"
	"github.com/stromdb/strom/tests/history"
)

// TestRebalanceOffALiveLeaderUnderLoad moves every replica of a live tablet server — one that
// leads buckets — to a fresh fourth server with a rebalance, while acks=all appends, upserts
// and lookups run and are recorded. The moves that take a leadership from the leaving server
// move it first with the old leader kept in the ISR (docs/cluster.md, "Moves", the hand-over
// fence of a move), so the checkers find no acknowledged append lost, duplicated or
// reordered and no lookup that missed an acknowledged upsert (tests/history CheckAppends,
// CheckRegisters); afterwards no bucket lists the server, which is still running.
func TestRebalanceOffALiveLeaderUnderLoad(t *testing.T) {
	c := startCluster(t)
	ctx := testContext(t)
	conn := connect(t, ctx, c)
	admin := conn.Admin()
	logT := createTable(t, ctx, conn, "rebalance_live_log", logTable())
	pkT := createTable(t, ctx, conn, "rebalance_live_pk", pkTable())
	rec := &opRecorder{start: time.Now()}
	w := startRecordedWorkload(t, ctx, rec, logT, pkT)
	waitOps(t, rec, 2000, 60*time.Second)

	// The leaving server leads buckets and is not the active coordinator.
	coord := activeCoordinator(t, ctx, c, conn)
	var leaving int32
	led := 0
	for _, n := range c.Nodes {
		if n == coord {
			continue
		}
		k := 0
		for _, table := range []*fluss.Table{logT, pkT} {
			for b := int32(0); b < table.Info().NumBuckets(); b++ {
				if leaderOf(t, ctx, conn, table, b) == n.ID {
					k++
				}
			}
		}
		if k > led {
			leaving, led = n.ID, k
		}
	}
	if led == 0 {
		t.Fatal("no server but the coordinator leads a bucket")
	}
	fresh := c.AddTabletServer(4, faultOptions)
	waitServers(t, ctx, conn, 4)
	if err := admin.AddServerTag(ctx, []int32{leaving}, fluss.PermanentOffline); err != nil {
		t.Fatalf("tag server %d: %v", leaving, err)
	}
	before := rec.okCount()
	id, err := admin.Rebalance(ctx, fluss.ReplicaDistribution, fluss.LeaderDistribution)
	if err != nil {
		t.Fatalf("rebalance: %v", err)
	}
	start := time.Now()
	var p *fluss.RebalanceProgress
	for {
		if p, err = admin.ListRebalanceProgress(ctx, id); err != nil {
			t.Fatalf("rebalance progress: %v", err)
		}
		if p.Status.Final() {
			break
		}
		if time.Since(start) > 90*time.Second {
			t.Fatalf("rebalance not done after 90 s: %+v", p)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("server %d (leading %d buckets) moved off to server %d: rebalance %s in %s, %d moves", leaving, led, fresh.ID, p.Status,
		time.Since(start).Round(time.Millisecond), len(p.Moves))
	if p.Status != fluss.RebalanceCompleted {
		t.Fatalf("rebalance ended %s: %+v", p.Status, p.Moves)
	}
	waitOps(t, rec, before+2000, 60*time.Second)
	w.end()
	if !c.Node(leaving).Running() {
		t.Fatalf("server %d exited", leaving)
	}
	for _, table := range []*fluss.Table{logT, pkT} {
		for b, rs := range bucketReplicas(t, ctx, coord.CoordinatorAddr, table) {
			if slices.Contains(rs, leaving) {
				t.Fatalf("%s bucket %d still lists server %d: %v", table.Path(), b, leaving, rs)
			}
		}
	}

	ops := rec.all()
	var okUpserts, okLookups, failed int
	for _, o := range ops {
		switch {
		case o.Outcome != history.OK:
			failed++
		case o.Kind == history.Upsert:
			okUpserts++
		case o.Kind == history.Lookup:
			okLookups++
		}
	}
	t.Logf("history: %d operations, %d acknowledged upserts, %d lookups answered, %d failed", len(ops), okUpserts, okLookups, failed)
	var records []history.Record
	for b, rs := range readLog(t, ctx, conn, logT) {
		for _, r := range rs {
			records = append(records, history.Record{Bucket: b, Offset: r.Offset, Key: r.Row[0].(int64)})
		}
	}
	if err := history.CheckAppends(ops, records).Err(); err != nil {
		t.Errorf("appends: %v", err)
	}
	if err := history.CheckRegisters(ops, 60*time.Second).Err(); err != nil {
		t.Errorf("upserts and lookups: %v", err)
	}
}
