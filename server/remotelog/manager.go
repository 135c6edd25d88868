package remotelog

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/server/cluster"
	"github.com/stromdb/strom/server/logstore"
	"github.com/stromdb/strom/server/meta"
	"github.com/stromdb/strom/server/remote"
)

// Bucket is one bucket replica this server hosts, as the tablet server reports it.
type Bucket struct {
	Bucket    cluster.Bucket
	Table     *cluster.TableInfo
	Partition *cluster.PartitionInfo
	Log       *logstore.Log
	// Leading and LeaderEpoch: whether this server leads the bucket, and at which epoch.
	// Only a leader copies; every replica follows the committed manifest.
	Leading     bool
	LeaderEpoch int32
}

// LeaderFence commits metadata only while this server leads the bucket at leaderEpoch
// (control.Control.CommitAsLeader in a cluster); it returns FENCED_LEADER_EPOCH otherwise.
type LeaderFence interface {
	CommitAsLeader(ctx context.Context, b cluster.Bucket, leaderEpoch int32, conds []meta.Cond, ops []meta.Op) (bool, error)
}

// Options configure a Manager.
type Options struct {
	Config  Config
	Storage *remote.Storage
	// Meta holds the committed records: reads, and commits when Fence is nil (one process
	// alone on the store).
	Meta  meta.Store
	Fence LeaderFence
	// Buckets lists the replicas this server hosts.
	Buckets func() []Bucket
	// Catalog, when set, tells dropped tables and partitions: the remote log of a bucket this
	// server hosted, whose table or partition the catalog no longer has, is deleted.
	Catalog cluster.Catalog
	// LakeFloor gives, for a lake-enabled table's bucket, the first offset not yet in the
	// lake (lakehost.Host.Floor); remote segments at or above it never expire. Nil on a
	// server without a lake: lake-enabled tables' remote segments then never expire.
	LakeFloor func(cluster.Bucket) int64
	Logger    *slog.Logger
	Now       func() time.Time
	// MaxBackoff caps the retry delay after a failed pass (default Config.Interval).
	MaxBackoff time.Duration
}

// record is the committed state of a bucket's remote log in the metadata store (the
// counterpart of Fluss's RemoteLogManifestHandle in ZooKeeper).
type commitRecord struct {
	ManifestKey string `json:"manifest_key"`
	StartOffset int64  `json:"remote_log_start_offset"`
	EndOffset   int64  `json:"remote_log_end_offset"`
	Size        int64  `json:"remote_log_size"`
	LeaderEpoch int32  `json:"leader_epoch"`
}

const recordPrefix = "remote-log/"

func recordKey(b cluster.Bucket) string {
	return fmt.Sprintf("%s%d/%d/%d", recordPrefix, b.TableID, b.PartitionID, b.Bucket)
}

// view is a bucket's committed remote log as readers see it; immutable.
type view struct {
	path cluster.TablePath
	dir  string // tablet dir key
	rec  commitRecord
	man  *Manifest // nil: nothing tiered
	part string    // partition name, "" when none
}

// bucketState is the manager's memory of one bucket.
type bucketState struct {
	mu         sync.Mutex // one pass at a time
	loadMu     sync.Mutex // one load of the record at a time (a pass's, or a reader's first)
	v          atomic.Pointer[view]
	sweptEpoch int32     // the epoch at which this server last swept orphans; math.MinInt32: never
	needSweep  bool      // a pass failed after uploading: sweep before the next copy
	failures   int       // consecutive failed passes
	dueAt      time.Time // when the next pass is due; zero: at once
}

// Manager tiers the closed segments of the buckets this server leads and serves the
// committed remote logs of every bucket it hosts.
type Manager struct {
	opts Options
	log  *slog.Logger
	m    *metrics

	mu      sync.Mutex
	buckets map[cluster.Bucket]*bucketState
	idx     indexCache

	failing atomic.Bool // the store is failing: WARNed once, INFO when it works again
}

