package cluster_test

import (
	"sync"
	"testing"
	"time"

	"github.com/stromdb/strom/fluss"
)

// TestPauseLeaderBeyondLagTime stops the leader of a bucket (SIGSTOP) for longer than its
// lease and the replica lag time while appends stream in, then resumes it (SIGCONT). The
// cluster elects another leader meanwhile; the resumed server must not acknowledge anything
// as the old leader, and it rejoins as a follower whose log ends identical to the others. No
// bucket goes without a live leader beyond leaderlessBound.
func TestPauseLeaderBeyondLagTime(t *testing.T) {
	c := startCluster(t)
	ctx := testContext(t)
	conn := connect(t, ctx, c)
	table := createTable(t, ctx, conn, "log_leader_pause", logTable())
	s := startAppends(t, ctx, table)
	a := s.acked
	lw := watchLeaders(ctx, c, table)
	waitAcked(t, a, 2000, 60*time.Second)
	victim := c.Node(leaderOf(t, ctx, conn, table, 0))
	t.Logf("pausing node %d, leader of bucket 0, after %d acknowledged appends", victim.ID, a.count())
	victim.Pause()
	lw.markDown(victim.ID)
	// Its lease (2 s) and the lag time (3 s) both pass; another replica takes over.
	time.Sleep(7 * time.Second)
	victim.Resume()
	lw.markUp(victim.ID)
	waitAcked(t, a, a.count()+2000, 60*time.Second)
	s.end()
	lw.end(t, leaderlessBound)

	checkNoFailedWrites(t, a)
	checkLogExactlyOnce(t, a, readLog(t, ctx, conn, table))
	checkReplicasIdentical(t, c, table)
}

// TestRestartWholeCluster kills -9 every node at once after acknowledged appends and upserts,
// starts them again, and checks that nothing acknowledged was lost.
func TestRestartWholeCluster(t *testing.T) {
	c := startCluster(t)
	ctx := testContext(t)
	conn := connect(t, ctx, c)
	logT := createTable(t, ctx, conn, "restart_log", logTable())
	pkT := createTable(t, ctx, conn, "restart_pk", pkTable())
	aw, err := logT.NewAppend().CreateWriter()
	if err != nil {
		t.Fatal(err)
	}
	uw, err := pkT.NewUpsert().CreateWriter()
	if err != nil {
		t.Fatal(err)
	}
	rows := int64(3000)
	for id := range rows {
		if _, err := aw.Append(ctx, fluss.Row{id, "payload"}); err != nil {
			t.Fatal(err)
		}
		if _, err := uw.Upsert(ctx, fluss.Row{id, id * 10}); err != nil {
			t.Fatal(err)
		}
	}
	if err := aw.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := uw.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	conn.Close()

	var wg sync.WaitGroup
	for _, n := range c.Nodes {
		wg.Add(1)
		go func() { defer wg.Done(); n.Kill() }()
	}
	wg.Wait()
	for _, n := range c.Nodes {
		n.Start()
	}
	for _, n := range c.Nodes {
		n.WaitReady(60 * time.Second)
	}

	conn = connect(t, ctx, c)
	logT, err = conn.Table(ctx, logT.Path())
	if err != nil {
		t.Fatal(err)
	}
	a := &acked{ids: map[int64]int64{}}
	for id := range rows {
		a.ids[id] = id
	}
	// Every node was killed within the high-watermark checkpoint interval of the writes, so
	// each restarts with a checkpointed HW below what it acknowledged; a new leader's HW
	// catches up once its ISR has fetched (docs/durability.md, "Replicated buckets (RF=3)",
	// the row for a power loss of all three). Wait for that, bounded, before reading.
	waitLogEnds(t, ctx, conn, logT, rows, 30*time.Second)
	checkLogExactlyOnce(t, a, readLog(t, ctx, conn, logT))
	checkReplicasIdentical(t, c, logT)
	pkT, err = conn.Table(ctx, pkT.Path())
	if err != nil {
		t.Fatal(err)
	}
	// A lookup sees what the HW covers; 3,000 new keys are 3,000 changelog records.
	waitLogEnds(t, ctx, conn, pkT, rows, 30*time.Second)
	lk, err := pkT.NewLookup().CreateLookuper()
	if err != nil {
		t.Fatal(err)
	}
	for id := range rows {
		row, err := lk.Lookup(ctx, fluss.Row{id})
		if err != nil {
			t.Fatalf("lookup %d after the restart: %v", id, err)
		}
		if row == nil || row[1].(int64) != id*10 {
			t.Fatalf("lookup %d after the restart: %v, want version %d", id, row, id*10)
		}
	}
}
