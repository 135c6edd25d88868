package kvsnap

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/thanos-io/objstore"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/formatver"
	"github.com/stromdb/strom/internal/rocksdbdir"
	"github.com/stromdb/strom/server/cluster"
	"github.com/stromdb/strom/server/kvstore"
	"github.com/stromdb/strom/server/meta"
	"github.com/stromdb/strom/server/remote"
)

// Bucket is a primary-key bucket this server leads: its state, whose views snapshots are made of.
type Bucket struct {
	Bucket cluster.Bucket
	KV     *kvstore.Tablet
	// LeaderEpoch is the leader epoch at which this server leads the bucket (0 on the single
	// node). A snapshot is committed only while the bucket's state in the metadata store still
	// names this server its leader at this epoch (LeaderFence), and snapshots written at
	// different epochs never share file names.
	LeaderEpoch int32
}

// LeaderFence commits a snapshot's metadata only while this server leads the snapshot's bucket
// at the given leader epoch (control.Control.CommitAsLeader in a cluster). It returns
// FENCED_LEADER_EPOCH when it does not.
type LeaderFence interface {
	CommitAsLeader(ctx context.Context, b cluster.Bucket, leaderEpoch int32, conds []meta.Cond, ops []meta.Op) (bool, error)
}

// Options configure a Manager.
type Options struct {
	Config Config
	// Meta is the metadata store: reads, and snapshot commits when Fence is nil.
	Meta meta.Store
	// Admin is the store lease changes and cleanup write through: in a cluster the active
	// coordinator's fenced store, so that a deposed coordinator changes nothing. Default Meta.
	Admin meta.Store
	// Fence, when set, fences snapshot commits by the bucket's leader epoch (a cluster).
	Fence LeaderFence
	// Active reports whether this node is the active coordinator, which alone cleans up
	// (expired leases, snapshots neither retained nor leased). Nil: always (the single node).
	Active func() bool
	// Watch, when set, keeps the manager's view of snapshots and leases in step with the
	// metadata store (written by every node of a cluster). Nil: the view holds what was
	// there at Open plus this manager's own writes (one process alone on the store).
	Watch *clientv3.Client
	// Catalog tells primary-key tables apart and which tables still exist.
	Catalog cluster.Catalog
	// Buckets lists the primary-key buckets to snapshot (the tablet server's leaders).
	Buckets func() []Bucket
	// Remote is remote.data.dir, where the snapshot files live: written by each bucket's
	// leader, read by every node and handed to clients (remote.Storage.ClientPath).
	Remote *remote.Storage
	// LocalDir is a local directory of this manager's alone (under the server's data
	// directory): snapshots are built in it before their upload, and the newest snapshot's
	// tables of each bucket this node leads are kept in it, so an incremental snapshot does
	// not download its base. It is emptied at Open.
	LocalDir string
	Logger   *slog.Logger
	Now      func() time.Time
}

// Ref names one snapshot of one bucket.
type Ref struct {
	Bucket cluster.Bucket
	ID     int64
}

// lease is a reader's hold on snapshots: at most one snapshot per bucket (a later acquire for
// the same bucket replaces it), until ExpiresMs.
type lease struct {
	ExpiresMs int64 `json:"expires_ms"`
	Buckets   []Ref `json:"buckets"`
}

// Manager takes, stores and serves the KV snapshots of primary-key buckets.
//
// The metadata store is the truth: a snapshot exists once its record is committed there, and
// a lease is its record there. The manager's maps are a view of it (followed by a watch in a
// cluster) that serves the read APIs and the retention floor. Decisions that must not race —
// a snapshot's id, a lease's content, what cleanup deletes — are taken on fresh reads of the
// store and written with conditions.
type Manager struct {
	opts Options
	log  *slog.Logger

	runMu   sync.Mutex // one snapshot pass (and cleanup) at a time
	adminMu sync.Mutex // lease changes and cleanup of this process, one at a time

	mu     sync.Mutex
	snaps  map[cluster.Bucket][]*Snapshot // ascending ids
	leases map[string]*lease

	local map[cluster.Bucket]bool // buckets with a local directory; under runMu
}

// Metadata store keys. Snapshot ids are zero-padded so that List returns them in order.
const (
	snapshotsPrefix = "kv-snapshots/"
	leasesPrefix    = "kv-snapshot-leases/"
	// watchPrefix covers both.
	watchPrefix = "kv-snapshot"
)

