package kvsnap

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/rocksdbdir"
	"github.com/stromdb/strom/server/cluster"
	"github.com/stromdb/strom/server/control"
	"github.com/stromdb/strom/server/meta"
	"github.com/stromdb/strom/server/remote"
)

// noReplicas gives a Control the tablet role without a tablet server.
type noReplicas struct{}

func (noReplicas) BecomeLeader(context.Context, *cluster.TableInfo, *cluster.PartitionInfo) error {
	return nil
}
func (noReplicas) StopReplicas(context.Context, int64, int64) error { return nil }

// etcdHarness is a cluster's view of KV snapshots: managers of several nodes on one etcd and
// one shared remote directory, over the state of the harness's bucket.
type etcdHarness struct {
	*harness
	store  *meta.EtcdStore
	remote string
	ctx    context.Context
}

func newEtcdHarness(t *testing.T) *etcdHarness {
	h := &etcdHarness{harness: newHarness(t), remote: filepath.Join(t.TempDir(), "shared-remote")}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	h.ctx = ctx
	var err error
	h.store, err = meta.OpenEmbedded(ctx, filepath.Join(t.TempDir(), "etcd"), discard())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.store.Close() })
	return h
}

// setState stores the bucket's state: leader at epoch.
func (h *etcdHarness) setState(leader, epoch int32) {
	h.t.Helper()
	st := cluster.BucketState{Replicas: []int32{1, 2, 3}, Leader: leader, LeaderEpoch: epoch, ISR: []int32{1, 2, 3}, BucketEpoch: epoch}
	v, _ := json.Marshal(st)
	if _, err := h.store.Txn(h.ctx, nil, []meta.Op{meta.Put(control.BucketKey(testBucket), v)}); err != nil {
		h.t.Fatal(err)
	}
}

// tabletManager is the manager of tablet server id: it commits as that server's leadership.
func (h *etcdHarness) tabletManager(id int32) *Manager {
	h.t.Helper()
	ctl := control.New(control.Options{Store: h.store, Log: discard(), Registration: control.Registration{ID: id}, Replicas: noReplicas{}})
	m := h.open(Options{Meta: h.store, Fence: ctl, Active: func() bool { return false }})
	return m
}

// coordinatorManager is the manager of a coordinator whose election key is fenceKey: its
// lease changes and cleanup hold only while that key exists at the revision it has now.
func (h *etcdHarness) coordinatorManager(fenceKey string) *Manager {
	h.t.Helper()
	if _, err := h.store.Txn(h.ctx, nil, []meta.Op{meta.Put(fenceKey, []byte("x"))}); err != nil {
		h.t.Fatal(err)
	}
	resp, err := h.store.Client().Get(h.ctx, meta.KeyPrefix+fenceKey)
	if err != nil {
		h.t.Fatal(err)
	}
	fence := meta.Fence{Key: fenceKey, Epoch: resp.Kvs[0].CreateRevision}
	admin := meta.NewFencedStore(h.store, func() (meta.Fence, bool) { return fence, true })
	return h.open(Options{Meta: h.store, Admin: admin, Active: func() bool { return true }})
}

func (h *etcdHarness) open(o Options) *Manager {
	h.t.Helper()
	o.Config = Config{Interval: time.Hour, NumRetained: 1}
	st, err := remote.Open(h.ctx, remote.Config{DataDir: h.remote}, nil)
	if err != nil {
		h.t.Fatal(err)
	}
	o.Remote, o.LocalDir = st, h.t.TempDir() // one store, a local directory per node
	o.Catalog, o.Logger, o.Watch = catalog{}, discard(), h.store.Client()
	o.Now = func() time.Time { return h.now }
	m, err := Open(h.ctx, o)
	if err != nil {
		h.t.Fatal(err)
	}
	go m.follow(h.ctx)
	return m
}

