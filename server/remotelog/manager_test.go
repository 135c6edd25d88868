package remotelog

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/thanos-io/objstore"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/internal/record"
	"github.com/stromdb/strom/proto/flusspb"
	"github.com/stromdb/strom/server/cluster"
	"github.com/stromdb/strom/server/logstore"
	"github.com/stromdb/strom/server/meta"
	"github.com/stromdb/strom/server/remote"
	"github.com/stromdb/strom/server/remote/remotetest"
)

// memStore is a meta.Store in memory; failTxn makes every transaction fail.
type memStore struct {
	mu      sync.Mutex
	kv      map[string][]byte
	failTxn atomic.Bool
}

func newMemStore() *memStore { return &memStore{kv: map[string][]byte{}} }

func (s *memStore) Get(_ context.Context, key string) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.kv[key]
	if !ok {
		return nil, meta.ErrNotFound
	}
	return slices.Clone(v), nil
}

func (s *memStore) List(_ context.Context, prefix string) ([]meta.KV, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []meta.KV
	for k, v := range s.kv {
		if strings.HasPrefix(k, prefix) {
			out = append(out, meta.KV{Key: k, Value: v})
		}
	}
	return out, nil
}

func (s *memStore) Txn(_ context.Context, conds []meta.Cond, ops []meta.Op) (bool, error) {
	if s.failTxn.Load() {
		return false, errors.New("metadata store unavailable")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range conds {
		if _, ok := s.kv[c.Key]; ok != c.Exists {
			return false, nil
		}
	}
	for _, op := range ops {
		if op.Delete {
			delete(s.kv, op.Key)
		} else {
			s.kv[op.Key] = slices.Clone(op.Value)
		}
	}
	return true, nil
}

func (s *memStore) NextID(context.Context, string) (int64, error) { return 0, nil }
func (s *memStore) Close() error                                  { return nil }

// faultyBucket wraps a Bucket: while failing, uploads write half the object and then fail
// (as a crash or a broken connection mid-upload would leave it).
type faultyBucket struct {
	objstore.Bucket
	failing atomic.Bool
	uploads atomic.Int64
}

func (b *faultyBucket) Upload(ctx context.Context, name string, r io.Reader, opts ...objstore.ObjectUploadOption) error {
	b.uploads.Add(1)
	if !b.failing.Load() {
		return b.Bucket.Upload(ctx, name, r, opts...)
	}
	data, _ := io.ReadAll(r)
	_ = b.Bucket.Upload(ctx, name, bytes.NewReader(data[:len(data)/2]))
	return errors.New("injected: remote storage unavailable")
}

// epochFence commits only for the epoch it holds (a control plane's bucket state).
type epochFence struct {
	store *memStore
	epoch atomic.Int32
}

func (f *epochFence) CommitAsLeader(ctx context.Context, b cluster.Bucket, epoch int32, conds []meta.Cond, ops []meta.Op) (bool, error) {
	if epoch != f.epoch.Load() {
		return false, ferr.New(ferr.FencedLeaderEpochException, "bucket %s is at epoch %d, not %d", b, f.epoch.Load(), epoch)
	}
	return f.store.Txn(ctx, conds, ops)
}

type harness struct {
	t       *testing.T
	dir     string
	log     *logstore.Log
	store   *memStore
	bucket  *faultyBucket
	storage *remote.Storage
	table   *cluster.TableInfo
	now     atomic.Int64 // ms
	records int          // appended so far
	epoch   int32
	leading bool
	s3      *remotetest.Emulator // nil for a file store
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func newHarness(t *testing.T, props map[string]string) *harness {
	return newHarnessOn(t, "file", props)
}

// storeKinds are the remote stores the tests run on: a file system directory and S3 (the
// in-process emulator of server/remote/remotetest).
var storeKinds = []string{"file", "s3"}

// onEachStore runs f as a subtest per store kind.
func onEachStore(t *testing.T, f func(t *testing.T, kind string)) {
	for _, kind := range storeKinds {
		t.Run(kind, func(t *testing.T) { f(t, kind) })
	}
}

func newHarnessOn(t *testing.T, kind string, props map[string]string) *harness {
	t.Helper()
	h := &harness{t: t, dir: t.TempDir(), store: newMemStore(), epoch: 3, leading: true}
	h.now.Store(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli())
	cfg := remote.Config{DataDir: filepath.Join(h.dir, "remote")}
	if kind == "s3" {
		h.s3 = remotetest.Start(t)
		cfg = h.s3.Config("cluster1")
		cfg.MaxRetries = -1 // the tests' faults should fail at once
	}
	st, err := remote.Open(context.Background(), cfg, quiet())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	h.bucket = &faultyBucket{Bucket: st.Bucket}
	st.Bucket = h.bucket
	h.storage = st
	h.table = &cluster.TableInfo{Path: cluster.TablePath{Database: "fluss", Table: "events"}, ID: 7,
		Descriptor: metadata.TableDescriptor{BucketCount: 1, Properties: props}}
	h.openLog()
	return h
}

func (h *harness) openLog() {
	l, err := logstore.Open(context.Background(), filepath.Join(h.dir, "log"), logstore.Options{SegmentBytes: 4096, Logger: quiet(),
		Now: func() time.Time { return time.UnixMilli(h.now.Load()) }})
	if err != nil {
		h.t.Fatal(err)
	}
	h.log = l
	h.t.Cleanup(func() { _ = l.Close() })
}

// appendRecords appends n batches of one record each (about 300 bytes).
func (h *harness) appendRecords(n int) {
	h.t.Helper()
	for range n {
		body := bytes.Repeat([]byte{byte(h.records)}, 300)
		b := record.Batch(record.AppendV0Batch(nil, record.V0Header{SchemaID: 1, AppendOnly: true, WriterID: record.NoWriterID,
			BatchSequence: -1, RecordCount: 1}, body))
		if _, err := h.log.Append([]record.Batch{b}, h.now.Load()); err != nil {
			h.t.Fatal(err)
		}
		h.records++
	}
}

func (h *harness) manager(fence LeaderFence) *Manager {
	return New(Options{Config: Config{Interval: time.Minute, Threads: 2}, Storage: h.storage, Meta: h.store, Fence: fence,
		Logger: quiet(), Now: func() time.Time { return time.UnixMilli(h.now.Load()) },
		Buckets: func() []Bucket {
			return []Bucket{{Bucket: cluster.Bucket{TableID: 7, PartitionID: cluster.NoPartition, Bucket: 0}, Table: h.table,
				Log: h.log, Leading: h.leading, LeaderEpoch: h.epoch}}
		}})
}

var bucket0 = cluster.Bucket{TableID: 7, PartitionID: cluster.NoPartition, Bucket: 0}

// pass runs a pass now, as the next one after any backoff would.
func pass(m *Manager) {
	m.mu.Lock()
	for _, st := range m.buckets {
		st.dueAt = time.Time{}
	}
	m.mu.Unlock()
	m.RunOnce(context.Background())
}

func (h *harness) localSegments() int {
	ents, _ := os.ReadDir(filepath.Join(h.dir, "log"))
	n := 0
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".log") {
			n++
		}
	}
	return n
}