func bucketPrefix(b cluster.Bucket) string {
	return fmt.Sprintf("%s%d/%d/%d/", snapshotsPrefix, b.TableID, b.PartitionID, b.Bucket)
}

func snapshotKey(b cluster.Bucket, id int64) string {
	return fmt.Sprintf("%s%020d", bucketPrefix(b), id)
}

func parseBucketKey(key string) (cluster.Bucket, bool) {
	f := strings.Split(strings.TrimPrefix(key, snapshotsPrefix), "/")
	if len(f) != 4 {
		return cluster.Bucket{}, false
	}
	t, err1 := strconv.ParseInt(f[0], 10, 64)
	p, err2 := strconv.ParseInt(f[1], 10, 64)
	n, err3 := strconv.ParseInt(f[2], 10, 32)
	if err1 != nil || err2 != nil || err3 != nil {
		return cluster.Bucket{}, false
	}
	return cluster.Bucket{TableID: t, PartitionID: p, Bucket: int32(n)}, true
}

// Open loads the snapshot and lease metadata from the metadata store.
func Open(ctx context.Context, opts Options) (*Manager, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Admin == nil {
		opts.Admin = opts.Meta
	}
	if opts.Config.NumRetained < 1 {
		opts.Config.NumRetained = 1
	}
	if opts.Remote == nil || opts.LocalDir == "" {
		return nil, fmt.Errorf("kvsnap: remote storage and a local directory are required")
	}
	// What a previous process left is unlisted or a copy of what the store holds.
	if err := os.RemoveAll(opts.LocalDir); err != nil {
		return nil, fmt.Errorf("kvsnap: clear %s: %w", opts.LocalDir, err)
	}
	if err := os.MkdirAll(opts.LocalDir, 0o755); err != nil {
		return nil, fmt.Errorf("kvsnap: %w", err)
	}
	m := &Manager{opts: opts, log: opts.Logger, snaps: map[cluster.Bucket][]*Snapshot{}, leases: map[string]*lease{},
		local: map[cluster.Bucket]bool{}}
	kvs, err := opts.Meta.List(ctx, watchPrefix)
	if err != nil {
		return nil, fmt.Errorf("kvsnap: load snapshots and leases: %w", err)
	}
	if err := m.replace(kvs); err != nil {
		return nil, err
	}
	return m, nil
}

// decodeRecords reads the snapshot and lease records among kvs.
func decodeRecords(kvs []meta.KV) (map[cluster.Bucket][]*Snapshot, map[string]*lease, error) {
	snaps, leases := map[cluster.Bucket][]*Snapshot{}, map[string]*lease{}
	for _, kv := range kvs {
		switch {
		case strings.HasPrefix(kv.Key, snapshotsPrefix):
			b, s, err := decodeSnapshot(kv.Key, kv.Value)
			if err != nil {
				return nil, nil, err
			}
			snaps[b] = append(snaps[b], s)
		case strings.HasPrefix(kv.Key, leasesPrefix):
			var l lease
			if json.Unmarshal(kv.Value, &l) != nil {
				return nil, nil, fmt.Errorf("kvsnap: bad lease record %s", kv.Key)
			}
			leases[strings.TrimPrefix(kv.Key, leasesPrefix)] = &l
		}
	}
	return snaps, leases, nil
}

// replace makes the view exactly the given records.
func (m *Manager) replace(kvs []meta.KV) error {
	snaps, leases, err := decodeRecords(kvs)
	if err != nil {
		return err
	}
	m.mu.Lock()
	m.snaps, m.leases = snaps, leases
	m.mu.Unlock()
	return nil
}

func decodeSnapshot(key string, value []byte) (cluster.Bucket, *Snapshot, error) {
	b, ok := parseBucketKey(key)
	var s Snapshot
	if !ok || json.Unmarshal(value, &s) != nil {
		return b, nil, fmt.Errorf("kvsnap: bad snapshot record %s", key)
	}
	if _, err := formatver.RecordVersion("etcd key "+meta.KeyPrefix+key, value, SnapshotFormat); err != nil {
		return b, nil, fmt.Errorf("kvsnap: %w", err)
	}
	return b, &s, nil
}

// noteSnapshot puts s into the view (replacing a snapshot of the same id).
func (m *Manager) noteSnapshot(b cluster.Bucket, s *Snapshot) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ss := slices.DeleteFunc(m.snaps[b], func(o *Snapshot) bool { return o.ID == s.ID })
	i, _ := slices.BinarySearchFunc(ss, s.ID, func(o *Snapshot, id int64) int { return cmpInt(o.ID, id) })
	m.snaps[b] = slices.Insert(ss, i, s)
}

