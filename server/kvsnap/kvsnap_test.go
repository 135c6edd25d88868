package kvsnap

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/internal/record"
	"github.com/stromdb/strom/internal/rocksdbdir"
	"github.com/stromdb/strom/internal/row"
	"github.com/stromdb/strom/server/cluster"
	"github.com/stromdb/strom/server/kvstore"
	"github.com/stromdb/strom/server/logstore"
	"github.com/stromdb/strom/server/meta"
	"github.com/stromdb/strom/server/remote"
)

var testBucket = cluster.Bucket{TableID: 7, PartitionID: cluster.NoPartition, Bucket: 0}

func discard() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

var (
	colTypes = []metadata.DataType{{Root: metadata.Int, NotNull: true}, {Root: metadata.String}}
	keyTypes = colTypes[:1]
)

func testTable() kvstore.Table {
	return kvstore.Table{ID: 7, SchemaID: 1, Schema: metadata.Schema{
		Columns:    []metadata.Column{{Name: "id", Type: colTypes[0]}, {Name: "v", Type: colTypes[1]}},
		PrimaryKey: []string{"id"},
	}, Config: metadata.TableConfig{LogFormat: metadata.LogFormatArrow}}
}

// memMeta is a metadata store in memory.
type memMeta struct{ kv map[string][]byte }

func (m *memMeta) Get(_ context.Context, k string) ([]byte, error) {
	if v, ok := m.kv[k]; ok {
		return v, nil
	}
	return nil, meta.ErrNotFound
}

func (m *memMeta) List(_ context.Context, prefix string) ([]meta.KV, error) {
	var out []meta.KV
	for k, v := range m.kv {
		if strings.HasPrefix(k, prefix) {
			out = append(out, meta.KV{Key: k, Value: v})
		}
	}
	sortKVs(out)
	return out, nil
}

func sortKVs(kvs []meta.KV) {
	for i := 1; i < len(kvs); i++ {
		for j := i; j > 0 && kvs[j].Key < kvs[j-1].Key; j-- {
			kvs[j], kvs[j-1] = kvs[j-1], kvs[j]
		}
	}
}

func (m *memMeta) Txn(_ context.Context, conds []meta.Cond, ops []meta.Op) (bool, error) {
	for _, c := range conds {
		if _, ok := m.kv[c.Key]; ok != c.Exists {
			return false, nil
		}
	}
	for _, op := range ops {
		if op.Delete {
			delete(m.kv, op.Key)
		} else {
			m.kv[op.Key] = op.Value
		}
	}
	return true, nil
}

func (m *memMeta) NextID(context.Context, string) (int64, error) { return 0, nil }
func (m *memMeta) Close() error                                  { return nil }

// catalog knows table 7 (primary key) and table 8 (log table).
type catalog struct{ cluster.Catalog }

func (catalog) TableByID(id int64) (*cluster.TableInfo, bool) {
	switch id {
	case 7:
		return &cluster.TableInfo{ID: 7, Descriptor: metadata.TableDescriptor{Schema: testTable().Schema}}, true
	case 8:
		return &cluster.TableInfo{ID: 8, Descriptor: metadata.TableDescriptor{Schema: metadata.Schema{Columns: testTable().Schema.Columns}}}, true
	}
	return nil, false
}

type harness struct {
	t     *testing.T
	dir   string
	log   *logstore.Log
	store *kvstore.Store
	tab   *kvstore.Tablet
	meta  *memMeta
	m     *Manager
	st    *remote.Storage
	seq   int32
	now   time.Time
}

func newHarness(t *testing.T) *harness { return newHarnessOn(t, nil) }

