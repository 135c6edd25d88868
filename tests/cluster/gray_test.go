package cluster_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/stromdb/strom/fluss"
	"github.com/stromdb/strom/internal/faultfs"
	"github.com/stromdb/strom/tests/clustertest"
	"github.com/stromdb/strom/tests/history"
)

// Gray failures (docs/cluster.md, "Gray failures"): the nodes' log stores run with the
// fault-injecting file layer (internal/faultfs), all three reading one rules file that the
// test rewrites; each rule names one node's data directory.

// faults is the rules file of a grayCluster's nodes.
type faults struct {
	t    *testing.T
	path string
}

// set replaces the rules (one rule a line, see faultfs); "" clears them. The nodes read the
// file again within 50 ms of a change.
func (f faults) set(rules string) {
	f.t.Helper()
	tmp := f.path + ".tmp"
	if err := os.WriteFile(tmp, []byte(rules), 0o644); err != nil {
		f.t.Fatal(err)
	}
	if err := os.Rename(tmp, f.path); err != nil {
		f.t.Fatal(err)
	}
	f.t.Logf("faults: %q", rules)
}

// startGrayCluster starts the fault tests' cluster with fault injection on and extra options.
func startGrayCluster(t *testing.T, extra map[string]string) (*clustertest.Cluster, faults) {
	t.Helper()
	if testing.Short() {
		t.Skip("multi-process cluster test (-short)")
	}
	f := faults{t: t, path: filepath.Join(t.TempDir(), "faults")}
	t.Setenv(faultfs.EnvVar, f.path)
	set := map[string]string{}
	for k, v := range faultOptions {
		set[k] = v
	}
	for k, v := range extra {
		set[k] = v
	}
	return clustertest.StartCluster(t, stromBin, clustertest.ClusterOptions{Set: set}), f
}

// appendHistory streams acks=all appends of unique ids (64 in flight) and records each as a
// history operation, for tests/history's checker.
type appendHistory struct {
	mu   sync.Mutex
	ops  []history.Op
	acks int
	stop chan struct{}
	done chan struct{}
}

func startAppendHistory(t *testing.T, ctx context.Context, table *fluss.Table) *appendHistory {
	t.Helper()
	w, err := table.NewAppend().CreateWriter()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	h := &appendHistory{stop: make(chan struct{}), done: make(chan struct{})}
	type inflight struct {
		op int // index into ops
		r  *fluss.WriteResult
	}
	go func() {
		defer close(h.done)
		var pending []inflight
		settle := func(n int) {
			for len(pending) > n {
				p := pending[0]
				pending = pending[1:]
				err := p.r.Wait(ctx)
				now := time.Now().UnixNano()
				h.mu.Lock()
				if err != nil {
					h.ops[p.op].Outcome, h.ops[p.op].Err = history.Fail, err.Error()
				} else {
					h.ops[p.op].Outcome, h.ops[p.op].Return = history.OK, now
					h.acks++
				}
				h.mu.Unlock()
			}
		}
		for id := int64(0); ; id++ {
			select {
			case <-h.stop:
				settle(0)
				return
			default:
			}
			h.mu.Lock()
			h.ops = append(h.ops, history.Op{Kind: history.Append, Key: id, Invoke: time.Now().UnixNano(), Outcome: history.Unknown})
			i := len(h.ops) - 1
			h.mu.Unlock()
			r, err := w.Append(ctx, fluss.Row{id, "payload"})
			if err != nil {
				h.mu.Lock()
				h.ops[i].Outcome, h.ops[i].Err = history.Fail, err.Error()
				h.mu.Unlock()
				continue
			}
			pending = append(pending, inflight{i, r})
			settle(64)
		}
	}()
	return h
}

func (h *appendHistory) acked() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.acks
}

