package cluster_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
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
// device, and — since its state store cannot take upserts while another in-sync replica's
// can — hands the bucket's leadership to an in-sync replica (RESIGN_LEADERSHIP;
// docs/cluster.md, "Gray failures"), so upserts go on during the hold. It follows meanwhile
// (its changelog is on a healthy disk) and rejoins the ISR; once its disk works again every
// acknowledged upsert is found by lookups and the changelogs are byte-identical. It logs how
// long the hand-over took and how many upserts were acknowledged during the hold.
func TestEIOInLeaderPebbleFiles(t *testing.T) {
	c, f := startGrayCluster(t, nil)
	ctx := testContext(t)
	conn := connect(t, ctx, c)
	etcd := grayEtcd(t, c)
	kv, ups := startPebbleUpserts(t, ctx, conn, "pebble_eio")
	tid := kv.Info().TableID

	before := bucketState(t, ctx, etcd, tid)
	victim := c.Node(before.Leader)
	kvDir := filepath.Join(victim.DataDir, "tablet", "kv")
	t.Cleanup(func() {
		if t.Failed() {
			logNodeProblems(t, victim)
		}
	})
	acked := ups.count()
	f.set(fmt.Sprintf("* %s/ eio\n", kvDir))
	start := time.Now()
	waitUntil(t, 60*time.Second, "a new leader of the primary-key bucket", func() bool {
		return bucketState(t, ctx, etcd, tid).Leader != victim.ID
	})
	handed := time.Since(start)
	moved := bucketState(t, ctx, etcd, tid)
	if moved.LeaderEpoch <= before.LeaderEpoch || !slices.Contains(before.ISR, moved.Leader) {
		t.Fatalf("bucket moved from %+v to %+v: want an in-sync replica at a higher leader epoch", before, moved)
	}
	hold := 10 * time.Second
	if long() {
		hold = 30 * time.Second
	}
	time.Sleep(hold - time.Since(start))
	during := ups.count() - acked
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
	if !strings.Contains(string(logText), "handed the primary-key bucket's leadership to an in-sync replica") {
		t.Fatalf("node %d logged no hand-over of its primary-key leadership", victim.ID)
	}
	t.Logf("EIO in node %d's Pebble files: bucket led by %d at epoch %d after %v; %d upserts acknowledged during the %v hold; %.300s",
		victim.ID, moved.Leader, moved.LeaderEpoch, handed.Round(time.Millisecond), during, hold, warn)
	if during < 1000 {
		t.Errorf("only %d upserts acknowledged during the hold: the bucket did not serve from its new leader", during)
	}

	f.set("")
	waitUntil(t, 60*time.Second, "the node back in the bucket's ISR", func() bool {
		return slices.Contains(bucketState(t, ctx, etcd, tid).ISR, victim.ID)
	})
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
