package cluster_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stromdb/strom/fluss"
	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
	"github.com/stromdb/strom/server/remote"
	"github.com/stromdb/strom/server/remote/remotetest"
	"github.com/stromdb/strom/tests/clustertest"
)

// TestKvSnapshotsInS3WithoutSharedDirectory runs a 3-node RF=3 cluster whose remote.data.dir
// is an S3 bucket (the in-process emulator on loopback) and which shares no directory: each
// node has its own data directory and nothing else (docs/kv-snapshots.md, "In a cluster").
//
//   - while S3 refuses every request, upserts are acknowledged and no changelog is trimmed;
//   - GET_FILESYSTEM_SECURITY_TOKEN answers scheme s3 with the keys and s3a properties the
//     official clients open the bucket with;
//   - a follower is killed -9 and its disk wiped; upserts go on until the leader's changelog
//     starts above 0, so the empty replica can only catch up from a snapshot; restarted (its
//     etcd member rejoining), it bootstraps from the latest snapshot, downloaded from S3, and
//     rejoins the ISR;
//   - the leader is killed -9; the bootstrapped node leads and returns every acknowledged
//     upsert by lookup;
//   - the dead leader is replaced by a new server: the rebalance's new replica bootstraps
//     from S3 as well;
//   - the latest snapshot's files are s3:// paths under remote.data.dir that read back.
func TestKvSnapshotsInS3WithoutSharedDirectory(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process cluster test (-short)")
	}
	e := remotetest.Start(t) // before the cluster: it outlives the processes
	set := snapshotOptions(e.Options("cluster"))
	set["remote.storage.max-retries"] = "2" // a refused snapshot pass gives up quickly
	c := clustertest.StartCluster(t, stromBin, clustertest.ClusterOptions{Set: set})
	ctx := testContext(t)
	conn := connect(t, ctx, c)
	checkS3Token(t, ctx, c.Nodes[0].CoordinatorAddr, e)

	table, tableID, etcd, leader, victim := openSnapshotBucket(t, ctx, c, conn, "snapshots_s3") // the victim is next in line
	admin := conn.Admin()

	w, err := table.NewUpsert().CreateWriter()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	const keys = 200
	latest := map[int64]int64{}
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
	earliest := func() int64 {
		t.Helper()
		o, err := admin.ListOffsets(ctx, table.Path(), []int32{0}, fluss.OffsetEarliest())
		if err != nil {
			t.Fatalf("list offsets: %v", err)
		}
		return o[0]
	}

	// S3 down: upserts are not held up by it, and nothing is trimmed that no snapshot covers.
	e.Refuse(true)
	upsert(1000)
	waitUntil(t, 30*time.Second, "a snapshot pass refused by S3", func() bool { return e.Refused() > 0 })
	if start := earliest(); start != 0 {
		// The table was empty when S3 went down: no snapshot above offset 0 can be committed.
		t.Fatalf("the changelog was trimmed to %d while no snapshot could be uploaded", start)
	}
	e.Refuse(false)
	t.Logf("S3 refused %d requests while 1000 upserts were acknowledged", e.Refused())

	victim.Kill()
	if err := os.RemoveAll(victim.DataDir); err != nil {
		t.Fatal(err)
	}
	t.Logf("killed node %d and wiped its data directory", victim.ID)
	deadline := time.Now().Add(30 * time.Second)
	for earliest() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the leader's changelog was not trimmed: no snapshot reached S3")
		}
		upsert(300)
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("leader log start %d: the wiped replica can only catch up from a snapshot", earliest())

	var join []string
	for _, n := range c.Nodes {
		if n != victim {
			join = append(join, n.ClientURL)
		}
	}
	victim.AddArgs("--set", "etcd.join-endpoints="+strings.Join(join, ","))
	victim.Start()
	victim.WaitReady(60 * time.Second)
	waitUntil(t, 30*time.Second, "the wiped node back in the ISR", func() bool {
		return slices.Contains(bucketState(t, ctx, etcd, tableID).ISR, victim.ID)
	})
	logText, err := os.ReadFile(victim.LogPath())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(logText), "follower bootstrapped from KV snapshot") {
		t.Fatal("the wiped node's replica did not bootstrap from a KV snapshot")
	}
	upsert(200)

	leader.Kill()
	t.Logf("killed leader %d", leader.ID)
	waitUntil(t, 30*time.Second, "the bootstrapped node to lead", func() bool {
		return bucketState(t, ctx, etcd, tableID).Leader == victim.ID
	})
	upsert(200)
	lookups := func(who string) {
		t.Helper()
		lk, err := table.NewLookup().CreateLookuper()
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range latest {
			r, err := lk.Lookup(ctx, fluss.Row{k})
			if err != nil {
				t.Fatalf("lookup %d: %v", k, err)
			}
			if r == nil || r[1].(int64) != v {
				t.Fatalf("key %d: acknowledged version %d, lookup on %s returns %v", k, v, who, r)
			}
		}
	}
	lookups("the bootstrapped leader")

	// A new server replaces the dead leader: its new, empty replica bootstraps from S3 too.
	waitServers(t, ctx, conn, 2)
	if err := admin.AddServerTag(ctx, []int32{leader.ID}, fluss.PermanentOffline); err != nil {
		t.Fatalf("tag the dead server: %v", err)
	}
	fresh := c.AddTabletServer(4, set)
	waitServers(t, ctx, conn, 3)
	id, err := admin.Rebalance(ctx, fluss.ReplicaDistribution)
	if err != nil {
		t.Fatalf("rebalance: %v", err)
	}
	waitUntil(t, 60*time.Second, "the move onto the new server", func() bool {
		p, err := admin.ListRebalanceProgress(ctx, id)
		if err != nil {
			t.Fatalf("rebalance progress: %v", err)
		}
		if p.Status.Final() && p.Status != fluss.RebalanceCompleted {
			t.Fatalf("rebalance ended %s: %+v", p.Status, p.Moves)
		}
		return p.Status.Final()
	})
	rs := bucketState(t, ctx, etcd, tableID).Replicas
	if !slices.Contains(rs, fresh.ID) || slices.Contains(rs, leader.ID) {
		t.Fatalf("replicas after the move: %v", rs)
	}
	t.Logf("replicas after the move onto new server %d: %v", fresh.ID, rs)
	if logText, err = os.ReadFile(fresh.LogPath()); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(logText), "follower bootstrapped from KV snapshot") {
		t.Fatal("the new server's replica did not bootstrap from a KV snapshot")
	}
	upsert(100)
	lookups("the cluster after the move")

	// The files handed to readers are objects in the bucket, under remote.data.dir.
	snaps, err := admin.GetLatestKvSnapshots(ctx, table.Path(), "")
	if err != nil || len(snaps.Snapshots) == 0 {
		t.Fatalf("latest snapshots: %v", err)
	}
	tb := fluss.TableBucket{TableID: tableID, PartitionID: fluss.NoPartition, Bucket: 0}
	md, err := admin.GetKvSnapshotMetadata(ctx, tb, snaps.Snapshots[0].SnapshotID)
	if err != nil {
		t.Fatal(err)
	}
	store, err := remote.Open(ctx, e.Config(""), nil)
	if err != nil {
		t.Fatal(err)
	}
	state := readSnapshotFiles(t, md, func(t *testing.T, p string) string {
		t.Helper()
		key, ok := strings.CutPrefix(p, "s3://"+e.Bucket+"/cluster/kv/")
		if !ok {
			t.Fatalf("snapshot file %q is not under remote.data.dir", p)
		}
		r, err := store.Bucket.Get(ctx, "cluster/kv/"+key)
		if err != nil {
			t.Fatalf("get %s: %v", p, err)
		}
		defer r.Close()
		dst := filepath.Join(t.TempDir(), filepath.Base(key))
		f, err := os.Create(dst)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.ReadFrom(r); err != nil {
			t.Fatalf("read %s: %v", p, err)
		}
		return dst
	})
	if len(state) != keys {
		t.Fatalf("snapshot %d holds %d keys, want %d", snaps.Snapshots[0].SnapshotID, len(state), keys)
	}
	for k, v := range state {
		if v > latest[k] {
			t.Fatalf("snapshot has key %d at version %d, above the last acknowledged %d", k, v, latest[k])
		}
	}
}