// New returns a manager; Run drives it.
func New(opts Options) *Manager {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Config.Threads < 1 {
		opts.Config.Threads = 1
	}
	if opts.MaxBackoff <= 0 {
		opts.MaxBackoff = max(opts.Config.Interval, time.Second)
	}
	return &Manager{opts: opts, log: opts.Logger, m: newMetrics(), buckets: map[cluster.Bucket]*bucketState{},
		idx: indexCache{max: 64 << 20}}
}

// Storage is the remote store the manager writes to.
func (m *Manager) Storage() *remote.Storage { return m.opts.Storage }

// Run runs a pass over every hosted bucket at once and then every Config.Interval (failed
// buckets are retried sooner, with backoff), until ctx ends.
func (m *Manager) Run(ctx context.Context) {
	if m.opts.Config.Interval <= 0 {
		return // tiering is off; the committed remote logs are still served
	}
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		next := m.RunOnce(ctx)
		t.Reset(max(time.Until(next), 10*time.Millisecond))
	}
}

func (m *Manager) state(b cluster.Bucket) *bucketState {
	m.mu.Lock()
	defer m.mu.Unlock()
	st := m.buckets[b]
	if st == nil {
		st = &bucketState{sweptEpoch: math.MinInt32}
		m.buckets[b] = st
	}
	return st
}

// RunOnce runs a pass of every hosted bucket that is due (each Config.Interval after its
// last pass, sooner with backoff after a failure), at most Config.Threads at a time, and
// returns when the next bucket is due.
func (m *Manager) RunOnce(ctx context.Context) time.Time {
	now := m.opts.Now()
	next := now.Add(m.opts.Config.Interval)
	buckets := m.opts.Buckets()
	hosted := make(map[cluster.Bucket]bool, len(buckets))
	sem := make(chan struct{}, m.opts.Config.Threads)
	var wg sync.WaitGroup
	var due []*bucketState
	var dueBuckets []Bucket
	for _, b := range buckets {
		hosted[b.Bucket] = true
		st := m.state(b.Bucket)
		if st.dueAt.After(now) {
			continue
		}
		due = append(due, st)
		dueBuckets = append(dueBuckets, b)
	}
	// Read after Buckets(): every leadership it reports is stored, so no other server
	// commits a record of those buckets after this read (commits are fenced by leader epoch).
	pre := m.prefetchRecords(ctx, dueBuckets)
	for i, b := range dueBuckets {
		st := due[i]
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			m.finishPass(b, st, m.passBucket(ctx, b, st, pre[b.Bucket]), ctx.Err() != nil)
		}()
	}
	wg.Wait()
	stillFailing := false
	m.mu.Lock()
	for b, st := range m.buckets {
		if hosted[b] {
			stillFailing = stillFailing || st.failures > 0
			if st.dueAt.Before(next) {
				next = st.dueAt
			}
		}
	}
	m.mu.Unlock()
	if len(due) > 0 && !stillFailing && m.failing.CompareAndSwap(true, false) {
		m.log.Info("remote log tiering works again")
	}
	m.dropGone(ctx, hosted)
	return next
}

// prefetchRange is the number of due buckets of one table (partition) from which their
// records are read in one range read rather than one read per bucket in its pass: a server
// hosting tens of thousands of buckets read as many etcd keys one by one every interval
// (docs/cluster.md, "Scale").
const prefetchRange = 4

// prefetched is a bucket's committed record read ahead of its pass: raw nil when it has none.
type prefetched struct{ raw []byte }

