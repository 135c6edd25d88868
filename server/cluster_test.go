package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
	"github.com/stromdb/strom/server/cluster"
	"github.com/stromdb/strom/server/config"
	"github.com/stromdb/strom/server/meta"
)

func freeLoopbackPort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// testCluster is n in-process nodes, each a coordinator, a tablet server (ids 1..n) and an
// embedded etcd member on loopback, authenticated to each other by one cluster secret (as a
// cluster is by default: etcd and the internal listener over mutual TLS).
type testCluster struct {
	t     *testing.T
	nodes []*Node
	cfgs  []config.Config
}

func startTestCluster(t *testing.T, n int, extra ...[2]string) *testCluster {
	t.Helper()
	tc := &testCluster{t: t, nodes: make([]*Node, n), cfgs: make([]config.Config, n)}
	var initial []string
	remote := t.TempDir() // remote.data.dir, shared by the nodes as a cluster requires
	peers := make([]string, n)
	clients := make([]string, n)
	secret := filepath.Join(t.TempDir(), "cluster-secret")
	if err := os.WriteFile(secret, []byte("the in-process test cluster's secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		peers[i] = fmt.Sprintf("https://127.0.0.1:%d", freeLoopbackPort(t))
		clients[i] = fmt.Sprintf("https://127.0.0.1:%d", freeLoopbackPort(t))
		initial = append(initial, fmt.Sprintf("e%d=%s", i+1, peers[i]))
	}
	for i := range n {
		cfg := config.Default()
		cfg.DataDir = t.TempDir()
		cfg.CoordinatorListeners = []config.Listener{{Name: "FLUSS", Host: "127.0.0.1", Port: 0}}
		cfg.TabletListeners = []config.Listener{{Name: "FLUSS", Host: "127.0.0.1", Port: 0}}
		for _, kv := range append([][2]string{
			{"tablet-server.id", fmt.Sprint(i + 1)},
			{"etcd.name", fmt.Sprintf("e%d", i+1)},
			{"etcd.initial-cluster", strings.Join(initial, ",")},
			{"etcd.listen-peer-urls", peers[i]},
			{"etcd.listen-client-urls", clients[i]},
			{"tablet-server.lease-ttl", "2s"},
			{"coordinator.lease-ttl", "2s"},
			{"remote.data.dir", remote},
			{"cluster.secret-file", secret},
		}, extra...) {
			if err := cfg.Set(kv[0], kv[1]); err != nil {
				t.Fatal(err)
			}
		}
		tc.cfgs[i] = cfg
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tc.nodes[i], errs[i] = Start(context.Background(), tc.cfgs[i], testLogger())
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("node %d: %v", i+1, err)
		}
	}
	t.Cleanup(func() {
		var wg sync.WaitGroup
		for _, n := range tc.nodes {
			if n != nil {
				wg.Add(1)
				go func() { defer wg.Done(); n.Close() }()
			}
		}
		wg.Wait()
	})
	tc.waitFor("an active coordinator and every tablet server registered", func() bool {
		if tc.active() < 0 {
			return false
		}
		for _, nd := range tc.nodes {
			if len(nd.Control().LiveServers()) != n {
				return false
			}
		}
		return true
	})
	return tc
}