func (h *etcdHarness) snapshotAs(m *Manager, epoch int32) (*Snapshot, error) {
	s, _, err := m.SnapshotBucket(h.ctx, Bucket{Bucket: testBucket, KV: h.tab, LeaderEpoch: epoch})
	return s, err
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestClusterSnapshotsFencedByLeaderEpoch: the coordinator sees the snapshots tablet servers
// commit; a deposed leader commits nothing; ids keep growing across a leader change, and the
// new leader builds incrementally on its predecessor's files without sharing file names.
func TestClusterSnapshotsFencedByLeaderEpoch(t *testing.T) {
	h := newEtcdHarness(t)
	h.setState(1, 0)
	m1, m2 := h.tabletManager(1), h.tabletManager(2)
	coord := h.coordinatorManager("coordinator/election/a")
	batch := map[int]string{}
	for i := 0; i < 200; i++ {
		batch[i] = "v0"
	}
	h.put(batch)
	s0, err := h.snapshotAs(m1, 0)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "the coordinator to see snapshot 0", func() bool { s, ok := coord.Latest(testBucket); return ok && s.ID == s0.ID })

	// Server 2 is not the leader: it commits nothing.
	h.put(map[int]string{1: "v1"})
	if _, err := h.snapshotAs(m2, 0); ferr.CodeOf(err) != ferr.FencedLeaderEpochException {
		t.Fatalf("snapshot by a follower: %v, want FENCED_LEADER_EPOCH", err)
	}
	// The leadership moves to server 2 at epoch 1: server 1 at epoch 0 is deposed.
	h.setState(2, 1)
	if _, err := h.snapshotAs(m1, 0); ferr.CodeOf(err) != ferr.FencedLeaderEpochException {
		t.Fatalf("snapshot by a deposed leader: %v, want FENCED_LEADER_EPOCH", err)
	}
	if ss, _ := m1.listBucket(h.ctx, testBucket); len(ss) != 1 {
		t.Fatalf("%d snapshots committed, want only snapshot 0", len(ss))
	}
	s1, err := h.snapshotAs(m2, 1)
	if err != nil {
		t.Fatal(err)
	}
	if s1.ID != s0.ID+1 || s1.Dir != "snap-1-e1" || len(s1.Tables) != 2 || s1.Tables[1].Number != s0.Tables[0].Number || s1.Tables[0].Number < 1<<32 {
		t.Fatalf("new leader's snapshot %+v: want id %d, dir snap-1-e1, one new table numbered from 1<<32 on top of %+v", s1, s0.ID+1, s0.Tables)
	}
	eventually(t, "the coordinator to see snapshot 1", func() bool { s, ok := coord.Latest(testBucket); return ok && s.ID == s1.ID })
	sameState(t, "snapshot 1 read through the coordinator's view", h.readWith(coord, s1), h.current())
	// An old leader that is leader again at a later epoch goes on numbering upwards.
	h.setState(1, 2)
	h.put(map[int]string{2: "v2"})
	s2, err := h.snapshotAs(m1, 2)
	if err != nil || s2.ID != s1.ID+1 {
		t.Fatalf("snapshot after a second leader change: %+v %v", s2, err)
	}
}

// readWith reads snapshot s from the files m lists for it.
func (h *etcdHarness) readWith(m *Manager, s *Snapshot) map[string]string {
	h.t.Helper()
	return readSnapshot(h.t, m.opts.Remote, s)
}