// prefetchRecords reads the records of the due buckets of every table (partition) with at
// least prefetchRange of them in one range read each. A bucket absent from the answer is read
// in its pass as before (a failed range read leaves its buckets so).
func (m *Manager) prefetchRecords(ctx context.Context, due []Bucket) map[cluster.Bucket]*prefetched {
	type group struct{ table, partition int64 }
	groups := map[group][]cluster.Bucket{}
	for _, b := range due {
		g := group{b.Bucket.TableID, b.Bucket.PartitionID}
		groups[g] = append(groups[g], b.Bucket)
	}
	out := map[cluster.Bucket]*prefetched{}
	for g, bs := range groups {
		if len(bs) < prefetchRange {
			continue
		}
		prefix := fmt.Sprintf("%s%d/%d/", recordPrefix, g.table, g.partition)
		kvs, err := m.opts.Meta.List(ctx, prefix)
		if err != nil {
			m.log.Debug("remote log: range read of records", "table", g.table, "partition", g.partition, "err", err)
			continue
		}
		raw := make(map[string][]byte, len(kvs))
		for _, kv := range kvs {
			raw[kv.Key] = kv.Value
		}
		for _, b := range bs {
			out[b] = &prefetched{raw: raw[recordKey(b)]}
		}
	}
	return out
}

// finishPass records the outcome of a pass of b: when the next one is due, and the failure
// signals (one WARN when tiering starts failing, the metric).
func (m *Manager) finishPass(b Bucket, st *bucketState, err error, cancelled bool) {
	now := m.opts.Now()
	switch {
	case err == nil || cancelled:
		st.failures = 0
		st.dueAt = now.Add(m.opts.Config.Interval)
	case ferr.CodeOf(err) == ferr.FencedLeaderEpochException:
		// Not a failure of the store: the next pass sees the new leadership.
		st.failures = 0
		st.dueAt = now.Add(m.opts.Config.Interval)
		m.log.Info("remote log: not committed, the bucket has a newer leader", "bucket", b.Bucket, "err", err)
	default:
		st.failures++
		st.dueAt = now.Add(min(time.Second<<min(st.failures-1, 16), m.opts.MaxBackoff))
		m.m.failures.Add(1)
		if m.failing.CompareAndSwap(false, true) {
			m.log.Warn("remote log tiering failing; local segments are kept until their copy is committed, retrying with backoff",
				"bucket", b.Bucket, "err", err)
		} else {
			m.log.Debug("remote log tiering failed", "bucket", b.Bucket, "err", err)
		}
	}
}

// dropGone forgets the buckets no longer hosted, deleting the remote logs of those whose
// table or partition was dropped.
func (m *Manager) dropGone(ctx context.Context, hosted map[cluster.Bucket]bool) {
	type drop struct {
		b cluster.Bucket
		v *view
	}
	var drops []drop
	m.mu.Lock()
	for b, st := range m.buckets {
		if hosted[b] {
			continue
		}
		if v := st.v.Load(); v != nil && m.dropped(b) {
			drops = append(drops, drop{b, v})
			continue
		}
		delete(m.buckets, b) // no longer hosted: forget it (its view is reloaded if it comes back)
	}
	m.mu.Unlock()
	for _, d := range drops {
		if err := m.deleteRemoteLog(ctx, d.b, d.v); err != nil {
			m.log.Debug("remote log: delete the remote log of a dropped bucket", "bucket", d.b, "err", err)
			continue // retried at the next pass
		}
		m.mu.Lock()
		delete(m.buckets, d.b)
		m.mu.Unlock()
	}
}

// dropped reports whether b's table or partition is gone from the catalog.
func (m *Manager) dropped(b cluster.Bucket) bool {
	if m.opts.Catalog == nil {
		return false
	}
	if _, ok := m.opts.Catalog.TableByID(b.TableID); !ok {
		return true
	}
	if b.PartitionID != cluster.NoPartition {
		_, ok := m.opts.Catalog.PartitionByID(b.PartitionID)
		return !ok
	}
	return false
}

// deleteRemoteLog removes every object of a dropped bucket's remote log, then its record
// (Fluss deletes a dropped table's remote log directory likewise). Idempotent: every
// replica that hosted the bucket may run it.
func (m *Manager) deleteRemoteLog(ctx context.Context, b cluster.Bucket, v *view) error {
	bk := m.opts.Storage.Bucket
	var keys []string
	if err := bk.Iter(ctx, v.dir+"/", func(name string) error { keys = append(keys, name); return nil }, objectRecursive()); err != nil {
		return err
	}
	for _, k := range keys {
		if err := bk.Delete(ctx, k); err != nil && !bk.IsObjNotFoundErr(err) {
			return err
		}
	}
	if _, err := m.opts.Meta.Txn(ctx, nil, []meta.Op{meta.Delete(recordKey(b))}); err != nil {
		return err
	}
	if len(keys) > 0 {
		m.log.Info("remote log: deleted the remote log of a dropped bucket", "bucket", b, "objects", len(keys))
	}
	return nil
}