// waitMore waits until n more appends than now are acknowledged and returns how long that took.
func (h *appendHistory) waitMore(t *testing.T, n int, timeout time.Duration) time.Duration {
	t.Helper()
	start, target := time.Now(), h.acked()+n
	for h.acked() < target {
		if time.Since(start) > timeout {
			t.Fatalf("only %d of %d appends acknowledged after %s", h.acked(), target, timeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return time.Since(start)
}

// end stops the stream and returns the history once every append was answered.
func (h *appendHistory) end() []history.Op {
	close(h.stop)
	<-h.done
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.ops)
}

// checkAppendHistory reads the table's log from its start and checks the history against
// it: no acknowledged append lost, duplicated or reordered, nothing unwritten in the log.
func checkAppendHistory(t *testing.T, ctx context.Context, conn *fluss.Connection, table *fluss.Table, ops []history.Op) {
	t.Helper()
	var recs []history.Record
	for b, rs := range readLog(t, ctx, conn, table) {
		for _, r := range rs {
			recs = append(recs, history.Record{Bucket: b, Offset: r.Offset, Key: r.Row[0].(int64)})
		}
	}
	ok := 0
	for _, o := range ops {
		if o.Outcome == history.OK {
			ok++
		}
	}
	if err := history.CheckAppends(ops, recs).Err(); err != nil {
		t.Fatal(err)
	}
	t.Logf("history: %d appends, %d acknowledged, %d records in the log: no acknowledged append lost, duplicated or reordered", len(ops), ok, len(recs))
}

func grayEtcd(t *testing.T, c *clustertest.Cluster) *clientv3.Client {
	t.Helper()
	var eps []string
	for _, n := range c.Nodes {
		eps = append(eps, n.ClientURL)
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: 5 * time.Second, TLS: c.EtcdTLS()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

// TestLeaderDiskStallFailsOver: the fdatasync of every log segment of bucket 0's leader
// takes 3 s (log.flush.max-stall-time 1 s) while acks=all appends stream in. The leader must
// leave the cluster: another ISR member leads, appends go on without waiting for the sick
// disk; once the disk answers again the node returns as a follower and catches up. The
// appends' history has no acknowledged append lost, duplicated or reordered, and the
// replicas end byte-identical. Upserts into a primary-key table run alongside (the node's
// changelogs stall too): none fails, and lookups return every acknowledged one.
func TestLeaderDiskStallFailsOver(t *testing.T) {
	c, f := startGrayCluster(t, map[string]string{"log.flush.max-stall-time": "1s"})
	ctx := testContext(t)
	conn := connect(t, ctx, c)
	table := createTable(t, ctx, conn, "disk_stall", logTable())
	kv := createTable(t, ctx, conn, "disk_stall_kv", pkTable())
	etcd := grayEtcd(t, c)
	uw, err := kv.NewUpsert().CreateWriter()
	if err != nil {
		t.Fatal(err)
	}
	defer uw.Close()
	const keys = 500
	ups := startStream(ctx, func(ctx context.Context, id int64) (*fluss.WriteResult, error) {
		return uw.Upsert(ctx, fluss.Row{id % keys, id})
	}, func(id int64) int64 { return id })
	h := startAppendHistory(t, ctx, table)
	h.waitMore(t, 2000, 60*time.Second)

	victim := c.Node(leaderOf(t, ctx, conn, table, 0))
	f.set(fmt.Sprintf("sync %s/ delay=3s\n", victim.DataDir))
	stalled := time.Now()
	waitUntil(t, 30*time.Second, "a new leader of bucket 0", func() bool {
		return bucketState(t, ctx, etcd, table.Info().TableID).Leader != victim.ID
	})
	moved := time.Since(stalled)
	took := h.waitMore(t, 2000, 60*time.Second)
	st := bucketState(t, ctx, etcd, table.Info().TableID)
	if slices.Contains(st.ISR, victim.ID) {
		t.Fatalf("bucket 0 state %+v: the stalled node is still in the ISR", st)
	}
	t.Logf("disk of node %d stalled: bucket 0 led by %d after %v; 2000 more appends acknowledged %v later",
		victim.ID, st.Leader, moved.Round(time.Millisecond), took.Round(time.Millisecond))

	f.set("")
	waitUntil(t, 60*time.Second, "the node back in bucket 0's ISR", func() bool {
		return slices.Contains(bucketState(t, ctx, etcd, table.Info().TableID).ISR, victim.ID)
	})
	h.waitMore(t, 1000, 60*time.Second)
	ops := h.end()
	ups.end()
	checkAppendHistory(t, ctx, conn, table, ops)
	checkNoFailedWrites(t, ups.acked)
	checkLookups(t, ctx, kv, ups.acked, keys)
	t.Logf("%d upserts acknowledged, every one found by lookups", ups.count())
	checkReplicasIdentical(t, c, table)
	checkReplicasIdentical(t, c, kv)
}

// TestSlowFollowerLeavesISRAndRejoins: the first follower of a one-bucket table syncs its log every 4 s
// (longer than log.replica.max-lag-time, 3 s; the stall fence off), alive and answering
// otherwise. The leader must drop it from the ISR after the lag time — acks=all appends go on
// with the other follower (min ISR 2) — and take it back once its disk is fast again. The
// history has no acknowledged append lost, duplicated or reordered.
func TestSlowFollowerLeavesISRAndRejoins(t *testing.T) {
	c, f := startGrayCluster(t, map[string]string{"log.flush.max-stall-time": "0s"})
	ctx := testContext(t)
	conn := connect(t, ctx, c)
	// One bucket: with two, the slow node leads the other one, whose acks=all writes then
	// take a 4 s sync each and hold the writer's window back (the stall fence is off).
	desc := logTable()
	desc.BucketCount = 1
	table := createTable(t, ctx, conn, "slow_follower", desc)
	etcd := grayEtcd(t, c)
	h := startAppendHistory(t, ctx, table)
	h.waitMore(t, 2000, 60*time.Second)

	st := bucketState(t, ctx, etcd, table.Info().TableID)
	var slow *clustertest.Node
	for _, id := range st.Replicas {
		if id != st.Leader {
			slow = c.Node(id)
			break
		}
	}
	f.set(fmt.Sprintf("sync %s/ delay=4s\n", slow.DataDir))
	start := time.Now()
	waitUntil(t, 30*time.Second, "the slow follower out of bucket 0's ISR", func() bool {
		return !slices.Contains(bucketState(t, ctx, etcd, table.Info().TableID).ISR, slow.ID)
	})
	dropped := time.Since(start)
	took := h.waitMore(t, 2000, 60*time.Second)
	t.Logf("node %d slow: out of the ISR after %v; 2000 more appends acknowledged %v later",
		slow.ID, dropped.Round(time.Millisecond), took.Round(time.Millisecond))

	f.set("")
	start = time.Now()
	waitUntil(t, 60*time.Second, "the follower back in bucket 0's ISR", func() bool {
		return slices.Contains(bucketState(t, ctx, etcd, table.Info().TableID).ISR, slow.ID)
	})
	t.Logf("node %d back in the ISR %v after its disk was fast again", slow.ID, time.Since(start).Round(time.Millisecond))
	h.waitMore(t, 1000, 60*time.Second)
	ops := h.end()
	checkAppendHistory(t, ctx, conn, table, ops)
	checkReplicasIdentical(t, c, table)
}

// TestEIOOnFollowerSegmentTakesOnlyThatBucketOffline: every write and sync of one
// follower's files of table A's bucket fails with EIO while acks=all appends stream into A
// and into table B (one bucket each, so that both keep receiving writes). That replica goes
// offline — a WARN in the node's log names the file and its device — and leaves A's ISR
// after the lag time, so A's appends go on; the node stays registered and its replica of B
// stays in sync. After the disk is replaced and the node restarted, the replica recovers,
// catches up and rejoins; both histories have no acknowledged append lost, duplicated or
// reordered, and the replicas end byte-identical.
func TestEIOOnFollowerSegmentTakesOnlyThatBucketOffline(t *testing.T) {
	c, f := startGrayCluster(t, nil)
	ctx := testContext(t)
	conn := connect(t, ctx, c)
	desc := logTable()
	desc.BucketCount = 1
	a := createTable(t, ctx, conn, "eio_sick", desc)
	b := createTable(t, ctx, conn, "eio_healthy", desc)
	etcd := grayEtcd(t, c)
	ha, hb := startAppendHistory(t, ctx, a), startAppendHistory(t, ctx, b)
	ha.waitMore(t, 2000, 60*time.Second)
	hb.waitMore(t, 2000, 60*time.Second)

	st := bucketState(t, ctx, etcd, a.Info().TableID)
	var sick *clustertest.Node
	for _, r := range st.Replicas {
		if r != st.Leader {
			sick = c.Node(r)
			break
		}
	}
	dir := filepath.Join(sick.DataDir, "tablet", fmt.Sprintf("table-%d", a.Info().TableID), "bucket-0")
	t.Cleanup(func() {
		if t.Failed() {
			b, _ := os.ReadFile(sick.LogPath())
			for _, l := range strings.Split(string(b), "\n") {
				if strings.Contains(l, "WARN") || strings.Contains(l, "ERROR") {
					t.Logf("node %d: %.400s", sick.ID, l)
				}
			}
		}
	})
	f.set(fmt.Sprintf("* %s/ eio\n", dir))
	start := time.Now()
	waitUntil(t, 30*time.Second, "the sick replica out of A's ISR", func() bool {
		return !slices.Contains(bucketState(t, ctx, etcd, a.Info().TableID).ISR, sick.ID)
	})
	dropped := time.Since(start)
	took := ha.waitMore(t, 2000, 60*time.Second)
	hb.waitMore(t, 2000, 60*time.Second)
	t.Logf("EIO on node %d's replica of A: out of the ISR after %v; 2000 more appends to A acknowledged %v later",
		sick.ID, dropped.Round(time.Millisecond), took.Round(time.Millisecond))
	logText, err := os.ReadFile(sick.LogPath())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(logText), "disk I/O error; bucket offline") || !strings.Contains(string(logText), dir) {
		t.Fatalf("node %d's log has no WARN naming the offline bucket's file", sick.ID)
	}
	if other := bucketState(t, ctx, etcd, b.Info().TableID); !slices.Contains(other.ISR, sick.ID) {
		t.Fatalf("table B's state %+v: the node left the ISR of a bucket whose disk is fine", other)
	}

	f.set("") // the disk is replaced; the bucket comes back with a restart
	sick.Kill()
	sick.Start()
	sick.WaitReady(60 * time.Second)
	waitUntil(t, 60*time.Second, "the replica back in A's ISR", func() bool {
		return slices.Contains(bucketState(t, ctx, etcd, a.Info().TableID).ISR, sick.ID)
	})
	ha.waitMore(t, 1000, 60*time.Second)
	checkAppendHistory(t, ctx, conn, a, ha.end())
	checkAppendHistory(t, ctx, conn, b, hb.end())
	checkReplicasIdentical(t, c, a)
	checkReplicasIdentical(t, c, b)
}

// TestEIOOnLeaderSegmentHandsOver: every write and sync of the leader's replica of a log
// table's bucket fails with EIO while acks=all appends stream in. The replica goes offline,
// and instead of holding the bucket unavailable the leader hands it to an in-sync replica
// (RESIGN_LEADERSHIP, as a corrupt leader does: docs/cluster.md, "Gray failures"); appends go
// on with the new leader. While the disk still fails, the old leader's rebuilds as a follower
// fail too and it stays out of the ISR; once the disk answers, a paced rebuild copies the
// bucket back and it rejoins the ISR — without a restart. The history has no acknowledged
// append lost, duplicated or reordered and the replicas end byte-identical.
func TestEIOOnLeaderSegmentHandsOver(t *testing.T) {
	c, f := startGrayCluster(t, nil)
	ctx := testContext(t)
	conn := connect(t, ctx, c)
	desc := logTable()
	desc.BucketCount = 1
	a := createTable(t, ctx, conn, "eio_leader", desc)
	h := startAppendHistory(t, ctx, a)
	h.waitMore(t, 2000, 60*time.Second)
	more := func() time.Duration { return h.waitMore(t, 2000, 60*time.Second) }
	eioOnLeaderSegment(t, ctx, c, f, a, more)
	checkAppendHistory(t, ctx, conn, a, h.end())
	checkReplicasIdentical(t, c, a)
}

// TestEIOOnPrimaryKeyLeaderChangelogHandsOver is TestEIOOnLeaderSegmentHandsOver for the
// changelog of a primary-key bucket, under acks=all upserts: the leadership moves, the old
// leader's changelog and state are rebuilt once its disk answers, no upsert fails and lookups
// find every acknowledged one.
func TestEIOOnPrimaryKeyLeaderChangelogHandsOver(t *testing.T) {
	c, f := startGrayCluster(t, nil)
	ctx := testContext(t)
	conn := connect(t, ctx, c)
	desc := pkTable()
	desc.BucketCount = 1
	kv := createTable(t, ctx, conn, "eio_pk_leader", desc)
	const keys = 500
	ups := startKeyedUpserts(t, ctx, kv, keys)
	waitAcked(t, ups.acked, 2000, 60*time.Second)
	more := func() time.Duration {
		start := time.Now()
		waitAcked(t, ups.acked, ups.count()+2000, 60*time.Second)
		return time.Since(start)
	}
	eioOnLeaderSegment(t, ctx, c, f, kv, more)
	ups.end()
	checkNoFailedWrites(t, ups.acked)
	checkLookups(t, ctx, kv, ups.acked, keys)
	checkReplicasIdentical(t, c, kv)
}

// eioOnLeaderSegment fails every write and sync of the bucket directory of table's leader
// (bucket 0) with EIO, checks that the leadership moves to an in-sync replica at a higher
// epoch and that writes go on (more waits for 2,000 more acknowledged writes), holds the fault
// for 3 s more with the old leader out of the ISR, clears it, and waits for the old leader
// back in the ISR without a restart.
func eioOnLeaderSegment(t *testing.T, ctx context.Context, c *clustertest.Cluster, f faults, table *fluss.Table, more func() time.Duration) {
	t.Helper()
	etcd := grayEtcd(t, c)
	tid := table.Info().TableID
	before := bucketState(t, ctx, etcd, tid)
	victim := c.Node(before.Leader)
	dir := filepath.Join(victim.DataDir, "tablet", fmt.Sprintf("table-%d", tid), "bucket-0")
	t.Cleanup(func() {
		if t.Failed() {
			logNodeProblems(t, victim)
		}
	})
	f.set(fmt.Sprintf("* %s/ eio\n", dir))
	start := time.Now()
	waitUntil(t, 30*time.Second, "a new leader of the bucket", func() bool {
		return bucketState(t, ctx, etcd, tid).Leader != victim.ID
	})
	handed := time.Since(start)
	moved := bucketState(t, ctx, etcd, tid)
	if moved.LeaderEpoch <= before.LeaderEpoch || !slices.Contains(before.ISR, moved.Leader) {
		t.Fatalf("bucket moved from %+v to %+v: want an in-sync replica at a higher leader epoch", before, moved)
	}
	took := more()
	t.Logf("EIO on leader %d's segment files: bucket led by %d at epoch %d after %v; 2000 more writes acknowledged %v later",
		victim.ID, moved.Leader, moved.LeaderEpoch, handed.Round(time.Millisecond), took.Round(time.Millisecond))
	if !logContains(t, victim.LogPath(), "EIO leader handed its leadership to an in-sync replica") {
		t.Fatalf("node %d logged no hand-over of its EIO bucket", victim.ID)
	}

	// The disk still fails: the rebuilt follower cannot write, so it stays out of the ISR.
	time.Sleep(3 * time.Second)
	if st := bucketState(t, ctx, etcd, tid); slices.Contains(st.ISR, victim.ID) {
		t.Fatalf("state %+v: the replica whose disk fails is in the ISR", st)
	}
	f.set("") // the disk answers again
	healed := time.Now()
	waitUntil(t, 90*time.Second, "the rebuilt replica back in the ISR", func() bool {
		return slices.Contains(bucketState(t, ctx, etcd, tid).ISR, victim.ID)
	})
	t.Logf("node %d back in the ISR %v after %v, without a restart", victim.ID, bucketState(t, ctx, etcd, tid).ISR, time.Since(healed).Round(time.Millisecond))
	if !logContains(t, victim.LogPath(), "rebuilding a follower log offline for a disk I/O error") {
		t.Errorf("node %d logged no rebuild of its EIO replica", victim.ID)
	}
	more()
}