// objects lists every object key in remote storage.
func (h *harness) objects() []string {
	var out []string
	_ = h.bucket.Iter(context.Background(), "", func(name string) error { out = append(out, name); return nil }, objstore.WithRecursiveIter())
	return out
}

// scan reads every record from the earliest offset as a client does: remote segments (the
// file at remote_log_tablet_dir/segment id/start offset.log, from first_start_pos) while the
// offset is below the local log start, the local log above. It returns the record offsets
// read, in order.
func (h *harness) scan(m *Manager) []int64 {
	h.t.Helper()
	ctx := context.Background()
	offset := h.log.LogStartOffset()
	if start, ok := m.LogStartOffset(ctx, h.table, nil, bucket0); ok && start < offset {
		offset = start
	}
	var got []int64
	take := func(data []byte) {
		for b, err := range record.Iterate(data) {
			if err != nil {
				h.t.Fatalf("batch at offset %d: %v", offset, err)
			}
			for o := b.BaseOffset(); o <= b.LastOffset(); o++ {
				if o >= offset {
					got = append(got, o)
					offset = o + 1
				}
			}
		}
	}
	for offset < h.log.HighWatermark() {
		if offset < h.log.LogStartOffset() {
			ri := m.FetchInfo(ctx, h.table, nil, bucket0, offset)
			if ri == nil {
				h.t.Fatalf("offset %d below the local log start %d is not in the remote log", offset, h.log.LogStartOffset())
			}
			for i, s := range ri.GetRemoteLogSegments() {
				path := h.objectKey(ri.GetRemoteLogTabletDir(), s.GetRemoteLogSegmentId(), offsetName(s.GetRemoteLogStartOffset(), ".log"))
				data := h.read(path)
				if int64(len(data)) != int64(s.GetSegmentSizeInBytes()) {
					h.t.Fatalf("%s: %d bytes, manifest says %d", path, len(data), s.GetSegmentSizeInBytes())
				}
				if i == 0 {
					data = data[ri.GetFirstStartPos():]
				}
				take(data)
			}
			continue
		}
		data, err := h.log.ReadBatches(offset, 1<<20)
		if err != nil {
			h.t.Fatal(err)
		}
		take(data)
	}
	return got
}