// passBucket runs one tiering pass of b: follow the committed record, and as leader sweep
// orphans, expire and copy segments and commit; then delete the local segments the
// committed remote log covers.
func (m *Manager) passBucket(ctx context.Context, b Bucket, st *bucketState, pre *prefetched) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.loadMu.Lock()
	v, err := m.loadLocked(ctx, b.Table, b.Partition, b.Bucket, st, pre)
	st.loadMu.Unlock()
	if err != nil {
		return err
	}
	if b.Leading {
		if v, err = m.tierLocked(ctx, b, st, v); err != nil {
			if errors.Is(err, logstore.ErrClosed) {
				return nil // closed meanwhile (dropped, or moved off this server)
			}
			return err
		}
	}
	if v.man == nil {
		return nil
	}
	n, err := b.Log.Tiering().DeleteTieredSegments(v.man.EndOffset(), b.Table.Descriptor.Properties.TieredLogLocalSegments())
	if n > 0 {
		m.m.localDeleted.Add(int64(n))
		m.log.Debug("remote log: deleted tiered local segments", "bucket", b.Bucket, "segments", n, "remote_end", v.man.EndOffset())
	}
	if errors.Is(err, logstore.ErrClosed) {
		return nil
	}
	return err
}

// loadLocked reads b's committed record afresh (or takes pre, the record read ahead in this
// round's range read, if not nil) and, when it names a manifest other than the one in
// memory, that manifest. Caller holds st.loadMu.
func (m *Manager) loadLocked(ctx context.Context, t *cluster.TableInfo, p *cluster.PartitionInfo, b cluster.Bucket, st *bucketState, pre *prefetched) (*view, error) {
	if b.PartitionID != cluster.NoPartition && p == nil {
		return nil, fmt.Errorf("remotelog: partition %d of %s is not known: its remote directory cannot be named", b.PartitionID, b)
	}
	dir := tabletDir(t, p, b)
	part := ""
	if p != nil && b.PartitionID != cluster.NoPartition {
		part = p.Name
	}
	var raw []byte
	var err error
	switch {
	case pre == nil:
		raw, err = m.opts.Meta.Get(ctx, recordKey(b))
	case pre.raw == nil:
		err = meta.ErrNotFound
	default:
		raw = pre.raw
	}
	if errors.Is(err, meta.ErrNotFound) {
		v := &view{path: t.Path, dir: dir, part: part}
		st.v.Store(v)
		return v, nil
	}
	if err != nil {
		return nil, fmt.Errorf("remotelog: read record of %s: %w", b, err)
	}
	var rec commitRecord
	if err := json.Unmarshal(raw, &rec); err != nil {
		return nil, fmt.Errorf("remotelog: corrupt record of %s: %w", b, err)
	}
	if old := st.v.Load(); old != nil && old.rec == rec && old.dir == dir {
		return old, nil
	}
	man, err := m.readManifest(ctx, rec.ManifestKey)
	if err != nil {
		return nil, err
	}
	v := &view{path: t.Path, dir: dir, rec: rec, man: man, part: part}
	st.v.Store(v)
	return v, nil
}

func (m *Manager) readManifest(ctx context.Context, key string) (*Manifest, error) {
	rc, err := m.opts.Storage.Bucket.Get(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("remotelog: read manifest %s: %w", key, err)
	}
	defer rc.Close()
	data, err := io.ReadAll(io.LimitReader(rc, 256<<20))
	if err != nil {
		return nil, fmt.Errorf("remotelog: read manifest %s: %w", key, err)
	}
	return decodeManifest(key, data)
}