// checkS3Token asks GET_FILESYSTEM_SECURITY_TOKEN as the official clients do and checks the
// answer is the one they open the emulator's bucket with.
func checkS3Token(t *testing.T, ctx context.Context, addr string, e *remotetest.Emulator) {
	t.Helper()
	cc, err := wire.Dial(ctx, addr, wire.ClientConfig{SoftwareName: "remote-test"})
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	var resp flusspb.GetFileSystemSecurityTokenResponse
	if err := cc.Call(ctx, wire.GetFilesystemSecurityToken, &flusspb.GetFileSystemSecurityTokenRequest{}, &resp); err != nil {
		t.Fatalf("GET_FILESYSTEM_SECURITY_TOKEN: %v", err)
	}
	var creds struct {
		AccessKeyID     string  `json:"access_key_id"`
		AccessKeySecret string  `json:"access_key_secret"`
		SecurityToken   *string `json:"security_token"`
	}
	if err := json.Unmarshal(resp.GetToken(), &creds); err != nil {
		t.Fatalf("token %q: %v", resp.GetToken(), err)
	}
	info := map[string]string{}
	for _, kv := range resp.GetAdditionInfo() {
		info[kv.GetKey()] = kv.GetValue()
	}
	got := fmt.Sprintf("%s %s %s %s %s %s", resp.GetSchema(), creds.AccessKeyID, creds.AccessKeySecret,
		info["fs.s3a.endpoint"], info["fs.s3a.path.style.access"], info["fs.s3a.endpoint.region"])
	want := fmt.Sprintf("s3 %s %s %s true %s", remotetest.AccessKey, remotetest.SecretKey, e.Endpoint(), remotetest.Region)
	if got != want {
		t.Fatalf("security token: %s, want %s", got, want)
	}
}