// objectKey turns a client path (remote_log_tablet_dir and names below it) back into the
// object's key, as a client opening ClientPath would reach it.
func (h *harness) objectKey(dir string, names ...string) string {
	rel := strings.TrimPrefix(strings.TrimPrefix(dir, h.storage.Root()), "/")
	return strings.Join(append([]string{filepath.ToSlash(rel)}, names...), "/")
}

func (h *harness) read(key string) []byte {
	h.t.Helper()
	rc, err := h.bucket.Get(context.Background(), key)
	if err != nil {
		h.t.Fatalf("read %s: %v", key, err)
	}
	defer rc.Close()
	data, err := io.ReadAll(rc)
	if err != nil {
		h.t.Fatal(err)
	}
	return data
}

func (h *harness) checkExactlyOnce(m *Manager) {
	h.t.Helper()
	got := h.scan(m)
	if len(got) != h.records {
		h.t.Fatalf("read %d records, want %d", len(got), h.records)
	}
	for i, o := range got {
		if o != int64(i) {
			h.t.Fatalf("record %d has offset %d", i, o)
		}
	}
}

func TestTieringCopiesCommitsAndDeletesLocal(t *testing.T) {
	onEachStore(t, func(t *testing.T, kind string) {
		h := newHarnessOn(t, kind, map[string]string{"table.log.tiered.local-segments": "2"})
		h.appendRecords(200) // about 60 KiB: ~15 segments of 4 KiB
		before := h.localSegments()
		m := h.manager(nil)
		pass(m)
		if n := h.localSegments(); n != 2 || before < 10 {
			t.Fatalf("local segments: %d before, %d after; want >= 10 and 2", before, n)
		}
		start, end, size, ok := m.Stats(bucket0)
		if !ok || start != 0 || end < h.log.LogStartOffset() || end > h.log.HighWatermark() || size <= 0 {
			t.Fatalf("remote log [%d, %d) %d bytes (ok %v), local start %d", start, end, size, ok, h.log.LogStartOffset())
		}
		// The record in the metadata store names a manifest in Fluss's JSON.
		raw, err := h.store.Get(context.Background(), recordKey(bucket0))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(raw, []byte(`"manifest_key":"log/fluss/events-7/0/metadata/`)) {
			t.Fatalf("record: %s", raw)
		}
		rc, err := h.bucket.Get(context.Background(), m.state(bucket0).v.Load().rec.ManifestKey)
		if err != nil {
			t.Fatal(err)
		}
		mj, _ := io.ReadAll(rc)
		rc.Close()
		for _, field := range []string{`"version":1`, `"database":"fluss"`, `"table":"events"`, `"table_id":7`, `"bucket_id":0`,
			`"remote_log_segments":[{"segment_id":"`, `"start_offset":0,`, `"end_offset":`, `"max_timestamp":`, `"size_in_bytes":`} {
			if !bytes.Contains(mj, []byte(field)) {
				t.Errorf("manifest lacks %s: %s", field, mj)
			}
		}
		h.checkExactlyOnce(m)

		// More data: the next pass continues from the committed end, offsets stay contiguous.
		h.appendRecords(100)
		pass(m)
		h.checkExactlyOnce(m)
		v := m.state(bucket0).v.Load()
		for i := 1; i < len(v.man.Segments); i++ {
			if v.man.Segments[i].StartOffset != v.man.Segments[i-1].EndOffset {
				t.Fatalf("segments %d and %d not contiguous: %+v", i-1, i, v.man.Segments)
			}
		}
		// Exactly the committed objects exist: every segment's files and one manifest.
		objs := h.objects()
		if want := 3*len(v.man.Segments) + 1; len(objs) < want || len(objs) > 4*len(v.man.Segments)+1 {
			t.Fatalf("%d objects for %d segments: %v", len(objs), len(v.man.Segments), objs)
		}
	})
}

