package cluster_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/sstable"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/stromdb/strom/fluss"
	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/internal/row"
	"github.com/stromdb/strom/server/cluster"
	"github.com/stromdb/strom/tests/clustertest"
)

// TestKvSnapshotsAcrossFailover runs KV snapshots on a 3-node RF=3 cluster whose PK changelog
// is trimmed as soon as snapshots cover it (docs/kv-snapshots.md, "In a cluster"):
//
//   - a follower is killed; upserts go on until the leader's changelog no longer holds what
//     the follower lacks; restarted, the follower bootstraps from the latest snapshot and
//     rejoins the ISR;
//   - the leader is killed -9; the bootstrapped follower is elected and serves every
//     acknowledged upsert by lookup;
//   - the new leader takes the next snapshot, with a higher id;
//   - a `full`-mode read as Fluss's readers make it — the newest snapshot of the bucket
//     (GET_LATEST_KV_SNAPSHOTS, a lease, GET_KV_SNAPSHOT_METADATA, the files under the shared
//     remote.data.dir), then the changelog from its offset — returns the same state, which holds
//     every acknowledged upsert.
func TestKvSnapshotsAcrossFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process cluster test (-short)")
	}
	set := snapshotOptions(map[string]string{"remote.data.dir": t.TempDir()}) // one directory all three nodes share
	c := clustertest.StartCluster(t, stromBin, clustertest.ClusterOptions{Set: set})
	ctx := testContext(t)
	conn := connect(t, ctx, c)
	table, tableID, etcd, leader, follower := openSnapshotBucket(t, ctx, c, conn, "snapshots")
	admin := conn.Admin()

	w, err := table.NewUpsert().CreateWriter()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	const keys = 200
	latest := map[int64]int64{} // key -> version acknowledged last
	next := int64(0)
	upsert := func(n int) {
		t.Helper()
		var rs []*fluss.WriteResult
		var ids []int64
		for range n {
			r, err := w.Upsert(ctx, fluss.Row{next % keys, next})
			if err != nil {
				t.Fatalf("upsert %d: %v", next, err)
			}
			rs, ids = append(rs, r), append(ids, next)
			next++
		}
		for i, r := range rs {
			if err := r.Wait(ctx); err != nil {
				t.Fatalf("upsert %d: %v", ids[i], err)
			}
			latest[ids[i]%keys] = ids[i]
		}
	}
	offsets := func(spec fluss.OffsetSpec) int64 {
		t.Helper()
		o, err := admin.ListOffsets(ctx, table.Path(), []int32{0}, spec)
		if err != nil {
			t.Fatalf("list offsets: %v", err)
		}
		return o[0]
	}

	upsert(2000)
	follower.Kill()
	lacking := offsets(fluss.OffsetLatest()) // the follower holds at most this much
	t.Logf("killed follower %d at leader log end %d", follower.ID, lacking)
	deadline := time.Now().Add(30 * time.Second)
	for offsets(fluss.OffsetEarliest()) <= lacking {
		if time.Now().After(deadline) {
			t.Fatalf("the leader's changelog was not trimmed past %d (log start %d)", lacking, offsets(fluss.OffsetEarliest()))
		}
		upsert(300)
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("leader log start %d is past the stopped follower's end", offsets(fluss.OffsetEarliest()))

	follower.Start()
	follower.WaitReady(60 * time.Second)
	waitUntil(t, 30*time.Second, "the restarted follower back in the ISR", func() bool {
		return slices.Contains(bucketState(t, ctx, etcd, tableID).ISR, follower.ID)
	})
	upsert(200)
	before, err := admin.GetLatestKvSnapshots(ctx, table.Path(), "")
	if err != nil || len(before.Snapshots) == 0 {
		t.Fatalf("no snapshot before the leader kill: %v", err)
	}

	leader.Kill()
	t.Logf("killed leader %d", leader.ID)
	waitUntil(t, 30*time.Second, "the bootstrapped follower to lead", func() bool {
		return bucketState(t, ctx, etcd, tableID).Leader == follower.ID
	})
	upsert(200) // through the new leader, ISR = the two live replicas

	// The new leader snapshots the bucket, with ids going on from its predecessor's; then a
	// full-mode read: the latest snapshot, then the changelog from its offset.
	afterFailover := offsets(fluss.OffsetLatest())
	tb := fluss.TableBucket{TableID: tableID, PartitionID: fluss.NoPartition, Bucket: 0}
	var s fluss.KvSnapshot
	waitUntil(t, 20*time.Second, "a snapshot by the new leader", func() bool {
		snaps, err := admin.GetLatestKvSnapshots(ctx, table.Path(), "")
		if err != nil {
			return false
		}
		s = snaps.Snapshots[0]
		if s.LogOffset < afterFailover {
			return false
		}
		// Hold it, as Flink does, so that cleanup keeps it while it is read.
		unavailable, err := admin.AcquireKvSnapshotLease(ctx, "full-read", time.Minute, []fluss.KvSnapshotRef{{Bucket: tb, SnapshotID: s.SnapshotID}})
		if err != nil {
			t.Fatalf("acquire a lease after failover: %v", err)
		}
		return len(unavailable) == 0
	})
	if s.SnapshotID <= before.Snapshots[0].SnapshotID {
		t.Fatalf("snapshot id %d after failover, %d before: ids must grow across leader changes", s.SnapshotID, before.Snapshots[0].SnapshotID)
	}
	upsert(100) // after the snapshot: the full read needs the changelog too

	// Lookups on the new leader: every acknowledged upsert (writes are sequential, so exact).
	lk, err := table.NewLookup().CreateLookuper()
	if err != nil {
		t.Fatal(err)
	}
	looked := map[int64]int64{}
	for k, v := range latest {
		r, err := lk.Lookup(ctx, fluss.Row{k})
		if err != nil {
			t.Fatalf("lookup %d: %v", k, err)
		}
		if r == nil || r[1].(int64) != v {
			t.Fatalf("key %d: acknowledged version %d, lookup on the promoted follower returns %v", k, v, r)
		}
		looked[k] = v
	}

	md, err := admin.GetKvSnapshotMetadata(ctx, tb, s.SnapshotID)
	if err != nil {
		t.Fatal(err)
	}
	state := readSnapshotFiles(t, md, localFile)
	end := offsets(fluss.OffsetLatest())
	t.Logf("full read: snapshot %d at offset %d with %d rows, then the changelog up to %d", s.SnapshotID, md.LogOffset, len(state), end)
	if md.LogOffset < end {
		sc, err := table.NewScan().CreateLogScanner()
		if err != nil {
			t.Fatal(err)
		}
		defer sc.Close()
		if err := sc.Subscribe(ctx, 0, md.LogOffset); err != nil {
			t.Fatal(err)
		}
		for pos := md.LogOffset; pos < end; {
			recs, err := sc.Poll(ctx, time.Second)
			if err != nil {
				t.Fatalf("poll: %v", err)
			}
			for _, r := range recs {
				switch r.ChangeType {
				case fluss.Insert, fluss.UpdateAfter:
					state[r.Row[0].(int64)] = r.Row[1].(int64)
				case fluss.Delete:
					delete(state, r.Row[0].(int64))
				}
				pos = r.Offset + 1
			}
		}
	}
	if err := admin.DropKvSnapshotLease(ctx, "full-read"); err != nil {
		t.Fatal(err)
	}
	if len(state) != len(looked) {
		t.Errorf("full read has %d keys, lookups %d", len(state), len(looked))
	}
	for k, v := range looked {
		if state[k] != v {
			t.Errorf("key %d: full read %d, acknowledged and looked up %d", k, state[k], v)
		}
	}
}