// newHarnessOn is newHarness with snapshots in st (nil: a file store in the test's directory).
func newHarnessOn(t *testing.T, st *remote.Storage) *harness {
	h := &harness{t: t, dir: t.TempDir(), meta: &memMeta{kv: map[string][]byte{}}, now: time.UnixMilli(1_000_000), st: st}
	var err error
	h.log, err = logstore.Open(context.Background(), filepath.Join(h.dir, "log"), logstore.Options{Logger: discard(), FlushPolicy: logstore.FlushInterval(0)})
	if err != nil {
		t.Fatal(err)
	}
	h.store, err = kvstore.Open(filepath.Join(h.dir, "kv"), kvstore.Options{Logger: discard()})
	if err != nil {
		t.Fatal(err)
	}
	h.tab, err = h.store.OpenTablet(context.Background(), testBucket, testTable(), h.log)
	if err != nil {
		t.Fatal(err)
	}
	if h.st == nil {
		h.st, err = remote.Open(context.Background(), remote.Config{DataDir: filepath.Join(h.dir, "remote")}, nil)
		if err != nil {
			t.Fatal(err)
		}
	}
	h.openManager()
	t.Cleanup(func() {
		h.tab.Close()
		h.log.Close()
		h.store.Close()
	})
	return h
}

func (h *harness) openManager() {
	var err error
	h.m, err = Open(context.Background(), Options{
		Config: Config{Interval: time.Hour, NumRetained: 2},
		Remote: h.st, LocalDir: filepath.Join(h.dir, "local"),
		Meta: h.meta, Catalog: catalog{}, Logger: discard(), Now: func() time.Time { return h.now },
		Buckets: func() []Bucket { return []Bucket{{Bucket: testBucket, KV: h.tab}} },
	})
	if err != nil {
		h.t.Fatal(err)
	}
}

// bucketDir is the test bucket's directory in the file store.
func (h *harness) bucketDir() string {
	return filepath.Join(h.dir, "remote", filepath.FromSlash(bucketKey(testBucket)))
}

func key(id int) string {
	k, _ := row.EncodeKey(nil, keyTypes, []row.Datum{{I: int64(id)}})
	return string(k)
}

// put upserts id=v for each pair (v "" deletes id) in one batch.
func (h *harness) put(kvs map[int]string) {
	h.t.Helper()
	var recs []record.KvRecord
	for id, v := range kvs {
		var rb []byte
		if v != "" {
			var err error
			rb, err = row.AppendCompactedRow(nil, colTypes, []row.Datum{{I: int64(id)}, {B: []byte(v)}})
			if err != nil {
				h.t.Fatal(err)
			}
		}
		recs = append(recs, record.KvRecord{Key: []byte(key(id)), Row: rb})
	}
	b, err := record.ParseKvBatch(record.AppendKvBatch(nil, record.KvHeader{SchemaID: 1, WriterID: 1, BatchSequence: h.seq}, recs...))
	if err != nil {
		h.t.Fatal(err)
	}
	_, p, err := h.tab.PutStaged(b, kvstore.WriteOptions{}, 100_000)
	if err == nil {
		err = p.Wait(context.Background())
	}
	if err != nil {
		h.t.Fatal(err)
	}
	h.seq++
}

// current is the bucket's state now: key -> stored value.
func (h *harness) current() map[string]string {
	h.t.Helper()
	v, err := h.tab.OpenStateView()
	if err != nil {
		h.t.Fatal(err)
	}
	defer v.Close()
	it, err := v.Iter()
	if err != nil {
		h.t.Fatal(err)
	}
	out := map[string]string{}
	for ; it.Valid(); it.Next() {
		out[string(it.Key())] = string(it.Value())
	}
	if err := it.Close(); err != nil {
		h.t.Fatal(err)
	}
	return out
}

// read returns the rows snapshot s holds, merged from its files as RocksDB would.
func (h *harness) read(s *Snapshot) map[string]string {
	h.t.Helper()
	return readSnapshot(h.t, h.st, s)
}