func TestFetchInfoPositionsMidSegment(t *testing.T) {
	onEachStore(t, func(t *testing.T, kind string) {
		h := newHarnessOn(t, kind, map[string]string{"table.log.tiered.local-segments": "1"})
		h.appendRecords(200)
		m := h.manager(nil)
		pass(m)
		v := m.state(bucket0).v.Load()
		seg := v.man.Segments[1]
		mid := (seg.StartOffset + seg.EndOffset) / 2
		ri := m.FetchInfo(context.Background(), h.table, nil, bucket0, mid)
		if ri == nil || ri.GetRemoteLogSegments()[0].GetRemoteLogSegmentId() != seg.ID {
			t.Fatalf("fetch info at %d: %v", mid, ri)
		}
		data := h.read(h.objectKey(ri.GetRemoteLogTabletDir(), seg.ID, offsetName(seg.StartOffset, ".log")))
		b, _, ok := record.Split(data[ri.GetFirstStartPos():])
		if !ok || b.BaseOffset() > mid || b.BaseOffset() < seg.StartOffset {
			t.Fatalf("first_start_pos %d: batch at %d for offset %d", ri.GetFirstStartPos(), b.BaseOffset(), mid)
		}
		if ri := m.FetchInfo(context.Background(), h.table, nil, bucket0, h.log.LogStartOffset()); ri != nil {
			t.Fatalf("the local log start is answered from remote: %v", ri)
		}
	})
}

func TestFailingStoreKeepsLocalAndRecovers(t *testing.T) {
	onEachStore(t, func(t *testing.T, kind string) {
		h := newHarnessOn(t, kind, map[string]string{"table.log.tiered.local-segments": "1"})
		h.appendRecords(200)
		before := h.localSegments()
		m := h.manager(nil)
		logs := &countingHandler{}
		m.log = slog.New(logs)
		h.bucket.failing.Store(true)
		for range 3 {
			pass(m)
		}
		if w := logs.warns.Load(); w != 1 {
			t.Fatalf("%d WARN lines for 3 failed passes, want 1", w)
		}
		if n := h.localSegments(); n != before {
			t.Fatalf("local segments %d -> %d while remote storage fails", before, n)
		}
		if m.Failures() < 3 || !m.failing.Load() {
			t.Fatalf("failures %d, failing %v", m.Failures(), m.failing.Load())
		}
		if len(h.objects()) == 0 {
			t.Fatal("the failing store holds no partial object: the test injects nothing")
		}
		// Appends never wait for remote storage.
		h.appendRecords(10)
		h.bucket.failing.Store(false)
		pass(m)
		if m.failing.Load() || h.localSegments() != 1 {
			t.Fatalf("after recovery: failing %v, %d local segments", m.failing.Load(), h.localSegments())
		}
		h.checkExactlyOnce(m)
		assertOnlyCommitted(t, h, m)
	})
}

// assertOnlyCommitted checks that every object in remote storage is named by the committed
// manifest (or is it).
func assertOnlyCommitted(t *testing.T, h *harness, m *Manager) {
	t.Helper()
	v := m.state(bucket0).v.Load()
	ids := map[string]bool{}
	for _, s := range v.man.Segments {
		ids[s.ID] = true
	}
	for _, o := range h.objects() {
		if o == v.rec.ManifestKey {
			continue
		}
		rel := strings.TrimPrefix(o, v.dir+"/")
		if i := strings.IndexByte(rel, '/'); i < 0 || !ids[rel[:i]] {
			t.Errorf("orphan left: %s", o)
		}
	}
}

func TestCrashBeforeCommitLeavesNoEntryAndOrphansAreSwept(t *testing.T) {
	onEachStore(t, func(t *testing.T, kind string) {
		h := newHarnessOn(t, kind, map[string]string{"table.log.tiered.local-segments": "1"})
		h.appendRecords(200)
		before := h.localSegments()
		m := h.manager(nil)
		// Uploads succeed, the commit fails: as a crash between copy and commit.
		h.store.failTxn.Store(true)
		pass(m)
		if _, err := h.store.Get(context.Background(), recordKey(bucket0)); !errors.Is(err, meta.ErrNotFound) {
			t.Fatalf("a record was committed: %v", err)
		}
		if h.localSegments() != before || len(h.objects()) == 0 {
			t.Fatalf("local %d -> %d, %d objects", before, h.localSegments(), len(h.objects()))
		}
		// A restarted server (a new manager, the log reopened) sweeps and tiers again.
		h.store.failTxn.Store(false)
		_ = h.log.Close()
		h.openLog()
		m = h.manager(nil)
		pass(m)
		h.checkExactlyOnce(m)
		assertOnlyCommitted(t, h, m)
	})
}