// tierLocked is the leader's part of a pass. Caller holds st.mu.
func (m *Manager) tierLocked(ctx context.Context, b Bucket, st *bucketState, v *view) (*view, error) {
	if st.sweptEpoch != b.LeaderEpoch || st.needSweep {
		if err := m.sweep(ctx, b, v); err != nil {
			return v, err
		}
		st.sweptEpoch, st.needSweep = b.LeaderEpoch, false
	}
	cur := v.man
	if cur == nil {
		cur = &Manifest{Version: manifestVersion, Database: b.Table.Path.Database, Table: b.Table.Path.Table,
			TableID: b.Table.ID, BucketID: b.Bucket.Bucket}
		if v.part != "" {
			name, pid := v.part, b.Bucket.PartitionID
			cur.PartitionName, cur.PartitionID = &name, &pid
		}
	}
	expired := m.expired(b, cur)
	from := b.Log.LogStartOffset()
	if end := cur.EndOffset(); end > from {
		from = end
	}
	cands, err := b.Log.Tiering().TierCandidates(from)
	if err != nil {
		return v, err
	}
	defer func() {
		for _, c := range cands {
			c.Release()
		}
	}()
	if len(cands) == 0 && len(expired) == 0 {
		return v, nil
	}
	// Commit in groups, so that a long backlog frees local disk as it goes. A copy that fails
	// ends the pass after what was copied before it is committed.
	const group = 8
	tc := m.m.table(b.Table.Path)
	for len(cands) > 0 || len(expired) > 0 {
		var added []Segment
		var copyErr error
		for _, c := range cands[:min(group, len(cands))] {
			seg, err := m.copySegment(ctx, v.dir, b.LeaderEpoch, c, tc)
			if err != nil {
				st.needSweep, copyErr = true, err
				tc.copyErrors.Add(1)
				break
			}
			added = append(added, seg)
		}
		if len(added) == 0 && len(expired) == 0 {
			return v, copyErr
		}
		nv, err := m.commit(ctx, b, v, cur.trimAndMerge(expired, added))
		if err != nil {
			st.needSweep = true
			return v, err
		}
		for _, s := range expired {
			if err := m.deleteSegment(ctx, v.dir, s.ID, tc); err != nil {
				st.needSweep = true // an orphan now: the next pass sweeps it
			}
		}
		v, cur, expired = nv, nv.man, nil
		st.v.Store(nv)
		cands = cands[len(added):]
		if copyErr != nil {
			return v, copyErr
		}
	}
	return v, nil
}

// expired returns the segments of cur that table.log.ttl expires (and, for a lake-enabled
// table, that the lake holds in full).
func (m *Manager) expired(b Bucket, cur *Manifest) []Segment {
	ttl := b.Table.Descriptor.Properties.LogTTL()
	if ttl <= 0 {
		return nil
	}
	floor := int64(math.MaxInt64)
	if b.Table.Descriptor.Properties.DataLakeEnabled() {
		floor = 0
		if m.opts.LakeFloor != nil {
			floor = m.opts.LakeFloor(b.Bucket)
		}
	}
	now := m.opts.Now().UnixMilli()
	var out []Segment
	for _, s := range cur.Segments {
		if now-s.MaxTimestamp <= ttl.Milliseconds() || s.EndOffset > floor {
			break // oldest first: later segments are newer
		}
		out = append(out, s)
	}
	return out
}