// readSnapshot downloads snapshot s's tables from st and merges them as RocksDB would.
func readSnapshot(t *testing.T, st0 *remote.Storage, s *Snapshot) map[string]string {
	t.Helper()
	d := t.TempDir()
	if err := fetchTables(context.Background(), st0.Bucket, testBucket, s.Tables, d); err != nil {
		t.Fatal(err)
	}
	st, err := openState(d, s)
	if err != nil {
		t.Fatal(err)
	}
	defer st.close()
	out := map[string]string{}
	for ; st.valid(); st.next() {
		out[string(st.key)] = string(st.value)
	}
	if st.err != nil {
		t.Fatal(st.err)
	}
	return out
}

func (h *harness) snapshot() (*Snapshot, bool) {
	h.t.Helper()
	s, fresh, err := h.m.SnapshotBucket(context.Background(), Bucket{Bucket: testBucket, KV: h.tab})
	if err != nil {
		h.t.Fatal(err)
	}
	return s, fresh
}

func sameState(t *testing.T, what string, got, want map[string]string) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d rows, want %d", what, len(got), len(want))
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: key %x = %x, want %x", what, k, got[k], v)
		}
	}
}

// TestSnapshotsAreIncrementalAndConsistent writes, snapshots, changes and deletes rows and
// snapshots again: every snapshot holds exactly the state at its log offset, a snapshot after
// few changes adds one table to the previous ones, and an unchanged bucket gets no new one.
func TestSnapshotsAreIncrementalAndConsistent(t *testing.T) {
	h := newHarness(t)
	if s, fresh := h.snapshot(); !fresh || s.LogOffset != 0 || len(s.Tables) != 0 || s.Rows != 0 {
		t.Fatalf("snapshot of an empty bucket: %+v fresh=%v", s, fresh)
	}
	batch := map[int]string{}
	for i := 0; i < 300; i++ {
		batch[i] = fmt.Sprintf("v0-%d", i)
	}
	h.put(batch)
	s1, _ := h.snapshot()
	if s1.LogOffset != h.tab.AppliedOffset() || s1.LogOffset == 0 || s1.Rows != 300 || len(s1.Tables) != 1 {
		t.Fatalf("first snapshot %+v, applied offset %d", s1, h.tab.AppliedOffset())
	}
	sameState(t, "snapshot 1", h.read(s1), h.current())
	want1 := h.current()

	if s, fresh := h.snapshot(); fresh || s.ID != s1.ID {
		t.Errorf("unchanged bucket got a new snapshot %+v", s)
	}

	h.put(map[int]string{1: "v1-1", 2: "", 3: "", 400: "new"})
	s2, fresh := h.snapshot()
	if !fresh || s2.ID != s1.ID+1 || s2.Rows != 299 {
		t.Fatalf("second snapshot %+v", s2)
	}
	if len(s2.Tables) != 2 || s2.Tables[1].Number != s1.Tables[0].Number || s2.Tables[0].Level != rocksdbdir.NumLevels-2 || s2.Tables[0].Entries != 4 {
		t.Errorf("second snapshot is not the first plus a delta of 4 entries: %+v", s2.Tables)
	}
	sameState(t, "snapshot 2", h.read(s2), h.current())
	sameState(t, "snapshot 1 after more writes", h.read(s1), want1)

	// Rewriting most rows makes a full copy again.
	batch = map[int]string{}
	for i := 0; i < 280; i++ {
		batch[i] = fmt.Sprintf("v2-%d", i)
	}
	h.put(batch)
	s3, _ := h.snapshot()
	if len(s3.Tables) != 1 || s3.Tables[0].Level != rocksdbdir.NumLevels-1 {
		t.Errorf("snapshot after rewriting most rows: %+v", s3.Tables)
	}
	sameState(t, "snapshot 3", h.read(s3), h.current())
}