func TestDeposedLeaderCommitsNothing(t *testing.T) {
	onEachStore(t, func(t *testing.T, kind string) {
		h := newHarnessOn(t, kind, map[string]string{"table.log.tiered.local-segments": "1"})
		h.appendRecords(200)
		before := h.localSegments()
		fence := &epochFence{store: h.store}
		fence.epoch.Store(4) // a newer leader exists
		m := h.manager(fence)
		pass(m)
		if _, err := h.store.Get(context.Background(), recordKey(bucket0)); !errors.Is(err, meta.ErrNotFound) {
			t.Fatalf("the deposed leader committed: %v", err)
		}
		if h.localSegments() != before {
			t.Fatalf("the deposed leader deleted local segments: %d -> %d", before, h.localSegments())
		}
		stale := len(h.objects())
		if stale == 0 {
			t.Fatal("nothing uploaded")
		}
		// This server leads again at epoch 4: its sweep removes the epoch-3 orphans.
		h.epoch = 4
		pass(m)
		h.checkExactlyOnce(m)
		assertOnlyCommitted(t, h, m)
		// Objects of a later epoch (a newer leader's uploads in flight) survive a sweep.
		later := segmentKey(m.state(bucket0).v.Load().dir, newID(5), 0, ".log")
		if err := h.bucket.Upload(context.Background(), later, strings.NewReader("x")); err != nil {
			t.Fatal(err)
		}
		m.state(bucket0).needSweep = true
		pass(m)
		if !slices.Contains(h.objects(), later) {
			t.Fatal("the sweep removed a later leader's object")
		}
	})
}

func TestFollowerDeletesOnlyCommitted(t *testing.T) {
	h := newHarness(t, map[string]string{"table.log.tiered.local-segments": "1"})
	h.appendRecords(200)
	before := h.localSegments()
	h.leading = false
	m := h.manager(nil)
	pass(m)
	if h.localSegments() != before || len(h.objects()) != 0 {
		t.Fatalf("a follower copied or deleted: %d -> %d local, %d objects", before, h.localSegments(), len(h.objects()))
	}
	h.leading = true
	pass(m)
	h.checkExactlyOnce(m)
}

func TestTTLExpiresRemoteSegmentsButNotPastTheLake(t *testing.T) {
	onEachStore(t, func(t *testing.T, kind string) {
		h := newHarnessOn(t, kind, map[string]string{"table.log.tiered.local-segments": "1", "table.log.ttl": "1h",
			"table.datalake.enabled": "true"})
		h.appendRecords(100)
		m := h.manager(nil)
		var lakeFloor atomic.Int64
		m.opts.LakeFloor = func(cluster.Bucket) int64 { return lakeFloor.Load() }
		pass(m)
		v := m.state(bucket0).v.Load()
		n := len(v.man.Segments)
		if n < 5 {
			t.Fatalf("%d remote segments", n)
		}
		h.now.Add(2 * time.Hour.Milliseconds())
		h.appendRecords(1) // keeps the log's newest data young
		pass(m)
		if got := len(m.state(bucket0).v.Load().man.Segments); got != n {
			t.Fatalf("segments not yet in the lake expired: %d -> %d", n, got)
		}
		lakeFloor.Store(v.man.Segments[2].EndOffset) // the lake holds the first three segments
		pass(m)
		nv := m.state(bucket0).v.Load()
		if got := len(nv.man.Segments); got != n-3 || nv.man.StartOffset() != v.man.Segments[3].StartOffset {
			t.Fatalf("after the lake caught up: %d segments from %d, want %d from %d", got, nv.man.StartOffset(), n-3, v.man.Segments[3].StartOffset)
		}
		for _, s := range v.man.Segments[:3] {
			for _, o := range h.objects() {
				if strings.Contains(o, s.ID) {
					t.Fatalf("expired segment's object left: %s", o)
				}
			}
		}
		if start, _ := m.LogStartOffset(context.Background(), h.table, nil, bucket0); start != v.man.Segments[3].StartOffset {
			t.Fatalf("remote log start %d", start)
		}
	})
}