// bucketState reads the state of bucket 0 of table from etcd.
// snapshotOptions are the cluster options of the KV snapshot tests, with extra on top: a
// snapshot every 500 ms and tiny segments that retention drops at once, so a replica that
// falls behind can only catch up from a snapshot.
func snapshotOptions(extra map[string]string) map[string]string {
	set := maps.Clone(faultOptions)
	set["kv.snapshot.interval"] = "500ms"
	set["log.segment.file-size"] = "4kb"
	set["log.retention.check-interval"] = "200ms"
	maps.Copy(set, extra)
	return set
}

// openSnapshotBucket creates the snapshot tests' table: one primary-key bucket whose changelog
// expires at once (table.log.ttl 1ms). It returns the table, its id, an etcd client (closed at
// the end of the test) and the bucket's leader and the follower next in line.
func openSnapshotBucket(t *testing.T, ctx context.Context, c *clustertest.Cluster, conn *fluss.Connection, name string) (
	table *fluss.Table, tableID int64, etcd *clientv3.Client, leader, next *clustertest.Node) {
	t.Helper()
	desc := pkTable()
	desc.BucketCount = 1
	desc.Properties = map[string]string{"table.log.ttl": "1ms"}
	table = createTable(t, ctx, conn, name, desc)
	snaps, err := conn.Admin().GetLatestKvSnapshots(ctx, table.Path(), "")
	if err != nil {
		t.Fatal(err)
	}
	etcd, err = clientv3.New(clientv3.Config{Endpoints: []string{c.Nodes[0].ClientURL, c.Nodes[1].ClientURL, c.Nodes[2].ClientURL}, DialTimeout: 5 * time.Second, TLS: c.EtcdTLS()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { etcd.Close() })
	st := bucketState(t, ctx, etcd, snaps.TableID)
	leader, next = c.Node(st.Replicas[0]), c.Node(st.Replicas[1])
	if st.Leader != leader.ID {
		t.Fatalf("bucket state %+v: leader is not the first replica", st)
	}
	return table, snaps.TableID, etcd, leader, next
}

func bucketState(t *testing.T, ctx context.Context, etcd *clientv3.Client, tableID int64) cluster.BucketState {
	t.Helper()
	resp, err := etcd.Get(ctx, fmt.Sprintf("/strom/buckets/%d/-/0", tableID))
	if err != nil || len(resp.Kvs) == 0 {
		t.Fatalf("bucket state of table %d: %v", tableID, err)
	}
	var st cluster.BucketState
	if err := json.Unmarshal(resp.Kvs[0].Value, &st); err != nil {
		t.Fatal(err)
	}
	return st
}

func waitUntil(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// localFile is the local path of a file:// snapshot file.
func localFile(t *testing.T, remotePath string) string {
	t.Helper()
	u, err := url.Parse(remotePath)
	if err != nil || u.Scheme != "file" {
		t.Fatalf("snapshot file %q", remotePath)
	}
	return u.Path
}

// readSnapshotFiles reads a snapshot as a RocksDB reader sees its directory: the union of its
// tables, the entry of the highest sequence number winning per key, deletions hiding keys.
// Values are Fluss KV values (2-byte schema id, compacted row (id, version)). fetch returns a
// local copy of a file the metadata names.
func readSnapshotFiles(t *testing.T, md *fluss.KvSnapshotMetadata, fetch func(t *testing.T, remotePath string) string) map[int64]int64 {
	t.Helper()
	type entry struct {
		seq   uint64
		del   bool
		value []byte
	}
	merged := map[string]entry{}
	for _, f := range md.Files {
		if len(f.LocalFileName) < 4 || f.LocalFileName[len(f.LocalFileName)-4:] != ".sst" {
			continue
		}
		path := fetch(t, f.RemotePath)
		file, err := os.Open(path)
		if err != nil {
			t.Fatalf("snapshot file: %v", err)
		}
		rd, err := sstable.NewSimpleReadable(file)
		if err != nil {
			t.Fatal(err)
		}
		r, err := sstable.NewReader(rd, sstable.ReaderOptions{})
		if err != nil {
			t.Fatalf("open %s: %v", path, err)
		}
		it, err := r.NewIter(nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		for k, lv := it.First(); k != nil; k, lv = it.Next() {
			v, _, err := lv.Value(nil)
			if err != nil {
				t.Fatal(err)
			}
			seq := uint64(k.Trailer >> 8)
			if e, ok := merged[string(k.UserKey)]; !ok || seq > e.seq {
				merged[string(k.UserKey)] = entry{seq: seq, del: k.Kind() == pebble.InternalKeyKindDelete, value: slices.Clone(v)}
			}
		}
		_ = it.Close()
		_ = r.Close()
	}
	types := []metadata.DataType{{Root: metadata.BigInt, NotNull: true}, {Root: metadata.BigInt}}
	out := map[int64]int64{}
	for _, e := range merged {
		if e.del {
			continue
		}
		d, err := row.DecodeCompactedRow(types, e.value[2:], nil)
		if err != nil {
			t.Fatalf("decode snapshot row: %v", err)
		}
		out[d[0].I] = d[1].I
	}
	return out
}