func testLogger() *slog.Logger {
	if os.Getenv("STROM_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// active returns the index of the active coordinator, -1 if none.
func (tc *testCluster) active() int {
	for i, n := range tc.nodes {
		if n != nil && n.Control().Active() {
			return i
		}
	}
	return -1
}

func (tc *testCluster) waitFor(what string, cond func() bool) {
	tc.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			tc.t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (tc *testCluster) dial(i int, role string) *wire.ClientConn {
	tc.t.Helper()
	cc, err := wire.Dial(context.Background(), tc.nodes[i].Addr(role), wire.ClientConfig{})
	if err != nil {
		tc.t.Fatal(err)
	}
	tc.t.Cleanup(func() { cc.Close() })
	return cc
}

func (tc *testCluster) stop(i int) {
	tc.t.Helper()
	if err := tc.nodes[i].Close(); err != nil {
		tc.t.Fatalf("close node %d: %v", i+1, err)
	}
	tc.nodes[i] = nil
}

func logTableJSON(buckets int32, rf int) []byte {
	d := metadata.TableDescriptor{
		Schema:      metadata.Schema{Columns: []metadata.Column{{Name: "id", Type: metadata.DataType{Root: metadata.Int}}}},
		BucketCount: buckets, Properties: map[string]string{"table.replication.factor": fmt.Sprint(rf)}, CustomProperties: map[string]string{},
	}
	d.Schema.AssignFieldIDs()
	return d.JSON()
}

func createClusterTable(cc *wire.ClientConn, name string, buckets int32, rf int) error {
	return cc.Call(context.Background(), wire.CreateTable, &flusspb.CreateTableRequest{
		TablePath: &flusspb.PbTablePath{DatabaseName: proto.String("fluss"), TableName: proto.String(name)},
		TableJson: logTableJSON(buckets, rf), IgnoreIfExists: proto.Bool(false),
	}, &flusspb.CreateTableResponse{})
}

func metadataOf(t *testing.T, cc *wire.ClientConn, table string) *flusspb.MetadataResponse {
	t.Helper()
	var resp flusspb.MetadataResponse
	req := &flusspb.MetadataRequest{}
	if table != "" {
		req.TablePath = []*flusspb.PbTablePath{{DatabaseName: proto.String("fluss"), TableName: proto.String(table)}}
	}
	if err := cc.Call(context.Background(), wire.GetMetadata, req, &resp); err != nil {
		t.Fatalf("GET_METADATA: %v", err)
	}
	return &resp
}

// TestClusterAssignsReplicasEvenly creates a table through a standby (forwarded to the
// active coordinator) and checks, on every node, that each bucket has RF replicas on
// distinct live servers, its first replica leads, and leaders and replicas are spread evenly.
func TestClusterAssignsReplicasEvenly(t *testing.T) {
	tc := startTestCluster(t, 3)
	standby := (tc.active() + 1) % 3
	if err := createClusterTable(tc.dial(standby, "coordinator"), "spread", 6, 2); err != nil {
		t.Fatalf("create table through a standby: %v", err)
	}
	for i := range tc.nodes {
		md := metadataOf(t, tc.dial(i, "tablet-server"), "spread")
		if len(md.TabletServers) != 3 {
			t.Fatalf("node %d lists %d tablet servers, want 3", i+1, len(md.TabletServers))
		}
		if got, want := md.CoordinatorServer.GetPort(), tc.nodes[tc.active()].Addr("coordinator"); !strings.HasSuffix(want, fmt.Sprintf(":%d", got)) {
			t.Fatalf("node %d names coordinator port %d, the active one is %s", i+1, got, want)
		}
		leaders, replicas := map[int32]int{}, map[int32]int{}
		buckets := md.TableMetadata[0].BucketMetadata
		if len(buckets) != 6 {
			t.Fatalf("node %d: %d buckets", i+1, len(buckets))
		}
		for _, b := range buckets {
			r := b.GetReplicaId()
			if len(r) != 2 || r[0] == r[1] || b.GetLeaderId() != r[0] || b.GetLeaderEpoch() != 0 {
				t.Fatalf("node %d bucket %d: leader %d replicas %v epoch %d", i+1, b.GetBucketId(), b.GetLeaderId(), r, b.GetLeaderEpoch())
			}
			leaders[b.GetLeaderId()]++
			for _, id := range r {
				replicas[id]++
			}
		}
		for id := int32(1); id <= 3; id++ {
			if leaders[id] != 2 || replicas[id] != 4 {
				t.Fatalf("node %d: leaders %v replicas %v, want 2 and 4 per server", i+1, leaders, replicas)
			}
		}
	}
	// More replicas than live servers: Fluss's error, and no table.
	err := createClusterTable(tc.dial(tc.active(), "coordinator"), "too_many", 1, 4)
	if ferr.CodeOf(err) != ferr.InvalidReplicationFactor {
		t.Fatalf("RF 4 on 3 servers: %v, want INVALID_REPLICATION_FACTOR", err)
	}
	var exists flusspb.TableExistsResponse
	if err := tc.dial(0, "coordinator").Call(context.Background(), wire.TableExists, &flusspb.TableExistsRequest{
		TablePath: &flusspb.PbTablePath{DatabaseName: proto.String("fluss"), TableName: proto.String("too_many")}}, &exists); err != nil || exists.GetExists() {
		t.Fatalf("table too_many exists %v (%v)", exists.GetExists(), err)
	}

	// Every leader opened its buckets; dropping the table (through a standby) deletes the
	// states and every server's copy.
	tableID := metadataOf(t, tc.dial(0, "tablet-server"), "spread").TableMetadata[0].GetTableId()
	dirs := make([]string, len(tc.nodes))
	for i := range tc.nodes {
		dirs[i] = filepath.Join(tc.cfgs[i].DataDir, "tablet", fmt.Sprintf("table-%d", tableID))
		if _, err := os.Stat(dirs[i]); err != nil {
			t.Fatalf("node %d has no data of the table it leads buckets of: %v", i+1, err)
		}
	}
	if err := tc.dial(standby, "coordinator").Call(context.Background(), wire.DropTable, &flusspb.DropTableRequest{
		TablePath: &flusspb.PbTablePath{DatabaseName: proto.String("fluss"), TableName: proto.String("spread")}, IgnoreIfNotExists: proto.Bool(false)}, &flusspb.DropTableResponse{}); err != nil {
		t.Fatalf("drop through a standby: %v", err)
	}
	tc.waitFor("every copy of the dropped table deleted", func() bool {
		for i, d := range dirs {
			if _, err := os.Stat(d); err == nil {
				return false
			}
			if _, ok := tc.nodes[i].Control().State(bucketOf(tableID, 0)); ok {
				return false
			}
		}
		return true
	})
}

// TestClusterCoordinatorTakeover closes the active coordinator: a standby takes over, names
// itself coordinator in GET_METADATA everywhere, and serves DDL; the catalog written before
// is there on every node.
func TestClusterCoordinatorTakeover(t *testing.T) {
	tc := startTestCluster(t, 3)
	first := tc.active()
	if err := createClusterTable(tc.dial(first, "coordinator"), "before", 3, 3); err != nil {
		t.Fatal(err)
	}
	tc.stop(first)
	tc.waitFor("a new active coordinator", func() bool { return tc.active() >= 0 })
	next := tc.active()
	other := 3 - first - next
	tc.waitFor("the new coordinator in metadata", func() bool {
		md := metadataOf(t, tc.dial(other, "tablet-server"), "")
		return strings.HasSuffix(tc.nodes[next].Addr("coordinator"), fmt.Sprintf(":%d", md.CoordinatorServer.GetPort()))
	})
	if err := createClusterTable(tc.dial(other, "coordinator"), "after", 2, 2); err != nil {
		t.Fatalf("DDL after takeover, through the standby: %v", err)
	}
	tc.waitFor("both tables on the standby", func() bool {
		md := metadataOf(t, tc.dial(other, "tablet-server"), "before")
		md2 := metadataOf(t, tc.dial(other, "tablet-server"), "after")
		return len(md.TableMetadata) == 1 && len(md2.TableMetadata) == 1 && len(md2.TableMetadata[0].BucketMetadata) == 2
	})
	// The dead server's leaderships moved: every bucket of "before" is led by a live server.
	tc.waitFor("no bucket led by the closed server", func() bool {
		for _, b := range metadataOf(t, tc.dial(next, "tablet-server"), "before").TableMetadata[0].BucketMetadata {
			if b.LeaderId == nil || b.GetLeaderId() == int32(first+1) {
				return false
			}
		}
		return true
	})
}

// TestClusterFailover crashes a tablet server that leads buckets (no controlled shutdown;
// its lease expires): each of its buckets gets
// the next live ISR member as leader with a higher leader epoch, the closed server leaves
// the ISR; when the only ISR member dies the bucket has no leader, and gets it back when
// that server returns.
func TestClusterFailover(t *testing.T) {
	tc := startTestCluster(t, 3)
	act := tc.active()
	cc := tc.dial(act, "coordinator")
	if err := createClusterTable(cc, "rf2", 3, 2); err != nil {
		t.Fatal(err)
	}
	if err := createClusterTable(cc, "rf1", 3, 1); err != nil {
		t.Fatal(err)
	}
	victim := (act + 1) % 3
	victimID := int32(victim + 1)
	before := map[int32][]int32{}
	for _, b := range metadataOf(t, tc.dial(act, "tablet-server"), "rf2").TableMetadata[0].BucketMetadata {
		before[b.GetBucketId()] = b.GetReplicaId()
	}
	tc.crash(victim)
	ctl := tc.nodes[act].Control()
	tc.waitFor("leaders moved off the closed server", func() bool {
		for _, b := range metadataOf(t, tc.dial(act, "tablet-server"), "rf2").TableMetadata[0].BucketMetadata {
			if b.GetLeaderId() == victimID || b.LeaderId == nil {
				return false
			}
		}
		for _, b := range metadataOf(t, tc.dial(act, "tablet-server"), "rf1").TableMetadata[0].BucketMetadata {
			if b.GetLeaderId() == victimID {
				return false
			}
		}
		return true
	})
	md := metadataOf(t, tc.dial(act, "tablet-server"), "rf2")
	if len(md.TabletServers) != 2 {
		t.Fatalf("%d live tablet servers listed, want 2", len(md.TabletServers))
	}
	tableID := md.TableMetadata[0].GetTableId()
	for _, b := range md.TableMetadata[0].BucketMetadata {
		r := before[b.GetBucketId()]
		st, _ := ctl.State(bucketOf(tableID, b.GetBucketId()))
		if r[0] == victimID {
			if st.Leader != r[1] || st.LeaderEpoch != 1 || st.BucketEpoch != 1 || st.InISR(victimID) {
				t.Fatalf("bucket %d (replicas %v) after its leader died: %+v", b.GetBucketId(), r, st)
			}
		} else if st.LeaderEpoch != 0 {
			t.Fatalf("bucket %d (replicas %v) changed though its leader lives: %+v", b.GetBucketId(), r, st)
		}
	}
	// RF 1 buckets on the victim have no leader (no unclean election), and keep their ISR.
	rf1 := metadataOf(t, tc.dial(act, "tablet-server"), "rf1").TableMetadata[0]
	orphan := int32(-1)
	for _, b := range rf1.BucketMetadata {
		if b.GetReplicaId()[0] == victimID {
			orphan = b.GetBucketId()
			if b.LeaderId != nil {
				t.Fatalf("bucket %d of rf1 is led by %d; its only replica is dead", orphan, b.GetLeaderId())
			}
			st, _ := ctl.State(bucketOf(rf1.GetTableId(), orphan))
			if !st.InISR(victimID) || st.LeaderEpoch != 1 {
				t.Fatalf("leaderless bucket: %+v", st)
			}
		}
	}
	if orphan < 0 {
		t.Fatal("no rf1 bucket on the victim")
	}
	var health flusspb.GetClusterHealthResponse
	if err := tc.dial(act, "coordinator").Call(context.Background(), wire.GetClusterHealth, &flusspb.GetClusterHealthRequest{}, &health); err != nil {
		t.Fatal(err)
	}
	// 6 buckets; rf2: 6 replicas, 4 in sync (the victim left the ISR of the bucket it led and
	// of the one it followed); rf1: 3 and 3 (the leaderless bucket keeps its ISR).
	if health.GetStatus() != 2 || health.GetNumLeaderReplicas() != 6 || health.GetActiveLeaderReplicas() != 5 || health.GetNumReplicas() != 9 || health.GetInSyncReplicas() != 7 {
		t.Fatalf("cluster health with a leaderless bucket: %v", &health)
	}
	// The server returns: it is elected leader of its leaderless bucket.
	n, err := Start(context.Background(), tc.cfgs[victim], testLogger())
	if err != nil {
		t.Fatalf("restart node %d: %v", victim+1, err)
	}
	tc.nodes[victim] = n
	tc.waitFor("the returning server to lead its leaderless bucket", func() bool {
		st, _ := ctl.State(bucketOf(rf1.GetTableId(), orphan))
		return st.Leader == victimID && st.LeaderEpoch == 2
	})
}

// TestClusterDeposedCoordinatorCannotWrite takes the election lease away from the active
// coordinator (as when it is cut off from etcd longer than coordinator.lease-ttl): its
// writes fail with NOT_COORDINATOR_LEADER from that moment, even before it notices, and a
// standby takes over.
func TestClusterDeposedCoordinatorCannotWrite(t *testing.T) {
	tc := startTestCluster(t, 3)
	a := tc.active()
	node := tc.nodes[a]
	fence, ok := node.Control().Fence()
	if !ok {
		t.Fatal("the active coordinator has no fence")
	}
	cli := node.store.Client()
	ctx := context.Background()
	resp, err := cli.Get(ctx, meta.KeyPrefix+fence.Key)
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("election key: %v %v", resp, err)
	}
	if _, err := cli.Revoke(ctx, clientv3.LeaseID(resp.Kvs[0].Lease)); err != nil {
		t.Fatal(err)
	}
	// A write under the old fence, whether or not the node noticed yet.
	stale := meta.NewFencedStore(node.store, func() (meta.Fence, bool) { return fence, true })
	_, err = stale.Txn(ctx, nil, []meta.Op{meta.Put("databases/stale", []byte("{}"))})
	if ferr.CodeOf(err) != ferr.NotCoordinatorLeaderException {
		t.Fatalf("write under a revoked fence: %v, want NOT_COORDINATOR_LEADER", err)
	}
	// A DDL through the deposed node is never written under its old fence: its own write
	// fails, and it waits for the election and forwards the DDL to the new coordinator
	// (server/coordinator/forward.go), or fails with NOT_COORDINATOR_LEADER if none is
	// elected in time.
	err = node.coordinator.CreateDatabase(ctx, "stale", nil, false)
	switch {
	case err == nil:
		i := tc.active()
		if i < 0 {
			t.Fatal("the deposed coordinator's DDL succeeded without an active coordinator")
		}
		if f, ok := tc.nodes[i].Control().Fence(); !ok || f.Epoch <= fence.Epoch {
			t.Fatal("the deposed coordinator's DDL succeeded without a newer coordinator")
		}
	case ferr.CodeOf(err) == ferr.NotCoordinatorLeaderException:
		if _, err := node.store.Get(ctx, "databases/stale"); err != meta.ErrNotFound {
			t.Fatalf("the deposed coordinator's database exists (%v)", err)
		}
	default:
		t.Fatalf("DDL of the deposed coordinator: %v, want it forwarded or NOT_COORDINATOR_LEADER", err)
	}
	tc.waitFor("a coordinator with a newer epoch", func() bool {
		i := tc.active()
		if i < 0 {
			return false
		}
		f, ok := tc.nodes[i].Control().Fence()
		return ok && f.Epoch > fence.Epoch
	})
	// The new coordinator writes; the cluster serves DDL again.
	if err := createClusterTable(tc.dial(tc.active(), "coordinator"), "after_fence", 1, 3); err != nil {
		t.Fatal(err)
	}
}

// TestClusterControlledShutdown: a stopping tablet server's leaderships move to other ISR
// members while it is still registered; a bucket with no other ISR member stays with it.
func TestClusterControlledShutdown(t *testing.T) {
	tc := startTestCluster(t, 3)
	act := tc.active()
	cc := tc.dial(act, "coordinator")
	if err := createClusterTable(cc, "moving", 3, 3); err != nil {
		t.Fatal(err)
	}
	if err := createClusterTable(cc, "single", 3, 1); err != nil {
		t.Fatal(err)
	}
	leaving := (act + 1) % 3
	id := int32(leaving + 1)
	if err := tc.nodes[leaving].Control().ControlledShutdown(context.Background(), 5*time.Second); err != nil {
		t.Logf("controlled shutdown: %v (expected: a single-replica bucket cannot move)", err)
	}
	ctl := tc.nodes[act].Control()
	if !slices.Contains(ctl.LiveServers(), id) {
		t.Fatal("the server left before its leaderships moved")
	}
	moving := metadataOf(t, tc.dial(act, "tablet-server"), "moving").TableMetadata[0]
	for _, b := range moving.BucketMetadata {
		st, _ := ctl.State(bucketOf(moving.GetTableId(), b.GetBucketId()))
		if st.Leader == id || b.GetLeaderId() == id {
			t.Fatalf("bucket %d still led by the stopping server: %+v", b.GetBucketId(), st)
		}
		if st.Replicas[0] == id && (st.LeaderEpoch != 1 || st.InISR(id)) {
			t.Fatalf("bucket %d moved without a new epoch or kept the server in its ISR: %+v", b.GetBucketId(), st)
		}
	}
	single := metadataOf(t, tc.dial(act, "tablet-server"), "single").TableMetadata[0]
	kept := 0
	for _, b := range single.BucketMetadata {
		if b.GetReplicaId()[0] == id {
			kept++
			if b.GetLeaderId() != id {
				t.Fatalf("single-replica bucket %d lost its only leader: %v", b.GetBucketId(), b)
			}
		}
	}
	if kept == 0 {
		t.Fatal("no single-replica bucket on the stopping server")
	}
}

// TestClusterReplicationControl exercises cluster.ReplicationControl over etcd as a bucket's
// leader uses it: ISR changes by compare-and-swap, lineage publication fenced by the leader
// epoch, and replication addresses from the registrations.
func TestClusterReplicationControl(t *testing.T) {
	tc := startTestCluster(t, 3)
	if err := createClusterTable(tc.dial(tc.active(), "coordinator"), "isr", 1, 3); err != nil {
		t.Fatal(err)
	}
	tableID := metadataOf(t, tc.dial(0, "tablet-server"), "isr").TableMetadata[0].GetTableId()
	b := bucketOf(tableID, 0)
	ctl := tc.nodes[0].Control()
	var st cluster.BucketState
	tc.waitFor("the bucket state", func() bool { var ok bool; st, ok = ctl.State(b); return ok })
	ctx := context.Background()
	follower := st.Replicas[2]

	shrunk, err := ctl.AdjustISR(ctx, b, st, []int32{st.Leader, st.Replicas[1]})
	if err != nil {
		t.Fatalf("shrink: %v", err)
	}
	if shrunk.BucketEpoch != st.BucketEpoch+1 || shrunk.LeaderEpoch != st.LeaderEpoch || shrunk.InISR(follower) {
		t.Fatalf("after shrink: %+v", shrunk)
	}
	if _, err := ctl.AdjustISR(ctx, b, st, st.Replicas); ferr.CodeOf(err) != ferr.FencedLeaderEpochException {
		t.Fatalf("ISR change against a stale state: %v, want FENCED_LEADER_EPOCH", err)
	}
	if _, err := ctl.AdjustISR(ctx, b, shrunk, []int32{st.Replicas[1]}); ferr.CodeOf(err) != ferr.InvalidUpdateVersionException {
		t.Fatalf("ISR without its leader: %v, want INVALID_UPDATE_VERSION", err)
	}
	if _, err := ctl.AdjustISR(ctx, b, shrunk, []int32{st.Leader, 99}); ferr.CodeOf(err) != ferr.InvalidUpdateVersionException {
		t.Fatalf("ISR with a non-replica: %v, want INVALID_UPDATE_VERSION", err)
	}
	// Every node sees the change through its watch (or a later one: the leader may take the
	// caught-up follower back into the ISR at once).
	tc.waitFor("the shrunk ISR everywhere", func() bool {
		for _, n := range tc.nodes {
			if s, _ := n.Control().State(b); s.BucketEpoch < shrunk.BucketEpoch {
				return false
			}
		}
		return true
	})

	// The leader published its lineage when it took the bucket.
	tc.waitFor("the leader's lineage", func() bool {
		l, ok, err := ctl.Lineage(ctx, b)
		return err == nil && ok && l.LeaderEpoch == shrunk.LeaderEpoch
	})
	l := cluster.Lineage{LeaderEpoch: shrunk.LeaderEpoch, Entries: []cluster.EpochStart{{Epoch: 0, StartOffset: 0}}}
	if err := ctl.PublishLineage(ctx, b, l); err != nil {
		t.Fatal(err)
	}
	if err := ctl.PublishLineage(ctx, b, cluster.Lineage{LeaderEpoch: shrunk.LeaderEpoch + 1}); ferr.CodeOf(err) != ferr.FencedLeaderEpochException {
		t.Fatalf("lineage of another leader epoch: %v, want FENCED_LEADER_EPOCH", err)
	}
	got, ok, err := tc.nodes[2].Control().Lineage(ctx, b)
	if err != nil || !ok || got.LeaderEpoch != l.LeaderEpoch || len(got.Entries) != 1 {
		t.Fatalf("lineage read on another node: %+v %v %v", got, ok, err)
	}

	for i := range tc.nodes {
		addr, ok := ctl.ReplicationAddr(int32(i + 1))
		if !ok || addr != tc.nodes[i].Addr("tablet-server") {
			t.Fatalf("replication address of %d: %q %v, want %s", i+1, addr, ok, tc.nodes[i].Addr("tablet-server"))
		}
	}
	if _, ok := ctl.ReplicationAddr(42); ok {
		t.Fatal("an address for an unregistered server")
	}
}

// TestClusterReturningServerDropsStrayCopies stops a server, drops a table one of whose
// buckets it held, and restarts it with a copy left on its disk of a bucket that lives on
// another server (as after a move while it was away): on its return it deletes both, and
// keeps its own replicas and anything on disk that is not a bucket directory.
func TestClusterReturningServerDropsStrayCopies(t *testing.T) {
	tc := startTestCluster(t, 3)
	act := tc.active()
	cc := tc.dial(act, "coordinator")
	for _, tbl := range []struct {
		name string
		rf   int
	}{{"gone", 1}, {"elsewhere", 1}, {"everywhere", 3}} {
		if err := createClusterTable(cc, tbl.name, 3, tbl.rf); err != nil {
			t.Fatal(err)
		}
	}
	victim := (act + 1) % 3
	victimID := int32(victim + 1)
	root := filepath.Join(tc.cfgs[victim].DataDir, "tablet")
	meta := func(name string) *flusspb.PbTableMetadata {
		return metadataOf(t, tc.dial(act, "tablet-server"), name).TableMetadata[0]
	}
	gone, elsewhere, everywhere := meta("gone"), meta("elsewhere"), meta("everywhere")
	var goneDirs []string
	for _, b := range gone.BucketMetadata {
		if b.GetReplicaId()[0] == victimID {
			goneDirs = append(goneDirs, bucketDirOf(root, gone.GetTableId(), b.GetBucketId()))
		}
	}
	var foreign string
	for _, b := range elsewhere.BucketMetadata {
		if b.GetReplicaId()[0] != victimID {
			foreign = bucketDirOf(root, elsewhere.GetTableId(), b.GetBucketId())
		}
	}
	if len(goneDirs) == 0 || foreign == "" {
		t.Fatalf("assignment gave the victim %d buckets of gone and none or all of elsewhere", len(goneDirs))
	}
	tc.waitFor("the victim's replicas on disk", func() bool {
		for _, d := range goneDirs {
			if _, err := os.Stat(d); err != nil {
				return false
			}
		}
		return true
	})
	tc.stop(victim)
	if err := cc.Call(context.Background(), wire.DropTable, &flusspb.DropTableRequest{
		TablePath: &flusspb.PbTablePath{DatabaseName: proto.String("fluss"), TableName: proto.String("gone")}, IgnoreIfNotExists: proto.Bool(false)}, &flusspb.DropTableResponse{}); err != nil {
		t.Fatal(err)
	}
	// A stale copy of a bucket another server holds, and things that are not bucket
	// directories, which must survive.
	notes := filepath.Join(root, fmt.Sprintf("table-%d", everywhere.GetTableId()), "notes")
	other := filepath.Join(root, "table-x", "bucket-0")
	for _, d := range []string{foreign, notes, other} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(foreign, "00000000000000000000.log"), []byte("stale"), 0o644); err != nil {
		t.Fatal(err)
	}

	n, err := Start(context.Background(), tc.cfgs[victim], testLogger())
	if err != nil {
		t.Fatalf("restart node %d: %v", victim+1, err)
	}
	tc.nodes[victim] = n
	for _, d := range append(goneDirs, foreign, filepath.Dir(goneDirs[0])) {
		if _, err := os.Stat(d); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s survived the return (%v)", d, err)
		}
	}
	for _, d := range []string{notes, other} {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s, not a bucket directory, was touched: %v", d, err)
		}
	}
	for _, b := range everywhere.BucketMetadata {
		if d := bucketDirOf(root, everywhere.GetTableId(), b.GetBucketId()); !dirExists(d) {
			t.Errorf("the victim's own replica %s was removed", d)
		}
	}
}

func bucketDirOf(root string, tableID int64, bucket int32) string {
	return filepath.Join(root, fmt.Sprintf("table-%d", tableID), fmt.Sprintf("bucket-%d", bucket))
}

func dirExists(d string) bool {
	fi, err := os.Stat(d)
	return err == nil && fi.IsDir()
}