func TestIDCarriesEpoch(t *testing.T) {
	for _, e := range []int32{-1, 0, 7, 1 << 30} {
		id := newID(e)
		if got, ok := idEpoch(id); !ok || got != e {
			t.Fatalf("newID(%d) = %s, epoch %d %v", e, id, got, ok)
		}
	}
	if _, ok := idEpoch("3f0c7a3e-2c8e-4a49-9d2b-0c7d1e0f9a11"); ok {
		t.Fatal("a random v4 UUID parsed as one of ours")
	}
}

var _ = flusspb.PbRemoteLogFetchInfo{}

func TestMetricsUseFlussNames(t *testing.T) {
	h := newHarness(t, map[string]string{"table.log.tiered.local-segments": "1"})
	h.appendRecords(100)
	m := h.manager(nil)
	pass(m)
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(m)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		for _, mt := range mf.GetMetric() {
			v := mt.GetGauge().GetValue() + mt.GetCounter().GetValue()
			got[mf.GetName()] += v
		}
	}
	v := m.state(bucket0).v.Load()
	for name, want := range map[string]float64{
		"fluss_tabletserver_table_log_remoteLogCopyRequests_total": float64(len(v.man.Segments)),
		"fluss_tabletserver_table_log_remoteLogCopyBytes_total":    float64(v.man.Size()),
		"fluss_tabletserver_table_bucket_remoteLog_numSegments":    float64(len(v.man.Segments)),
		"fluss_tabletserver_table_bucket_remoteLog_endOffset":      float64(v.man.EndOffset()),
		"fluss_tabletserver_physicalStorage_remoteLogSize":         float64(v.man.Size()),
		"fluss_tabletserver_remoteLogTieringFailing":               0,
	} {
		if g, ok := got[name]; !ok || g != want {
			t.Errorf("%s = %v (present %v), want %v", name, g, ok, want)
		}
	}
}

func TestOffsetForTimestampNeverSkipsARecord(t *testing.T) {
	h := newHarness(t, map[string]string{"table.log.tiered.local-segments": "1"})
	start := h.now.Load()
	for range 100 {
		h.now.Add(1000)
		h.appendRecords(1) // record i has commit timestamp start + 1000*(i+1)
	}
	m := h.manager(nil)
	pass(m)
	segs := m.state(bucket0).v.Load().man.Segments
	for _, i := range []int64{0, 1, 37, segs[2].StartOffset, segs[2].EndOffset - 1} {
		off, ok := m.OffsetForTimestamp(context.Background(), h.table, nil, bucket0, start+1000*(i+1))
		if !ok || off > i {
			t.Fatalf("timestamp of record %d: offset %d (ok %v), must not be after it", i, off, ok)
		}
		var seg Segment
		for _, s := range segs {
			if s.StartOffset <= i && i < s.EndOffset {
				seg = s
			}
		}
		if off < seg.StartOffset {
			t.Fatalf("timestamp of record %d: offset %d before its segment [%d, %d)", i, off, seg.StartOffset, seg.EndOffset)
		}
	}
	if _, ok := m.OffsetForTimestamp(context.Background(), h.table, nil, bucket0, h.now.Load()+1); ok {
		t.Fatal("a timestamp after every remote record matched")
	}
}

// fakeCatalog knows the tables in it.
type fakeCatalog struct {
	tables map[int64]*cluster.TableInfo
}

func (c *fakeCatalog) TableByID(id int64) (*cluster.TableInfo, bool) {
	t, ok := c.tables[id]
	return t, ok
}
func (c *fakeCatalog) TableByPath(cluster.TablePath) (*cluster.TableInfo, bool) {
	return nil, false
}
func (c *fakeCatalog) Schema(int64, int32) (metadata.Schema, bool)        { return metadata.Schema{}, false }
func (c *fakeCatalog) PartitionByID(int64) (*cluster.PartitionInfo, bool) { return nil, false }
func (c *fakeCatalog) PartitionByName(int64, string) (*cluster.PartitionInfo, bool) {
	return nil, false
}
func (c *fakeCatalog) Partitions(int64) []*cluster.PartitionInfo { return nil }

