package cluster_test

import (
	"context"
	"maps"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/stromdb/strom/fluss"
	"github.com/stromdb/strom/server/cluster"
	"github.com/stromdb/strom/tests/clustertest"
)

// startScrubCluster starts 3 nodes RF=3 with 1 KiB segments (so a bucket soon has sealed
// segments) and a scrubber pass every second.
func startScrubCluster(t *testing.T) *clustertest.Cluster {
	t.Helper()
	if testing.Short() {
		t.Skip("multi-process cluster test (-short)")
	}
	set := maps.Clone(faultOptions)
	set["log.segment.file-size"] = "1kb"
	set["log.scrub.interval"] = "1s"
	set["log.scrub.rate"] = "64mb"
	return clustertest.StartCluster(t, stromBin, clustertest.ClusterOptions{Set: set, HTTP: true})
}

// sealedSegment returns the oldest segment file of bucket 0 of table on node n, which must
// have at least two (so the oldest is sealed).
func sealedSegment(t *testing.T, n *clustertest.Node, tableID int64) string {
	t.Helper()
	dir := filepath.Join(n.DataDir, "tablet", "table-"+strconv.FormatInt(tableID, 10), "bucket-0")
	segs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	sort.Strings(segs)
	if len(segs) < 2 {
		t.Fatalf("node %d holds %d segments of bucket 0; the test needs a sealed one", n.ID, len(segs))
	}
	return segs[0]
}

// waitRepairedLeader waits until bucket 0 of tableID, led by victim at before, is led by
// another server at a higher leader epoch, and then until victim is back in the ISR.
func waitRepairedLeader(t *testing.T, ctx context.Context, etcd *clientv3.Client, tableID int64, victim *clustertest.Node, before cluster.BucketState) cluster.BucketState {
	t.Helper()
	flipped := time.Now()
	waitUntil(t, 60*time.Second, "a new leader of bucket 0", func() bool {
		return bucketState(t, ctx, etcd, tableID).Leader != victim.ID
	})
	moved := bucketState(t, ctx, etcd, tableID)
	if moved.LeaderEpoch <= before.LeaderEpoch || !slices.Contains(before.ISR, moved.Leader) {
		t.Fatalf("bucket 0 moved from %+v to %+v: want an in-sync replica at a higher leader epoch", before, moved)
	}
	t.Logf("corrupt leader %d: bucket 0 led by %d at epoch %d after %v", victim.ID, moved.Leader, moved.LeaderEpoch, time.Since(flipped).Round(time.Millisecond))
	waitUntil(t, 90*time.Second, "the repaired node back in bucket 0's ISR", func() bool {
		return slices.Contains(bucketState(t, ctx, etcd, tableID).ISR, victim.ID)
	})
	t.Logf("node %d back in the ISR %v after %v", victim.ID, bucketState(t, ctx, etcd, tableID).ISR, time.Since(flipped).Round(time.Millisecond))
	for _, want := range []string{"scrubber: bytes of a sealed log segment went bad", "corrupt leader handed its leadership to an in-sync replica", "repairing a corrupt follower log"} {
		if !logContains(t, victim.LogPath(), want) {
			t.Errorf("node %d logged no %q", victim.ID, want)
		}
	}
	return moved
}

// TestCorruptLeaderHandsOverAndIsRepaired flips a byte in a sealed segment of the leader of
// a log table's bucket while acks=all appends stream in: the leader's scrubber finds it, the
// leadership moves to an in-sync replica at a higher leader epoch (docs/durability.md, "The
// scrubber"), appends go on, and the old leader rebuilds itself from the new one and
// rejoins the ISR. The history has no acknowledged append lost, duplicated or reordered and
// the replicas end byte-identical. Before the leader repair existed the bucket stayed led by
// the offline replica and the test timed out waiting for a new leader.
func TestCorruptLeaderHandsOverAndIsRepaired(t *testing.T) {
	c := startScrubCluster(t)
	ctx := testContext(t)
	conn := connect(t, ctx, c)
	desc := logTable()
	desc.BucketCount = 1
	table := createTable(t, ctx, conn, "corrupt_leader", desc)
	etcd := grayEtcd(t, c)
	h := startAppendHistory(t, ctx, table)
	h.waitMore(t, 5000, 60*time.Second)

	before := bucketState(t, ctx, etcd, table.Info().TableID)
	victim := c.Node(before.Leader)
	seg := sealedSegment(t, victim, table.Info().TableID)
	flipByte(t, seg, 200)
	t.Logf("flipped byte 200 of %s on leader %d (ISR %v)", seg, victim.ID, before.ISR)

	waitRepairedLeader(t, ctx, etcd, table.Info().TableID, victim, before)
	if line := logLine(t, victim.LogPath(), "cut at the last good batch"); line == "" {
		t.Errorf("node %d rebuilt its corrupt log whole instead of cutting it at the last good batch", victim.ID)
	} else {
		t.Logf("%.400s", line)
	}
	h.waitMore(t, 2000, 60*time.Second)
	ops := h.end()
	checkAppendHistory(t, ctx, conn, table, ops)
	checkReplicasIdentical(t, c, table)
}