// TestDeltasUseUpLevelsThenRewrite keeps adding small changes: each snapshot stacks one level
// higher until level 1, then a full copy starts over.
func TestDeltasUseUpLevelsThenRewrite(t *testing.T) {
	h := newHarness(t)
	batch := map[int]string{}
	for i := 0; i < 100; i++ {
		batch[i] = "a"
	}
	h.put(batch)
	h.snapshot()
	for round := 1; round <= 7; round++ {
		h.put(map[int]string{round: fmt.Sprintf("r%d", round)})
		s, _ := h.snapshot()
		wantTables := round + 1
		if round == 6 {
			wantTables = 1 // level 1 was used by round 5's delta
		} else if round == 7 {
			wantTables = 2
		}
		if len(s.Tables) != wantTables {
			t.Errorf("round %d: %d tables, want %d", round, len(s.Tables), wantTables)
		}
		sameState(t, fmt.Sprintf("round %d", round), h.read(s), h.current())
	}
}

// TestRetentionFloorAndCleanup: the floor is the oldest retained or leased snapshot's offset;
// cleanup keeps what is retained or leased and removes the rest, files included.
func TestRetentionFloorAndCleanup(t *testing.T) {
	h := newHarness(t)
	if f := h.m.Floor(testBucket); f != 0 {
		t.Errorf("floor without a snapshot = %d, want 0", f)
	}
	if f := h.m.Floor(cluster.Bucket{TableID: 8, PartitionID: cluster.NoPartition}); f != math.MaxInt64 {
		t.Errorf("floor of a log table = %d", f)
	}
	var snaps []*Snapshot
	for i := 0; i < 4; i++ {
		h.put(map[int]string{i: "x", 100 + i: "y", 200 + i: "z"})
		s, _ := h.snapshot()
		snaps = append(snaps, s)
	}
	if f := h.m.Floor(testBucket); f != snaps[2].LogOffset {
		t.Errorf("floor = %d, want snapshot 2's offset %d", f, snaps[2].LogOffset)
	}
	unavailable, err := h.m.Acquire(context.Background(), "job", 60_000, []Ref{{testBucket, snaps[0].ID}, {testBucket, 99}})
	if err != nil || len(unavailable) != 1 || unavailable[0].ID != 99 {
		t.Fatalf("acquire: %v %v", unavailable, err)
	}
	if f := h.m.Floor(testBucket); f != snaps[0].LogOffset {
		t.Errorf("floor with a lease on snapshot 0 = %d, want %d", f, snaps[0].LogOffset)
	}
	if err := h.m.Cleanup(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, ok := h.m.Get(testBucket, snaps[1].ID); ok {
		t.Error("snapshot 1 (neither retained nor leased) survived cleanup")
	}
	for _, i := range []int{0, 2, 3} {
		s, ok := h.m.Get(testBucket, snaps[i].ID)
		if !ok {
			t.Fatalf("snapshot %d dropped", i)
		}
		for _, f := range h.m.Files(testBucket, s) {
			u, _ := url.Parse(f.RemotePath)
			if _, err := os.Stat(u.Path); err != nil {
				t.Errorf("snapshot %d: %v", i, err)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(h.bucketDir(), snapDirName(snaps[1].ID))); !os.IsNotExist(err) {
		t.Errorf("snapshot 1's directory: %v", err)
	}

	// The metadata survives a restart.
	h.openManager()
	if s, ok := h.m.Latest(testBucket); !ok || s.ID != snaps[3].ID {
		t.Errorf("after reopen latest = %+v", s)
	}
	if f := h.m.Floor(testBucket); f != snaps[0].LogOffset {
		t.Errorf("after reopen the lease is lost: floor %d", f)
	}

	// Releasing the only bucket drops the lease; then snapshot 0 goes too.
	if err := h.m.Release(context.Background(), "job", []cluster.Bucket{testBucket}); err != nil {
		t.Fatal(err)
	}
	if len(h.meta.kv) != 3 { // snapshots 0, 2, 3; no lease record
		t.Errorf("metadata after release: %d keys", len(h.meta.kv))
	}
	if err := h.m.Cleanup(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, ok := h.m.Get(testBucket, snaps[0].ID); ok {
		t.Error("snapshot 0 survived after its lease was released")
	}

	// An expired lease no longer holds anything.
	if _, err := h.m.Acquire(context.Background(), "old", 10, []Ref{{testBucket, snaps[2].ID}}); err != nil {
		t.Fatal(err)
	}
	h.put(map[int]string{7: "again"})
	h.snapshot()
	h.now = h.now.Add(time.Second)
	if err := h.m.Cleanup(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, ok := h.m.Get(testBucket, snaps[2].ID); ok {
		t.Error("snapshot 2 kept by an expired lease")
	}
	if err := h.m.Drop(context.Background(), "never-existed"); err != nil {
		t.Error(err)
	}
}

// TestRocksDBOpensSnapshots opens a full and an incremental snapshot with RocksDB, laid out as
// Fluss's client lays out the files (make test-rocksdb; skipped without ROCKSDB_CHECK).
func TestRocksDBOpensSnapshots(t *testing.T) {
	check := os.Getenv("ROCKSDB_CHECK")
	if check == "" {
		t.Skip("ROCKSDB_CHECK is not set (make test-rocksdb)")
	}
	h := newHarness(t)
	batch := map[int]string{}
	for i := 0; i < 500; i++ {
		batch[i] = fmt.Sprintf("v0-%d", i)
	}
	h.put(batch)
	s1, _ := h.snapshot()
	want1 := h.current()
	h.put(map[int]string{1: "changed", 2: "", 600: "new"})
	s2, _ := h.snapshot()
	if len(s2.Tables) != 2 {
		t.Fatalf("second snapshot is not incremental: %+v", s2.Tables)
	}
	want2 := h.current()
	// A later leader (epoch 3) numbers its files from 3<<32: RocksDB must take such numbers.
	h.put(map[int]string{3: "by a later leader", 4: ""})
	s3, _, err := h.m.SnapshotBucket(context.Background(), Bucket{Bucket: testBucket, KV: h.tab, LeaderEpoch: 3})
	if err != nil {
		t.Fatal(err)
	}
	if len(s3.Tables) != 3 || s3.Tables[0].Number < 3<<32 {
		t.Fatalf("third snapshot: %+v", s3.Tables)
	}
	var dirs []string
	for _, s := range []*Snapshot{s1, s2, s3} {
		d := t.TempDir()
		for _, f := range h.m.Files(testBucket, s) {
			u, err := url.Parse(f.RemotePath)
			if err != nil || u.Scheme != "file" {
				t.Fatalf("remote path %q", f.RemotePath)
			}
			data, err := os.ReadFile(u.Path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(d, f.LocalFileName), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		dirs = append(dirs, d)
	}
	got, err := rocksdbdir.ReadWithRocksDB(check, dirs...)
	if err != nil {
		t.Fatal(err)
	}
	sameState(t, "RocksDB, snapshot 1", got[dirs[0]], want1)
	sameState(t, "RocksDB, snapshot 2", got[dirs[1]], want2)
	sameState(t, "RocksDB, snapshot 3 (file numbers above 2^32)", got[dirs[2]], h.current())
}

// TestLostTableFallsBackToFullSnapshot: when the previous snapshot's table file is gone, the
// next snapshot is a full copy instead of failing forever.
func TestLostTableFallsBackToFullSnapshot(t *testing.T) {
	h := newHarness(t)
	batch := map[int]string{}
	for i := 0; i < 50; i++ {
		batch[i] = "a"
	}
	h.put(batch)
	s1, _ := h.snapshot()
	if err := os.Remove(filepath.Join(h.bucketDir(), sharedDirName, rocksdbdir.TableName(s1.Tables[0].Number))); err != nil {
		t.Fatal(err)
	}
	h.openManager() // a restart: the local copy of the table is gone too
	h.put(map[int]string{1: "b"})
	s2, fresh := h.snapshot()
	if !fresh || len(s2.Tables) != 1 || s2.Tables[0].Level != rocksdbdir.NumLevels-1 {
		t.Fatalf("snapshot after a lost table: %+v", s2)
	}
	sameState(t, "full snapshot after a lost table", h.read(s2), h.current())
}