// forgetSnapshot removes snapshot id of b from the view.
func (m *Manager) forgetSnapshot(b cluster.Bucket, id int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ss := slices.DeleteFunc(m.snaps[b], func(o *Snapshot) bool { return o.ID == id })
	if len(ss) == 0 {
		delete(m.snaps, b)
	} else {
		m.snaps[b] = ss
	}
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Run takes a snapshot of every bucket whose state changed, every Config.Interval, and — on
// the active coordinator — cleans up expired leases and snapshots no longer retained, until
// ctx ends. The first pass runs at once, so buckets whose changelog was trimmed before (by an
// older version) get a snapshot. With Options.Watch it also follows the metadata store.
func (m *Manager) Run(ctx context.Context) {
	if m.opts.Watch != nil {
		go m.follow(ctx)
	}
	t := time.NewTicker(m.opts.Config.Interval)
	defer t.Stop()
	for {
		m.SnapshotAll(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// SnapshotAll runs one pass: a snapshot of every changed bucket this server leads, then
// cleanup if this node is the active coordinator. A failure of remote storage itself ends the
// pass, cleanup included: the other buckets would each wait out the store's retries in vain,
// and the next pass tries again.
func (m *Manager) SnapshotAll(ctx context.Context) {
	buckets := m.opts.Buckets()
	defer m.dropLocal(buckets)
	for _, b := range buckets {
		if ctx.Err() != nil {
			return
		}
		if _, _, err := m.SnapshotBucket(ctx, b); isRemote(err) {
			m.log.Warn("kv snapshots: remote storage failed; this pass stops, the next one retries",
				"remote.data.dir", m.opts.Remote.Root(), "bucket", b.Bucket, "err", err)
			return
		} else if err != nil {
			lvl := slog.LevelWarn
			if ferr.CodeOf(err) == ferr.FencedLeaderEpochException {
				lvl = slog.LevelInfo // the leadership moved on during the pass
			}
			m.log.Log(ctx, lvl, "kv snapshot failed", "bucket", b.Bucket, "err", err)
		}
	}
	if m.opts.Active != nil && !m.opts.Active() {
		return
	}
	if err := m.Cleanup(ctx); err != nil && ctx.Err() == nil {
		m.log.Warn("kv snapshot cleanup failed", "err", err)
	}
}

// listBucket reads b's committed snapshots from the metadata store, ascending ids.
func (m *Manager) listBucket(ctx context.Context, b cluster.Bucket) ([]*Snapshot, error) {
	kvs, err := m.opts.Meta.List(ctx, bucketPrefix(b))
	if err != nil {
		return nil, err
	}
	out := make([]*Snapshot, 0, len(kvs))
	for _, kv := range kvs {
		_, s, err := decodeSnapshot(kv.Key, kv.Value)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// epochFileBase is the first table file number a leader at epoch uses: leaders of different
// epochs number their files apart, so a deposed leader still writing cannot overwrite a file
// of its successor's (both start from the same committed snapshots).
func epochFileBase(epoch int32) uint64 {
	if epoch <= 0 {
		return 1
	}
	return uint64(epoch) << 32
}

// SnapshotBucket takes a snapshot of b unless its latest one already holds its applied state.
// It returns the bucket's latest snapshot and whether it is new. The id is one above the
// newest committed in the metadata store, read afresh, and the commit requires that id to be
// free and (with a LeaderFence) b's leadership at b.LeaderEpoch to hold: ids grow across
// leader changes, and a deposed leader commits nothing.
func (m *Manager) SnapshotBucket(ctx context.Context, b Bucket) (*Snapshot, bool, error) {
	m.runMu.Lock()
	defer m.runMu.Unlock()
	view, err := b.KV.OpenStateView()
	if err != nil {
		return nil, false, err
	}
	defer view.Close()
	committed, err := m.listBucket(ctx, b.Bucket)
	if err != nil {
		return nil, false, fmt.Errorf("kvsnap: list snapshots of %s: %w", b.Bucket, err)
	}
	var prev *Snapshot
	if n := len(committed); n > 0 {
		prev = committed[n-1]
	}
	if prev != nil && prev.LogOffset == view.Offset {
		m.noteSnapshot(b.Bucket, prev)
		return prev, false, nil
	}
	id := int64(0)
	nextFile := epochFileBase(b.LeaderEpoch)
	for _, s := range committed {
		id = max(id, s.ID+1)
		nextFile = max(nextFile, s.nextFileNumber())
	}
	bkt := m.opts.Remote.Bucket
	if err := sweepOrphans(ctx, bkt, b.Bucket, committed, b.LeaderEpoch); isRemote(err) {
		return nil, false, err
	} else if err != nil {
		m.log.Warn("kv snapshot: remove files of failed passes", "bucket", b.Bucket, "err", err)
	}
	name := snapDirName(id)
	if b.LeaderEpoch > 0 {
		name = fmt.Sprintf("%s-e%d", name, b.LeaderEpoch)
	}
	local := m.localBucketDir(b.Bucket)
	shared, private := filepath.Join(local, sharedDirName), filepath.Join(local, name)
	_ = os.RemoveAll(private) // left by a pass of this leadership that failed before its metadata was written
	defer os.RemoveAll(private)
	// The local tables kept are the newest committed snapshot's: prev's, or the new one's
	// once committed.
	var localTables []rocksdbdir.Table
	if prev != nil {
		localTables = prev.Tables
	}
	defer func() { pruneLocal(shared, localTables) }()
	m.noteLocal(b.Bucket)
	if prev != nil && prev.minLevel() > 1 {
		// The base of an incremental snapshot (build's condition for one), from the local
		// copy when this node took it. Without it build writes a full snapshot.
		if err := fetchTables(ctx, bkt, b.Bucket, prev.Tables, shared); isRemote(err) {
			return nil, false, err
		} else if err != nil {
			m.log.Warn("kv snapshot: read the previous snapshot's tables", "bucket", b.Bucket, "snapshot", prev.ID, "err", err)
		}
	}
	s, err := build(view, prev, shared, private, id, nextFile, m.log.With("bucket", b.Bucket))
	if err != nil {
		return nil, false, fmt.Errorf("kvsnap: build snapshot %d of %s: %w", id, b.Bucket, err)
	}
	// Upload the new tables, then the MANIFEST, then CURRENT, and only then commit: a crash
	// or an error leaves unlisted objects, which the next pass of a leader sweeps.
	keep := map[uint64]bool{}
	if prev != nil {
		for _, t := range prev.Tables {
			keep[t.Number] = true
		}
	}
	for _, t := range s.Tables {
		if keep[t.Number] {
			continue
		}
		if err := uploadFile(ctx, bkt, tableKey(b.Bucket, t.Number), filepath.Join(shared, tableName(t.Number))); err != nil {
			return nil, false, err
		}
	}
	for _, f := range []string{manifestName(s.Manifest), "CURRENT"} {
		if err := uploadFile(ctx, bkt, path.Join(bucketKey(b.Bucket), name, f), filepath.Join(private, f)); err != nil {
			return nil, false, err
		}
	}
	s.Dir = name
	s.LeaderEpoch = b.LeaderEpoch
	s.CreatedMs = m.opts.Now().UnixMilli()
	s.FormatVersion = SnapshotFormat.Current
	data, err := json.Marshal(s)
	if err != nil {
		return nil, false, err
	}
	key := snapshotKey(b.Bucket, id)
	conds := []meta.Cond{{Key: key, Exists: false}}
	ops := []meta.Op{meta.Put(key, data)}
	var ok bool
	if m.opts.Fence != nil {
		ok, err = m.opts.Fence.CommitAsLeader(ctx, b.Bucket, b.LeaderEpoch, conds, ops)
	} else {
		ok, err = m.opts.Meta.Txn(ctx, conds, ops)
	}
	if err == nil && !ok {
		err = fmt.Errorf("snapshot id %d was taken by another writer", id)
	}
	if err != nil {
		return nil, false, fmt.Errorf("kvsnap: commit snapshot %d of %s: %w", id, b.Bucket, err)
	}
	localTables = s.Tables
	m.noteSnapshot(b.Bucket, s)
	m.log.Debug("kv snapshot taken", "bucket", b.Bucket, "id", id, "log_offset", s.LogOffset, "rows", s.Rows, "tables", len(s.Tables))
	return s, true, nil
}

// sweepOrphans deletes, in a bucket's remote directory, the files no committed snapshot lists
// that a leader of epoch at most epoch wrote: tables and private directories of passes that
// failed before their commit or whose commit was fenced. Called by the bucket's leader at epoch,
// with the committed snapshots read afresh, before it builds: no pass of its own is in flight
// (runMu); a leader of an earlier epoch can no longer commit (its commit needs the bucket state
// to name it leader at its epoch), so its unlisted files are garbage even while it still writes
// them; files a later leader may be writing (numbered from epochFileBase(epoch+1), directories
// tagged with a later epoch) are left alone. Listed files are never touched.
func sweepOrphans(ctx context.Context, bkt objstore.Bucket, b cluster.Bucket, committed []*Snapshot, epoch int32) error {
	limit := epochFileBase(epoch + 1)
	tables, dirs := map[uint64]bool{}, map[string]bool{}
	for _, s := range committed {
		for _, t := range s.Tables {
			tables[t.Number] = true
		}
		dirs[s.dirName()] = true
	}
	var errs []error
	root := bucketKey(b)
	shared, err := listDir(ctx, bkt, path.Join(root, sharedDirName))
	if err != nil {
		return err // the store does not answer: nothing else will work either
	}
	for _, key := range shared {
		num, ok := strings.CutSuffix(path.Base(key), ".sst")
		n, err := strconv.ParseUint(num, 10, 64)
		if !ok || err != nil || tables[n] || n >= limit {
			continue
		}
		if err := bkt.Delete(ctx, key); err != nil && !bkt.IsObjNotFoundErr(err) {
			errs = append(errs, err)
		}
	}
	entries, err := listDir(ctx, bkt, root)
	if err != nil {
		errs = append(errs, err)
	}
	for _, key := range entries {
		name, isDir := strings.CutSuffix(key, "/")
		name = path.Base(name)
		rest, ok := strings.CutPrefix(name, "snap-")
		if !ok || !isDir || dirs[name] {
			continue
		}
		var dirEpoch int64
		if _, tag, tagged := strings.Cut(rest, "-e"); tagged {
			if dirEpoch, err = strconv.ParseInt(tag, 10, 32); err != nil {
				continue
			}
		}
		if dirEpoch > int64(epoch) {
			continue
		}
		errs = append(errs, deletePrefix(ctx, bkt, path.Join(root, name)))
	}
	return errors.Join(errs...)
}

// noteLocal records that b has a local directory. Caller holds runMu.
func (m *Manager) noteLocal(b cluster.Bucket) { m.local[b] = true }

// dropLocal removes the local directories of the buckets this node no longer leads.
func (m *Manager) dropLocal(leading []Bucket) {
	m.runMu.Lock()
	defer m.runMu.Unlock()
	lead := map[cluster.Bucket]bool{}
	for _, b := range leading {
		lead[b.Bucket] = true
	}
	for b := range m.local {
		if !lead[b] {
			os.RemoveAll(m.localBucketDir(b))
			delete(m.local, b)
		}
	}
}

// pruneLocal removes from a bucket's local table directory every table that tables does not
// list.
func pruneLocal(dir string, tables []rocksdbdir.Table) {
	keep := map[string]bool{}
	for _, t := range tables {
		keep[tableName(t.Number)] = true
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if !keep[e.Name()] {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}

// Layout of a bucket's files under the remote directory (docs/kv-snapshots.md).
const sharedDirName = "shared"

func snapDirName(id int64) string { return fmt.Sprintf("snap-%d", id) }

// Latest returns the bucket's newest snapshot.
func (m *Manager) Latest(b cluster.Bucket) (*Snapshot, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ss := m.snaps[b]
	if len(ss) == 0 {
		return nil, false
	}
	return ss[len(ss)-1], true
}

// Get returns snapshot id of bucket b.
func (m *Manager) Get(b cluster.Bucket, id int64) (*Snapshot, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, s := range m.snaps[b] {
		if s.ID == id {
			return s, true
		}
	}
	return nil, false
}

// Active returns the ids of every snapshot of the table (or partition) still kept, retained
// or leased, per bucket.
func (m *Manager) Active(tableID, partitionID int64) map[int32][]int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[int32][]int64{}
	for b, ss := range m.snaps {
		if b.TableID != tableID || b.PartitionID != partitionID {
			continue
		}
		for _, s := range ss {
			out[b.Bucket] = append(out[b.Bucket], s.ID)
		}
	}
	return out
}

// File is one file of a snapshot: where a client opens it (a file:// URL for a file store,
// s3://bucket/key for S3) and the name it must have in the reader's database directory.
type File struct {
	RemotePath    string
	LocalFileName string
}

// Files lists the files of snapshot s of bucket b.
func (m *Manager) Files(b cluster.Bucket, s *Snapshot) []File {
	dir := bucketKey(b)
	var out []File
	for _, t := range s.Tables {
		name := tableName(t.Number)
		out = append(out, File{m.clientPath(tableKey(b, t.Number)), name})
	}
	manifest := manifestName(s.Manifest)
	return append(out,
		File{m.clientPath(path.Join(dir, s.dirName(), manifest)), manifest},
		File{m.clientPath(path.Join(dir, s.dirName(), "CURRENT")), "CURRENT"})
}

// clientPath is where a client opens the object at key: Fluss's readers take a local path as a
// file:// URL.
func (m *Manager) clientPath(key string) string {
	p := m.opts.Remote.ClientPath(key)
	if m.opts.Remote.Scheme == "file" {
		return fileURL(p)
	}
	return p
}

// Floor is the first changelog offset of b that log retention must keep: the smallest log
// offset of its retained and leased snapshots; 0 (keep everything) for a primary-key bucket
// without a snapshot; no limit for other buckets.
func (m *Manager) Floor(b cluster.Bucket) int64 {
	m.mu.Lock()
	ss := m.snaps[b]
	if len(ss) > 0 {
		floor := int64(math.MaxInt64)
		keep := m.keptLocked(b, m.opts.Now().UnixMilli())
		for _, s := range ss {
			if keep[s.ID] {
				floor = min(floor, s.LogOffset)
			}
		}
		m.mu.Unlock()
		return floor
	}
	m.mu.Unlock()
	if t, ok := m.opts.Catalog.TableByID(b.TableID); ok && !t.HasPrimaryKey() {
		return math.MaxInt64
	}
	return 0
}

// keptLocked returns the ids of b's snapshots in the view that must be kept. Caller holds mu.
func (m *Manager) keptLocked(b cluster.Bucket, nowMs int64) map[int64]bool {
	return kept(m.snaps[b], m.leases, b, m.opts.Config.NumRetained, nowMs)
}

// kept returns the ids of b's snapshots ss (ascending) that must be kept: the numRetained
// newest and every one an unexpired lease holds.
func kept(ss []*Snapshot, leases map[string]*lease, b cluster.Bucket, numRetained int, nowMs int64) map[int64]bool {
	keep := map[int64]bool{}
	for i := max(0, len(ss)-numRetained); i < len(ss); i++ {
		keep[ss[i].ID] = true
	}
	for _, l := range leases {
		if l.ExpiresMs <= nowMs {
			continue
		}
		for _, r := range l.Buckets {
			if r.Bucket == b {
				keep[r.ID] = true
			}
		}
	}
	return keep
}

// Acquire creates or extends lease id to durationMs from now and makes it hold the given
// snapshots (replacing the snapshot it held for the same bucket). Snapshots that do not exist
// are returned as unavailable and not held. As in Fluss, any id and duration are accepted (a
// lease whose duration is not positive has expired at once). The lease is read and the
// snapshots checked in the metadata store itself, and the write requires every held snapshot
// to exist still, so a lease never holds a snapshot cleanup removed.
func (m *Manager) Acquire(ctx context.Context, id string, durationMs int64, refs []Ref) ([]Ref, error) {
	m.adminMu.Lock()
	defer m.adminMu.Unlock()
	for attempt := 0; ; attempt++ {
		l := &lease{}
		if old, ok, err := m.readLease(ctx, id); err != nil {
			return nil, err
		} else if ok {
			l.Buckets = old.Buckets
		}
		l.ExpiresMs = m.opts.Now().UnixMilli() + durationMs
		var unavailable []Ref
		var conds []meta.Cond
		for _, r := range refs {
			_, err := m.opts.Meta.Get(ctx, snapshotKey(r.Bucket, r.ID))
			if errors.Is(err, meta.ErrNotFound) {
				unavailable = append(unavailable, r)
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("kvsnap: read snapshot %d of %s: %w", r.ID, r.Bucket, err)
			}
			conds = append(conds, meta.Cond{Key: snapshotKey(r.Bucket, r.ID), Exists: true})
			l.Buckets = slices.DeleteFunc(l.Buckets, func(o Ref) bool { return o.Bucket == r.Bucket })
			l.Buckets = append(l.Buckets, r)
		}
		ok, err := m.putLease(ctx, id, l, conds)
		if err != nil {
			return nil, err
		}
		if ok {
			return unavailable, nil
		}
		if attempt >= 3 {
			return nil, fmt.Errorf("kvsnap: lease %s: the snapshots changed during every attempt", id)
		}
	}
}

// readLease reads lease id from the metadata store.
func (m *Manager) readLease(ctx context.Context, id string) (*lease, bool, error) {
	v, err := m.opts.Meta.Get(ctx, leasesPrefix+id)
	if errors.Is(err, meta.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("kvsnap: read lease %s: %w", id, err)
	}
	var l lease
	if err := json.Unmarshal(v, &l); err != nil {
		return nil, false, fmt.Errorf("kvsnap: bad lease record %s: %w", id, err)
	}
	return &l, true, nil
}

// Release makes lease id stop holding the buckets' snapshots; a lease left empty is dropped.
// An unknown lease is not an error.
func (m *Manager) Release(ctx context.Context, id string, buckets []cluster.Bucket) error {
	m.adminMu.Lock()
	defer m.adminMu.Unlock()
	old, ok, err := m.readLease(ctx, id)
	if err != nil || !ok {
		return err
	}
	l := &lease{ExpiresMs: old.ExpiresMs, Buckets: slices.DeleteFunc(slices.Clone(old.Buckets), func(r Ref) bool {
		return slices.Contains(buckets, r.Bucket)
	})}
	if len(l.Buckets) == 0 {
		return m.dropLease(ctx, id)
	}
	_, err = m.putLease(ctx, id, l, nil)
	return err
}

// Drop removes lease id; an unknown lease is not an error.
func (m *Manager) Drop(ctx context.Context, id string) error {
	m.adminMu.Lock()
	defer m.adminMu.Unlock()
	if _, ok, err := m.readLease(ctx, id); err != nil || !ok {
		return err
	}
	return m.dropLease(ctx, id)
}

// LeaseTables lists the tables whose snapshots lease id holds.
func (m *Manager) LeaseTables(id string) []int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []int64
	if l, ok := m.leases[id]; ok {
		for _, r := range l.Buckets {
			if !slices.Contains(out, r.Bucket.TableID) {
				out = append(out, r.Bucket.TableID)
			}
		}
	}
	return out
}

// putLease writes lease id through the admin store if conds hold.
func (m *Manager) putLease(ctx context.Context, id string, l *lease, conds []meta.Cond) (bool, error) {
	data, err := json.Marshal(l)
	if err != nil {
		return false, err
	}
	ok, err := m.opts.Admin.Txn(ctx, conds, []meta.Op{meta.Put(leasesPrefix+id, data)})
	if err != nil {
		return false, fmt.Errorf("kvsnap: record lease %s: %w", id, err)
	}
	if ok {
		m.mu.Lock()
		m.leases[id] = l
		m.mu.Unlock()
	}
	return ok, nil
}

func (m *Manager) dropLease(ctx context.Context, id string) error {
	if _, err := m.opts.Admin.Txn(ctx, nil, []meta.Op{meta.Delete(leasesPrefix + id)}); err != nil {
		return fmt.Errorf("kvsnap: drop lease %s: %w", id, err)
	}
	m.mu.Lock()
	delete(m.leases, id)
	m.mu.Unlock()
	return nil
}

// Cleanup drops expired leases, then the snapshots that are neither retained nor leased (their
// metadata first, then their files that no kept snapshot shares), and everything of tables and
// partitions that no longer exist. It decides on the metadata store's records read afresh, not
// on the view, and writes through the admin store: in a cluster only the active coordinator
// cleans up, and a deposed one deletes nothing. The newest snapshot of an existing bucket is
// always kept (NumRetained >= 1), so a leader building on it never loses its base.
func (m *Manager) Cleanup(ctx context.Context) error {
	m.runMu.Lock()
	defer m.runMu.Unlock()
	m.adminMu.Lock()
	defer m.adminMu.Unlock()
	kvs, err := m.opts.Meta.List(ctx, watchPrefix)
	if err != nil {
		return fmt.Errorf("kvsnap: cleanup: %w", err)
	}
	snaps, leases, err := decodeRecords(kvs)
	if err != nil {
		return err
	}
	now := m.opts.Now().UnixMilli()
	var errs []error
	for id, l := range leases {
		if l.ExpiresMs <= now {
			if err := m.dropLease(ctx, id); err != nil {
				return errors.Join(append(errs, err)...) // a deposed coordinator: stop at once
			}
			delete(leases, id)
		}
	}
	for b, ss := range snaps {
		gone := !m.exists(b)
		keep := kept(ss, leases, b, m.opts.Config.NumRetained, now)
		var victims, held []*Snapshot
		for _, s := range ss {
			if gone || !keep[s.ID] {
				victims = append(victims, s)
			} else {
				held = append(held, s)
			}
		}
		if len(victims) == 0 {
			continue
		}
		ops := make([]meta.Op, 0, len(victims))
		for _, s := range victims {
			ops = append(ops, meta.Delete(snapshotKey(b, s.ID)))
		}
		if _, err := m.opts.Admin.Txn(ctx, nil, ops); err != nil {
			return errors.Join(append(errs, fmt.Errorf("kvsnap: drop snapshots of %s: %w", b, err))...)
		}
		for _, s := range victims {
			m.forgetSnapshot(b, s.ID)
		}
		errs = append(errs, m.removeFiles(ctx, b, victims, held))
	}
	return errors.Join(errs...)
}

// exists reports whether b's table (and partition) still exists.
func (m *Manager) exists(b cluster.Bucket) bool {
	t, ok := m.opts.Catalog.TableByID(b.TableID)
	if !ok || !t.HasPrimaryKey() {
		return false
	}
	if b.PartitionID == cluster.NoPartition {
		return true
	}
	_, ok = m.opts.Catalog.PartitionByID(b.PartitionID)
	return ok
}

// removeFiles deletes the private directories of victims and the tables no kept snapshot uses.
func (m *Manager) removeFiles(ctx context.Context, b cluster.Bucket, victims, kept []*Snapshot) error {
	bkt := m.opts.Remote.Bucket
	dir := bucketKey(b)
	if len(kept) == 0 {
		return deletePrefix(ctx, bkt, dir)
	}
	used := map[uint64]bool{}
	for _, s := range kept {
		for _, t := range s.Tables {
			used[t.Number] = true
		}
	}
	var errs []error
	for _, s := range victims {
		errs = append(errs, deletePrefix(ctx, bkt, path.Join(dir, s.dirName())))
		for _, t := range s.Tables {
			if !used[t.Number] {
				if err := bkt.Delete(ctx, tableKey(b, t.Number)); err != nil && !bkt.IsObjNotFoundErr(err) {
					errs = append(errs, err)
				}
			}
		}
	}
	return errors.Join(errs...)
}

// follow keeps the view in step with the metadata store: a watch on the snapshot and lease
// records, and a full reload whenever the watch breaks (a compaction, a lost connection).
func (m *Manager) follow(ctx context.Context) {
	cli := m.opts.Watch
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		resp, err := cli.Get(ctx, meta.KeyPrefix+watchPrefix, clientv3.WithPrefix())
		if err == nil {
			kvs := make([]meta.KV, 0, len(resp.Kvs))
			for _, kv := range resp.Kvs {
				kvs = append(kvs, meta.KV{Key: strings.TrimPrefix(string(kv.Key), meta.KeyPrefix), Value: kv.Value})
			}
			err = m.replace(kvs)
		}
		if err != nil {
			if ctx.Err() == nil {
				m.log.Warn("kv snapshots: reload the metadata", "err", err)
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, 5*time.Second)
			continue
		}
		backoff = 100 * time.Millisecond
		wch := cli.Watch(clientv3.WithRequireLeader(ctx), meta.KeyPrefix+watchPrefix, clientv3.WithPrefix(), clientv3.WithRev(resp.Header.Revision+1))
		for wr := range wch {
			if wr.Err() != nil {
				break
			}
			for _, ev := range wr.Events {
				m.applyEvent(ev)
			}
		}
	}
}

// applyEvent applies one watched change to the view.
func (m *Manager) applyEvent(ev *clientv3.Event) {
	key := strings.TrimPrefix(string(ev.Kv.Key), meta.KeyPrefix)
	del := ev.Type == clientv3.EventTypeDelete
	switch {
	case strings.HasPrefix(key, snapshotsPrefix):
		b, ok := parseBucketKey(key)
		if !ok {
			return
		}
		if del {
			id, err := strconv.ParseInt(key[strings.LastIndexByte(key, '/')+1:], 10, 64)
			if err == nil {
				m.forgetSnapshot(b, id)
			}
			return
		}
		if _, s, err := decodeSnapshot(key, ev.Kv.Value); err == nil {
			m.noteSnapshot(b, s)
		}
	case strings.HasPrefix(key, leasesPrefix):
		id := strings.TrimPrefix(key, leasesPrefix)
		m.mu.Lock()
		defer m.mu.Unlock()
		if del {
			delete(m.leases, id)
			return
		}
		var l lease
		if json.Unmarshal(ev.Kv.Value, &l) == nil {
			m.leases[id] = &l
		}
	}
}
