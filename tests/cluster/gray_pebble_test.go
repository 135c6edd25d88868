package cluster_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stromdb/strom/fluss"
	"github.com/stromdb/strom/tests/clustertest"
)

// TestEIOInLeaderPebbleFiles: every write and sync of the Pebble files (the primary-key state)
// of the leader of a primary-key table's bucket fails with EIO for a while, with acks=all
// upserts of 1 KiB rows streaming in (so memtables fill and Pebble flushes within the hold).
// Nothing may be lost and nothing may hang or exit: the node WARNs naming the file and its
// device, refuses the upserts its store cannot take with KV_STORAGE_EXCEPTION (retriable:
// the client retries them), keeps the leadership (the fault is the state store's, which a
// restart re-derives from the changelog; docs/cluster.md, "Gray failures"), and once the disk
// works again the upserts are acknowledged again and every acknowledged one is found by
// lookups. It logs how many upserts were acknowledged during the hold.
func TestEIOInLeaderPebbleFiles(t *testing.T) {
	c, f := startGrayCluster(t, nil)
	ctx := testContext(t)
	conn := connect(t, ctx, c)
	kv, ups := startPebbleUpserts(t, ctx, conn, "pebble_eio")

	victim := c.Node(leaderOf(t, ctx, conn, kv, 0))
	kvDir := filepath.Join(victim.DataDir, "tablet", "kv")
	t.Cleanup(func() {
		if t.Failed() {
			logNodeProblems(t, victim)
		}
	})
	before := ups.count()
	f.set(fmt.Sprintf("* %s/ eio\n", kvDir))
	hold := 10 * time.Second
	if long() {
		hold = 30 * time.Second
	}
	time.Sleep(hold)
	during := ups.count() - before
	leader := leaderOf(t, ctx, conn, kv, 0)
	if !victim.Running() {
		t.Fatalf("node %d exited on EIO in its Pebble files", victim.ID)
	}
	logText, err := os.ReadFile(victim.LogPath())
	if err != nil {
		t.Fatal(err)
	}
	var warn string
	for _, l := range strings.Split(string(logText), "\n") {
		if strings.Contains(l, "disk I/O error in a Pebble file") {
			warn = l
			break
		}
	}
	if warn == "" || !strings.Contains(warn, "file="+kvDir) || !strings.Contains(warn, "device=") {
		t.Fatalf("node %d's log has no WARN naming the Pebble file and its device (first: %q)", victim.ID, warn)
	}
	t.Logf("EIO in node %d's Pebble files for %v: %d upserts acknowledged meanwhile, leader now %d; %.300s", victim.ID, hold, during, leader, warn)

	f.set("")
	waitAcked(t, ups.acked, ups.count()+2000, 60*time.Second)
	ups.end()
	ups.acked.mu.Lock()
	failed := len(ups.acked.failed)
	var first string
	if failed > 0 {
		first = ups.acked.failed[0].Error()
	}
	ups.acked.mu.Unlock()
	t.Logf("%d upserts acknowledged in all, %d failed (first: %.200s)", ups.count(), failed, first)
	checkLookups(t, ctx, kv, ups.acked, pebbleKeys)
	checkReplicasIdentical(t, c, kv)
}

// logNodeProblems logs the WARN and ERROR lines of n's log.
func logNodeProblems(t *testing.T, n *clustertest.Node) {
	b, _ := os.ReadFile(n.LogPath())
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, "WARN") || strings.Contains(l, "ERROR") {
			t.Logf("node %d: %.400s", n.ID, l)
		}
	}
}

// TestLeaderPebbleSyncStallFailsOver: every sync of the Pebble files of a primary-key
// bucket's leader takes 3 s (log.flush.max-stall-time 1 s) while acks=all upserts of 1 KiB
// rows stream in, so Pebble flushes within the hold. Its segment syncs stay fast: only the
// disk watch of Pebble's files (server/pebblefs) can see the stall. The leader must leave the
// cluster as for a stalled log sync — another ISR member leads, upserts go on — and return
// once the disk is fast again; every acknowledged upsert is found by lookups.
func TestLeaderPebbleSyncStallFailsOver(t *testing.T) {
	c, f := startGrayCluster(t, map[string]string{"log.flush.max-stall-time": "1s"})
	ctx := testContext(t)
	conn := connect(t, ctx, c)
	etcd := grayEtcd(t, c)
	kv, ups := startPebbleUpserts(t, ctx, conn, "pebble_stall")

	victim := c.Node(leaderOf(t, ctx, conn, kv, 0))
	t.Cleanup(func() {
		if t.Failed() {
			logNodeProblems(t, victim)
		}
	})
	f.set(fmt.Sprintf("sync %s/ delay=3s\n", filepath.Join(victim.DataDir, "tablet", "kv")))
	stalled := time.Now()
	waitUntil(t, 60*time.Second, "a new leader of the primary-key bucket", func() bool {
		return bucketState(t, ctx, etcd, kv.Info().TableID).Leader != victim.ID
	})
	moved := time.Since(stalled)
	before := ups.count()
	waitAcked(t, ups.acked, before+2000, 60*time.Second)
	t.Logf("Pebble syncs of node %d stalled: the bucket led by %d after %v", victim.ID,
		bucketState(t, ctx, etcd, kv.Info().TableID).Leader, moved.Round(time.Millisecond))

	f.set("")
	waitUntil(t, 60*time.Second, "the node back in the bucket's ISR", func() bool {
		st := bucketState(t, ctx, etcd, kv.Info().TableID)
		for _, r := range st.ISR {
			if r == victim.ID {
				return true
			}
		}
		return false
	})
	waitAcked(t, ups.acked, ups.count()+1000, 60*time.Second)
	ups.end()
	checkNoFailedWrites(t, ups.acked)
	checkLookups(t, ctx, kv, ups.acked, pebbleKeys)
	checkReplicasIdentical(t, c, kv)
	t.Logf("%d upserts acknowledged, every one found by lookups", ups.count())
}

// pebbleKeys is how many keys the Pebble fault tests' upserts cycle through.
const pebbleKeys = 20000

// startPebbleUpserts creates a one-bucket primary-key table of 1 KiB rows and starts upserts
// into it, cycling through pebbleKeys keys, each value its write's id; it returns once 2,000
// of them are acknowledged. The writer closes when the test ends.
func startPebbleUpserts(t *testing.T, ctx context.Context, conn *fluss.Connection, name string) (*fluss.Table, *streaming) {
	t.Helper()
	desc := fluss.TableDescriptor{Schema: fluss.NewSchema([]fluss.Column{
		fluss.NewColumn("id", fluss.BigInt()), fluss.NewColumn("version", fluss.BigInt()), fluss.NewColumn("payload", fluss.String()),
	}, "id"), BucketCount: 1}
	kv := createTable(t, ctx, conn, name, desc)
	uw, err := kv.NewUpsert().CreateWriter()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { uw.Close() })
	payload := strings.Repeat("p", 1024)
	ups := startStream(ctx, func(ctx context.Context, id int64) (*fluss.WriteResult, error) {
		return uw.Upsert(ctx, fluss.Row{id % pebbleKeys, id, payload})
	}, func(id int64) int64 { return id })
	waitAcked(t, ups.acked, 2000, 60*time.Second)
	return kv, ups
}