// TestClusterLeasesSurviveCoordinatorFailover: leases live in etcd; every node's floor honours
// them; cleanup by the active coordinator keeps leased and latest snapshots and deletes the
// rest; a deposed coordinator changes nothing; its successor sees and changes the leases.
func TestClusterLeasesSurviveCoordinatorFailover(t *testing.T) {
	h := newEtcdHarness(t)
	h.setState(1, 0)
	leader := h.tabletManager(1)
	coord := h.coordinatorManager("coordinator/election/a")
	var snaps []*Snapshot
	for i := 0; i < 3; i++ {
		h.put(map[int]string{i: "x", 100 + i: "y", 200 + i: "z"})
		s, err := h.snapshotAs(leader, 0)
		if err != nil {
			t.Fatal(err)
		}
		snaps = append(snaps, s)
	}
	eventually(t, "the coordinator to see every snapshot", func() bool { _, ok := coord.Get(testBucket, snaps[2].ID); return ok })
	unavailable, err := coord.Acquire(h.ctx, "job", 60_000, []Ref{{testBucket, snaps[0].ID}, {testBucket, 42}})
	if err != nil || len(unavailable) != 1 || unavailable[0].ID != 42 {
		t.Fatalf("acquire: %v %v", unavailable, err)
	}
	eventually(t, "the leader's floor to honour the lease", func() bool { return leader.Floor(testBucket) == snaps[0].LogOffset })
	if err := coord.Cleanup(h.ctx); err != nil {
		t.Fatal(err)
	}
	if ss, _ := coord.listBucket(h.ctx, testBucket); len(ss) != 2 || ss[0].ID != snaps[0].ID || ss[1].ID != snaps[2].ID {
		t.Fatalf("after cleanup: %+v, want the leased snapshot 0 and the latest 2", ss)
	}

	// The coordinator is deposed (its election key is gone): it changes nothing.
	if _, err := h.store.Txn(h.ctx, nil, []meta.Op{meta.Delete("coordinator/election/a")}); err != nil {
		t.Fatal(err)
	}
	if _, err := coord.Acquire(h.ctx, "other", 60_000, []Ref{{testBucket, snaps[2].ID}}); ferr.CodeOf(err) != ferr.NotCoordinatorLeaderException {
		t.Fatalf("acquire on a deposed coordinator: %v", err)
	}
	h.now = h.now.Add(2 * time.Minute) // the lease expired
	if err := coord.Cleanup(h.ctx); ferr.CodeOf(err) != ferr.NotCoordinatorLeaderException {
		t.Fatalf("cleanup on a deposed coordinator: %v", err)
	}
	if ss, _ := coord.listBucket(h.ctx, testBucket); len(ss) != 2 {
		t.Fatalf("a deposed coordinator's cleanup deleted snapshots: %+v", ss)
	}
	h.now = h.now.Add(-2 * time.Minute)

	// Its successor finds the lease and releases it; cleanup then drops snapshot 0 and its files.
	next := h.coordinatorManager("coordinator/election/b")
	if tables := next.LeaseTables("job"); len(tables) != 1 || tables[0] != testBucket.TableID {
		t.Fatalf("successor's view of the lease: %v", tables)
	}
	if err := next.Release(h.ctx, "job", []cluster.Bucket{testBucket}); err != nil {
		t.Fatal(err)
	}
	if err := next.Cleanup(h.ctx); err != nil {
		t.Fatal(err)
	}
	if ss, _ := next.listBucket(h.ctx, testBucket); len(ss) != 1 || ss[0].ID != snaps[2].ID {
		t.Fatalf("after release and cleanup: %+v, want only the latest", ss)
	}
	eventually(t, "the leader's view to drop snapshot 0", func() bool { _, ok := leader.Get(testBucket, snaps[0].ID); return !ok })
	sameState(t, "the latest snapshot after cleanup", h.readWith(next, snaps[2]), h.current())
	rows, ok, err := leader.OpenLatest(h.ctx, testBucket)
	if err != nil || !ok || rows.Snapshot.ID != snaps[2].ID {
		t.Fatalf("open latest: %v %v", ok, err)
	}
	n := 0
	for ; rows.Valid(); rows.Next() {
		n++
	}
	rows.Close()
	if n != len(h.current()) || rows.Err() != nil {
		t.Fatalf("latest snapshot has %d rows (err %v), want %d", n, rows.Err(), len(h.current()))
	}
}

// TestLeaderSweepsFilesOfFailedPasses: before a pass, the leader deletes the tables and
// directories no committed snapshot lists that a leader of its epoch or an earlier one wrote,
// and leaves listed files and those a later leader may be writing.
func TestLeaderSweepsFilesOfFailedPasses(t *testing.T) {
	h := newEtcdHarness(t)
	h.setState(1, 1)
	m1 := h.tabletManager(1)
	batch := map[int]string{}
	for i := 0; i < 100; i++ {
		batch[i] = "a"
	}
	h.put(batch)
	s0, err := h.snapshotAs(m1, 1)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(h.remote, filepath.FromSlash(bucketKey(testBucket)))
	shared := filepath.Join(dir, sharedDirName)
	touch := func(path string) string {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	gone := []string{
		touch(filepath.Join(shared, rocksdbdir.TableName(99))),       // an unlisted table of an earlier epoch
		touch(filepath.Join(shared, rocksdbdir.TableName(1<<32+77))), // an unlisted table of this epoch
		touch(filepath.Join(dir, "snap-7", "CURRENT")),               // an unlisted directory of epoch 0
		touch(filepath.Join(dir, "snap-9-e1", "CURRENT")),            // … and of this epoch
	}
	kept := []string{
		touch(filepath.Join(shared, rocksdbdir.TableName(2<<32+5))), // a later leader's
		touch(filepath.Join(dir, "snap-8-e2", "CURRENT")),           // a later leader's
		filepath.Join(shared, rocksdbdir.TableName(s0.Tables[0].Number)),
		filepath.Join(dir, s0.Dir, "CURRENT"),
	}
	h.put(map[int]string{1: "b"})
	s1, err := h.snapshotAs(m1, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range gone {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s survived the sweep: %v", p, err)
		}
	}
	for _, p := range kept {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
	sameState(t, "the snapshot after the sweep", h.readWith(m1, s1), h.current())
}
