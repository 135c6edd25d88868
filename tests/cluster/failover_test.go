package cluster_test

import (
	"context"
	"testing"
	"time"

	"github.com/stromdb/strom/fluss"
)

// TestKillLogLeaderDuringAppends kills -9 the leader of a bucket while acks=all appends
// stream into an RF=3 log table, restarts it, and checks that every acknowledged append is in
// the log exactly once, that the writer never saw an error, and that the three replicas end
// byte-identical, and that no bucket went without a live leader beyond leaderlessBound.
func TestKillLogLeaderDuringAppends(t *testing.T) {
	c := startCluster(t)
	ctx := testContext(t)
	conn := connect(t, ctx, c)
	table := createTable(t, ctx, conn, "log_leader_kill", logTable())
	before, after := 2000, 2000
	if long() {
		before, after = 20000, 20000
	}
	s := startAppends(t, ctx, table)
	lw := watchLeaders(ctx, c, table)
	waitAcked(t, s.acked, before, 60*time.Second)
	victim := c.Node(leaderOf(t, ctx, conn, table, 0))
	t.Logf("killing node %d, leader of bucket 0, after %d acknowledged appends", victim.ID, s.count())
	victim.Kill()
	lw.markDown(victim.ID)
	waitAcked(t, s.acked, s.count()+after, 60*time.Second)
	s.end()
	lw.end(t, leaderlessBound)
	victim.Start()
	victim.WaitReady(60 * time.Second)

	checkNoFailedWrites(t, s.acked)
	checkLogExactlyOnce(t, s.acked, readLog(t, ctx, conn, table))
	checkReplicasIdentical(t, c, table)
}

// TestKillPKLeaderDuringUpserts kills -9 the leader of a primary-key bucket while acks=all
// upserts stream in, and checks that lookups served by the new leader return every
// acknowledged upsert at once, that the changelog agrees with the lookups, and that no bucket
// went without a live leader beyond leaderlessBound.
func TestKillPKLeaderDuringUpserts(t *testing.T) {
	c := startCluster(t)
	ctx := testContext(t)
	conn := connect(t, ctx, c)
	table := createTable(t, ctx, conn, "pk_leader_kill", pkTable())
	w, err := table.NewUpsert().CreateWriter()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()

	// Keys cycle over keys, so most upserts update an existing key; version = the write's id.
	keys := int64(500)
	before, after := 2000, 2000
	if long() {
		keys, before, after = 5000, 20000, 20000
	}
	s := startStream(ctx, func(ctx context.Context, id int64) (*fluss.WriteResult, error) {
		return w.Upsert(ctx, fluss.Row{id % keys, id})
	}, func(id int64) int64 { return id })
	a := s.acked
	lw := watchLeaders(ctx, c, table)
	waitAcked(t, a, before, 60*time.Second)
	victim := c.Node(leaderOf(t, ctx, conn, table, 0))
	t.Logf("killing node %d, leader of bucket 0, after %d acknowledged upserts", victim.ID, a.count())
	victim.Kill()
	lw.markDown(victim.ID)
	waitAcked(t, a, a.count()+after, 60*time.Second)
	s.end()
	lw.end(t, leaderlessBound)
	checkNoFailedWrites(t, a)

	// The latest acknowledged version of each key; writes are sequential per key, so a key's
	// row must hold at least it (a later unacknowledged write may have landed too).
	latest := map[int64]int64{}
	for id := range a.ids {
		k := id % keys
		if id > latest[k] || latest[k] == 0 {
			latest[k] = id
		}
	}
	lk, err := table.NewLookup().CreateLookuper()
	if err != nil {
		t.Fatal(err)
	}
	got := map[int64]int64{}
	for k, v := range latest {
		row, err := lk.Lookup(ctx, fluss.Row{k})
		if err != nil {
			t.Fatalf("lookup %d after failover: %v", k, err)
		}
		if row == nil {
			t.Fatalf("key %d: acknowledged version %d, lookup finds nothing", k, v)
		}
		if row[1].(int64) < v {
			t.Fatalf("key %d: acknowledged version %d, lookup returns %d", k, v, row[1])
		}
		got[k] = row[1].(int64)
	}
	// Replaying the changelog gives the same state as the lookups.
	replayed := map[int64]int64{}
	for _, recs := range readLog(t, ctx, conn, table) {
		for _, r := range recs {
			switch r.ChangeType {
			case fluss.Insert, fluss.UpdateAfter:
				replayed[r.Row[0].(int64)] = r.Row[1].(int64)
			case fluss.Delete:
				delete(replayed, r.Row[0].(int64))
			}
		}
	}
	for k, v := range got {
		if replayed[k] != v {
			t.Fatalf("key %d: lookup %d, changelog replay %d", k, v, replayed[k])
		}
	}
	victim.Start()
	victim.WaitReady(60 * time.Second)
	checkReplicasIdentical(t, c, table)
}