// startKeyedUpserts streams acks=all upserts (id % keys, id) into a primary-key table.
func startKeyedUpserts(t *testing.T, ctx context.Context, table *fluss.Table, keys int64) *streaming {
	t.Helper()
	w, err := table.NewUpsert().CreateWriter()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return startStream(ctx, func(ctx context.Context, id int64) (*fluss.WriteResult, error) {
		return w.Upsert(ctx, fluss.Row{id % keys, id})
	}, func(id int64) int64 { return id })
}

// TestCorruptPrimaryKeyReplicasAreRepaired flips a byte in a sealed changelog segment of a
// primary-key bucket, first on a follower and then on the leader, while acks=all upserts
// stream in. The follower is rebuilt from the leader (its changelog and state dropped and
// copied again) and rejoins the ISR; the leader hands its leadership to an in-sync replica
// and is rebuilt the same way. No upsert fails, lookups return every acknowledged one, and
// the replicas' changelogs end byte-identical. Before, a corrupt primary-key replica stayed
// offline for the operator and never rejoined the ISR.
func TestCorruptPrimaryKeyReplicasAreRepaired(t *testing.T) {
	c := startScrubCluster(t)
	ctx := testContext(t)
	conn := connect(t, ctx, c)
	desc := pkTable()
	desc.BucketCount = 1
	table := createTable(t, ctx, conn, "corrupt_pk", desc)
	etcd := grayEtcd(t, c)
	const keys = 500
	ups := startKeyedUpserts(t, ctx, table, keys)
	waitAcked(t, ups.acked, 5000, 60*time.Second)
	tid := table.Info().TableID

	// A follower first.
	st := bucketState(t, ctx, etcd, tid)
	var follower *clustertest.Node
	for _, id := range st.ISR {
		if id != st.Leader {
			follower = c.Node(id)
			break
		}
	}
	seg := sealedSegment(t, follower, tid)
	flipByte(t, seg, 200)
	t.Logf("flipped byte 200 of %s on follower %d (leader %d)", seg, follower.ID, st.Leader)
	waitUntil(t, 60*time.Second, "the corrupt follower rebuilt", func() bool {
		return logContains(t, follower.LogPath(), "repairing a corrupt follower log")
	})
	waitAcked(t, ups.acked, ups.count()+2000, 60*time.Second)
	waitUntil(t, 90*time.Second, "the rebuilt follower back in the ISR", func() bool {
		return slices.Contains(bucketState(t, ctx, etcd, tid).ISR, follower.ID)
	})
	t.Logf("follower %d rebuilt and back in the ISR", follower.ID)

	// Then the leader.
	before := bucketState(t, ctx, etcd, tid)
	victim := c.Node(before.Leader)
	seg = sealedSegment(t, victim, tid)
	flipByte(t, seg, 200)
	t.Logf("flipped byte 200 of %s on leader %d (ISR %v)", seg, victim.ID, before.ISR)
	waitRepairedLeader(t, ctx, etcd, tid, victim, before)
	waitAcked(t, ups.acked, ups.count()+2000, 60*time.Second)
	ups.end()
	checkNoFailedWrites(t, ups.acked)
	checkLookups(t, ctx, table, ups.acked, keys)
	t.Logf("%d upserts acknowledged, every one found by lookups", ups.count())
	checkReplicasIdentical(t, c, table)
}