func TestDroppedTableRemoteLogIsDeleted(t *testing.T) {
	onEachStore(t, func(t *testing.T, kind string) {
		h := newHarnessOn(t, kind, map[string]string{"table.log.tiered.local-segments": "1"})
		h.appendRecords(100)
		cat := &fakeCatalog{tables: map[int64]*cluster.TableInfo{7: h.table}}
		m := h.manager(nil)
		m.opts.Catalog = cat
		hosted := true
		buckets := m.opts.Buckets
		m.opts.Buckets = func() []Bucket {
			if !hosted {
				return nil
			}
			return buckets()
		}
		pass(m)
		if len(h.objects()) == 0 {
			t.Fatal("nothing tiered")
		}
		// Moved to another server: the remote log stays.
		hosted = false
		pass(m)
		if len(h.objects()) == 0 {
			t.Fatal("the remote log of a bucket that moved away was deleted")
		}
		hosted = true
		pass(m)
		// Dropped: gone, record too.
		hosted = false
		delete(cat.tables, 7)
		pass(m)
		if objs := h.objects(); len(objs) != 0 {
			t.Fatalf("objects left after the drop: %v", objs)
		}
		if _, err := h.store.Get(context.Background(), recordKey(bucket0)); !errors.Is(err, meta.ErrNotFound) {
			t.Fatalf("record left: %v", err)
		}
	})
}

func TestTabletDirIsFlussLayout(t *testing.T) {
	tbl := &cluster.TableInfo{Path: cluster.TablePath{Database: "db", Table: "orders"}, ID: 12}
	if got := tabletDir(tbl, nil, cluster.Bucket{TableID: 12, PartitionID: cluster.NoPartition, Bucket: 3}); got != "log/db/orders-12/3" {
		t.Fatalf("non-partitioned: %s", got)
	}
	p := &cluster.PartitionInfo{TableID: 12, ID: 40, Name: "2026$eu"}
	if got := tabletDir(tbl, p, cluster.Bucket{TableID: 12, PartitionID: 40, Bucket: 0}); got != "log/db/orders-12/2026$eu-p40/0" {
		t.Fatalf("partitioned: %s", got)
	}
	if got := segmentKey("log/db/orders-12/3", "id", 1234, ".log"); got != "log/db/orders-12/3/id/00000000000000001234.log" {
		t.Fatalf("segment key %s", got)
	}
	if got := manifestKey("log/db/orders-12/3", "id"); got != "log/db/orders-12/3/metadata/id.manifest" {
		t.Fatalf("manifest key %s", got)
	}
}

// countingHandler counts WARN records.
type countingHandler struct{ warns atomic.Int64 }

func (h *countingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *countingHandler) Handle(_ context.Context, r slog.Record) error {
	if r.Level == slog.LevelWarn {
		h.warns.Add(1)
	}
	return nil
}
func (h *countingHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *countingHandler) WithGroup(string) slog.Handler      { return h }

// S3 refusing every request (503 SlowDown) while appends go on: nothing is committed or
// deleted locally, appends are not held up; once S3 answers, everything is tiered once.
func TestS3OutageKeepsLocalAndResumes(t *testing.T) {
	h := newHarnessOn(t, "s3", map[string]string{"table.log.tiered.local-segments": "1"})
	h.appendRecords(100)
	m := h.manager(nil)
	pass(m)
	tiered := m.state(bucket0).v.Load().man.EndOffset()
	h.s3.Refuse(true)
	h.appendRecords(100)
	before := h.localSegments()
	for range 3 {
		pass(m)
	}
	if h.localSegments() != before || m.state(bucket0).v.Load().man.EndOffset() != tiered || !m.failing.Load() {
		t.Fatalf("during the outage: %d -> %d local segments, remote end %d -> %d, failing %v",
			before, h.localSegments(), tiered, m.state(bucket0).v.Load().man.EndOffset(), m.failing.Load())
	}
	if h.s3.Refused() == 0 {
		t.Fatal("the emulator refused nothing: the test exercised no outage")
	}
	h.s3.Refuse(false)
	pass(m)
	if h.localSegments() != 1 || m.failing.Load() {
		t.Fatalf("after the outage: %d local segments, failing %v", h.localSegments(), m.failing.Load())
	}
	h.checkExactlyOnce(m)
	assertOnlyCommitted(t, h, m)
}