// copySegment uploads one segment's files and checks the log file's size.
func (m *Manager) copySegment(ctx context.Context, dir string, epoch int32, c logstore.TierSegment, tc *tableCounters) (Segment, error) {
	if c.Size > math.MaxInt32 {
		return Segment{}, fmt.Errorf("remotelog: segment %d is %d bytes, more than a remote segment can describe", c.Base, c.Size)
	}
	id := newID(epoch)
	bk := m.opts.Storage.Bucket
	logKey := segmentKey(dir, id, c.Base, ".log")
	if err := bk.Upload(ctx, logKey, c.LogData()); err != nil {
		return Segment{}, fmt.Errorf("remotelog: upload %s: %w", logKey, err)
	}
	attrs, err := bk.Attributes(ctx, logKey)
	if err != nil {
		return Segment{}, fmt.Errorf("remotelog: check %s: %w", logKey, err)
	}
	if attrs.Size != c.Size {
		return Segment{}, fmt.Errorf("remotelog: %s holds %d bytes after upload, want %d", logKey, attrs.Size, c.Size)
	}
	offs, times := c.Indexes()
	files := []struct {
		key  string
		data []byte
	}{
		{segmentKey(dir, id, c.Base, ".index"), offs},
		{segmentKey(dir, id, c.Base, ".timeindex"), times},
	}
	if ws, ok := c.WriterSnapshot(); ok {
		files = append(files, struct {
			key  string
			data []byte
		}{segmentKey(dir, id, c.End, ".writer_snapshot"), ws})
	}
	for _, f := range files {
		if err := bk.Upload(ctx, f.key, bytes.NewReader(f.data)); err != nil {
			return Segment{}, fmt.Errorf("remotelog: upload %s: %w", f.key, err)
		}
	}
	tc.copies.Add(1)
	tc.copyBytes.Add(c.Size)
	return Segment{ID: id, StartOffset: c.Base, EndOffset: c.End, MaxTimestamp: c.MaxTimestamp, SizeInBytes: int32(c.Size)}, nil
}

// commit writes man as a new manifest object and commits the record naming it, fenced by
// b's leader epoch. On success the previous manifest object is deleted.
func (m *Manager) commit(ctx context.Context, b Bucket, prev *view, man *Manifest) (*view, error) {
	data, err := json.Marshal(man)
	if err != nil {
		return nil, err
	}
	key := manifestKey(prev.dir, newID(b.LeaderEpoch))
	if err := m.opts.Storage.Bucket.Upload(ctx, key, bytes.NewReader(data)); err != nil {
		return nil, fmt.Errorf("remotelog: upload manifest %s: %w", key, err)
	}
	rec := commitRecord{ManifestKey: key, StartOffset: man.StartOffset(), EndOffset: man.EndOffset(), Size: man.Size(), LeaderEpoch: b.LeaderEpoch}
	raw, err := json.Marshal(rec)
	if err != nil {
		return nil, err
	}
	ops := []meta.Op{meta.Put(recordKey(b.Bucket), raw)}
	if m.opts.Fence != nil {
		_, err = m.opts.Fence.CommitAsLeader(ctx, b.Bucket, b.LeaderEpoch, nil, ops)
	} else {
		_, err = m.opts.Meta.Txn(ctx, nil, ops)
	}
	if err != nil {
		// Whether the record was written is unknown after some errors; the manifest object
		// stays (a later sweep removes it once another is committed).
		return nil, fmt.Errorf("remotelog: commit manifest of %s: %w", b.Bucket, err)
	}
	if prev.rec.ManifestKey != "" {
		if err := m.opts.Storage.Bucket.Delete(ctx, prev.rec.ManifestKey); err != nil && !m.opts.Storage.Bucket.IsObjNotFoundErr(err) {
			m.log.Debug("remote log: delete previous manifest", "key", prev.rec.ManifestKey, "err", err)
		}
	}
	return &view{path: prev.path, dir: prev.dir, rec: rec, man: man, part: prev.part}, nil
}

// deleteSegment removes a segment's objects that no committed manifest names any more.
func (m *Manager) deleteSegment(ctx context.Context, dir, id string, tc *tableCounters) error {
	bk := m.opts.Storage.Bucket
	var keys []string
	err := bk.Iter(ctx, dir+"/"+id+"/", func(name string) error { keys = append(keys, name); return nil }, objectRecursive())
	if err != nil {
		tc.deleteErrors.Add(1)
		return err
	}
	var first error
	for _, k := range keys {
		if err := bk.Delete(ctx, k); err != nil && !bk.IsObjNotFoundErr(err) && first == nil {
			first = err
		}
	}
	if first != nil {
		tc.deleteErrors.Add(1)
		return first
	}
	tc.deletes.Add(1)
	return nil
}
