package kvsnap

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/stromdb/strom/server/cluster"
	"github.com/stromdb/strom/server/kvstore"
	"github.com/stromdb/strom/server/meta"
)

// Bucket is a primary-key bucket this server leads: its state, whose views snapshots are made of.
type Bucket struct {
	Bucket cluster.Bucket
	KV     *kvstore.Tablet
}

// Options configure a Manager.
type Options struct {
	Config Config
	Meta   meta.Store
	// Catalog tells primary-key tables apart and which tables still exist.
	Catalog cluster.Catalog
	// Buckets lists the primary-key buckets to snapshot (the tablet server's leaders).
	Buckets func() []Bucket
	Logger  *slog.Logger
	Now     func() time.Time
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

// Manager takes, stores and serves the KV snapshots of one server's primary-key buckets.
type Manager struct {
	opts Options
	log  *slog.Logger

	runMu sync.Mutex // one snapshot pass (and cleanup) at a time

	mu     sync.Mutex
	snaps  map[cluster.Bucket][]*Snapshot // ascending ids
	leases map[string]*lease
}

// Metadata store keys. Snapshot ids are zero-padded so that List returns them in order.
const (
	snapshotsPrefix = "kv-snapshots/"
	leasesPrefix    = "kv-snapshot-leases/"
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
	if opts.Config.NumRetained < 1 {
		opts.Config.NumRetained = 1
	}
	m := &Manager{opts: opts, log: opts.Logger, snaps: map[cluster.Bucket][]*Snapshot{}, leases: map[string]*lease{}}
	kvs, err := opts.Meta.List(ctx, snapshotsPrefix)
	if err != nil {
		return nil, fmt.Errorf("kvsnap: load snapshots: %w", err)
	}
	for _, kv := range kvs {
		b, ok := parseBucketKey(kv.Key)
		var s Snapshot
		if !ok || json.Unmarshal(kv.Value, &s) != nil {
			return nil, fmt.Errorf("kvsnap: bad snapshot record %s", kv.Key)
		}
		m.snaps[b] = append(m.snaps[b], &s)
	}
	kvs, err = opts.Meta.List(ctx, leasesPrefix)
	if err != nil {
		return nil, fmt.Errorf("kvsnap: load leases: %w", err)
	}
	for _, kv := range kvs {
		var l lease
		if json.Unmarshal(kv.Value, &l) != nil {
			return nil, fmt.Errorf("kvsnap: bad lease record %s", kv.Key)
		}
		m.leases[strings.TrimPrefix(kv.Key, leasesPrefix)] = &l
	}
	return m, nil
}

// Run takes a snapshot of every bucket whose state changed, every Config.Interval, and cleans
// up expired leases and snapshots no longer retained, until ctx ends. The first pass runs at
// once, so buckets whose changelog was trimmed before (by an older version) get a snapshot.
func (m *Manager) Run(ctx context.Context) {
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

// SnapshotAll runs one pass: a snapshot of every changed bucket, then cleanup.
func (m *Manager) SnapshotAll(ctx context.Context) {
	for _, b := range m.opts.Buckets() {
		if ctx.Err() != nil {
			return
		}
		if _, _, err := m.SnapshotBucket(ctx, b); err != nil {
			m.log.Warn("kv snapshot failed", "bucket", b.Bucket, "err", err)
		}
	}
	if err := m.Cleanup(ctx); err != nil {
		m.log.Warn("kv snapshot cleanup failed", "err", err)
	}
}

// SnapshotBucket takes a snapshot of b unless its latest one already holds its applied state.
// It returns the bucket's latest snapshot and whether it is new.
func (m *Manager) SnapshotBucket(ctx context.Context, b Bucket) (*Snapshot, bool, error) {
	m.runMu.Lock()
	defer m.runMu.Unlock()
	view, err := b.KV.OpenStateView()
	if err != nil {
		return nil, false, err
	}
	defer view.Close()
	prev, _ := m.Latest(b.Bucket)
	if prev != nil && prev.LogOffset == view.Offset {
		return prev, false, nil
	}
	id := int64(0)
	var nextFile uint64 = 1
	m.mu.Lock()
	for _, s := range m.snaps[b.Bucket] {
		id = max(id, s.ID+1)
		nextFile = max(nextFile, s.nextFileNumber())
	}
	m.mu.Unlock()
	dir := m.bucketDir(b.Bucket)
	private := filepath.Join(dir, snapDirName(id))
	_ = os.RemoveAll(private) // left by a pass that failed before its metadata was written
	s, err := build(view, prev, filepath.Join(dir, sharedDirName), private, id, nextFile, m.log.With("bucket", b.Bucket))
	if err != nil {
		return nil, false, fmt.Errorf("kvsnap: build snapshot %d of %s: %w", id, b.Bucket, err)
	}
	s.CreatedMs = m.opts.Now().UnixMilli()
	data, err := json.Marshal(s)
	if err != nil {
		return nil, false, err
	}
	if _, err := m.opts.Meta.Txn(ctx, nil, []meta.Op{meta.Put(snapshotKey(b.Bucket, id), data)}); err != nil {
		return nil, false, fmt.Errorf("kvsnap: record snapshot %d of %s: %w", id, b.Bucket, err)
	}
	m.mu.Lock()
	m.snaps[b.Bucket] = append(m.snaps[b.Bucket], s)
	m.mu.Unlock()
	m.log.Debug("kv snapshot taken", "bucket", b.Bucket, "id", id, "log_offset", s.LogOffset, "rows", s.Rows, "tables", len(s.Tables))
	return s, true, nil
}

// Layout of a bucket's files under the remote directory (docs/kv-snapshots.md).
const sharedDirName = "shared"

func snapDirName(id int64) string { return fmt.Sprintf("snap-%d", id) }

func (m *Manager) bucketDir(b cluster.Bucket) string {
	root := filepath.Join(m.opts.Config.RemoteDir, "kv", fmt.Sprintf("table-%d", b.TableID))
	if b.PartitionID != cluster.NoPartition {
		root = filepath.Join(root, fmt.Sprintf("partition-%d", b.PartitionID))
	}
	return filepath.Join(root, fmt.Sprintf("bucket-%d", b.Bucket))
}

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

// File is one file of a snapshot: where it is (a file:// URL) and the name it must have in the
// reader's database directory.
type File struct {
	RemotePath    string
	LocalFileName string
}

// Files lists the files of snapshot s of bucket b.
func (m *Manager) Files(b cluster.Bucket, s *Snapshot) []File {
	dir := m.bucketDir(b)
	var out []File
	for _, t := range s.Tables {
		name := tableName(t.Number)
		out = append(out, File{fileURL(filepath.Join(dir, sharedDirName, name)), name})
	}
	manifest := manifestName(s.Manifest)
	private := filepath.Join(dir, snapDirName(s.ID))
	return append(out,
		File{fileURL(filepath.Join(private, manifest)), manifest},
		File{fileURL(filepath.Join(private, "CURRENT")), "CURRENT"})
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

// keptLocked returns the ids of b's snapshots that must be kept: the NumRetained newest and
// every one an unexpired lease holds. Caller holds mu.
func (m *Manager) keptLocked(b cluster.Bucket, nowMs int64) map[int64]bool {
	ss := m.snaps[b]
	keep := map[int64]bool{}
	for i := max(0, len(ss)-m.opts.Config.NumRetained); i < len(ss); i++ {
		keep[ss[i].ID] = true
	}
	for _, l := range m.leases {
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
// lease whose duration is not positive has expired at once).
func (m *Manager) Acquire(ctx context.Context, id string, durationMs int64, refs []Ref) ([]Ref, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	l := &lease{}
	if old, ok := m.leases[id]; ok {
		l.Buckets = slices.Clone(old.Buckets)
	}
	l.ExpiresMs = m.opts.Now().UnixMilli() + durationMs
	var unavailable []Ref
	for _, r := range refs {
		if !m.existsLocked(r) {
			unavailable = append(unavailable, r)
			continue
		}
		l.Buckets = slices.DeleteFunc(l.Buckets, func(o Ref) bool { return o.Bucket == r.Bucket })
		l.Buckets = append(l.Buckets, r)
	}
	if err := m.putLeaseLocked(ctx, id, l); err != nil {
		return nil, err
	}
	return unavailable, nil
}

func (m *Manager) existsLocked(r Ref) bool {
	for _, s := range m.snaps[r.Bucket] {
		if s.ID == r.ID {
			return true
		}
	}
	return false
}

// Release makes lease id stop holding the buckets' snapshots; a lease left empty is dropped.
// An unknown lease is not an error.
func (m *Manager) Release(ctx context.Context, id string, buckets []cluster.Bucket) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	old, ok := m.leases[id]
	if !ok {
		return nil
	}
	l := &lease{ExpiresMs: old.ExpiresMs, Buckets: slices.DeleteFunc(slices.Clone(old.Buckets), func(r Ref) bool {
		return slices.Contains(buckets, r.Bucket)
	})}
	if len(l.Buckets) == 0 {
		return m.dropLeaseLocked(ctx, id)
	}
	return m.putLeaseLocked(ctx, id, l)
}

// Drop removes lease id; an unknown lease is not an error.
func (m *Manager) Drop(ctx context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.leases[id]; !ok {
		return nil
	}
	return m.dropLeaseLocked(ctx, id)
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

func (m *Manager) putLeaseLocked(ctx context.Context, id string, l *lease) error {
	data, err := json.Marshal(l)
	if err != nil {
		return err
	}
	if _, err := m.opts.Meta.Txn(ctx, nil, []meta.Op{meta.Put(leasesPrefix+id, data)}); err != nil {
		return fmt.Errorf("kvsnap: record lease %s: %w", id, err)
	}
	m.leases[id] = l
	return nil
}

func (m *Manager) dropLeaseLocked(ctx context.Context, id string) error {
	if _, err := m.opts.Meta.Txn(ctx, nil, []meta.Op{meta.Delete(leasesPrefix + id)}); err != nil {
		return fmt.Errorf("kvsnap: drop lease %s: %w", id, err)
	}
	delete(m.leases, id)
	return nil
}

// Cleanup drops expired leases, then the snapshots that are neither retained nor leased (their
// metadata first, then their files that no kept snapshot shares), and everything of tables and
// partitions that no longer exist.
func (m *Manager) Cleanup(ctx context.Context) error {
	m.runMu.Lock()
	defer m.runMu.Unlock()
	now := m.opts.Now().UnixMilli()
	var errs []error
	m.mu.Lock()
	for id, l := range m.leases {
		if l.ExpiresMs <= now {
			if err := m.dropLeaseLocked(ctx, id); err != nil {
				errs = append(errs, err)
			}
		}
	}
	type drop struct {
		b       cluster.Bucket
		victims []*Snapshot
		kept    []*Snapshot
	}
	var drops []drop
	for b, ss := range m.snaps {
		gone := !m.exists(b)
		keep := m.keptLocked(b, now)
		d := drop{b: b}
		for _, s := range ss {
			if gone || !keep[s.ID] {
				d.victims = append(d.victims, s)
			} else {
				d.kept = append(d.kept, s)
			}
		}
		if len(d.victims) > 0 {
			drops = append(drops, d)
		}
	}
	m.mu.Unlock()
	for _, d := range drops {
		ops := make([]meta.Op, 0, len(d.victims))
		for _, s := range d.victims {
			ops = append(ops, meta.Delete(snapshotKey(d.b, s.ID)))
		}
		if _, err := m.opts.Meta.Txn(ctx, nil, ops); err != nil {
			errs = append(errs, fmt.Errorf("kvsnap: drop snapshots of %s: %w", d.b, err))
			continue
		}
		m.mu.Lock()
		if len(d.kept) == 0 {
			delete(m.snaps, d.b)
		} else {
			m.snaps[d.b] = d.kept
		}
		m.mu.Unlock()
		errs = append(errs, m.removeFiles(d.b, d.victims, d.kept))
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
func (m *Manager) removeFiles(b cluster.Bucket, victims, kept []*Snapshot) error {
	dir := m.bucketDir(b)
	if len(kept) == 0 {
		return os.RemoveAll(dir)
	}
	used := map[uint64]bool{}
	for _, s := range kept {
		for _, t := range s.Tables {
			used[t.Number] = true
		}
	}
	var errs []error
	for _, s := range victims {
		errs = append(errs, os.RemoveAll(filepath.Join(dir, snapDirName(s.ID))))
		for _, t := range s.Tables {
			if !used[t.Number] {
				if err := os.Remove(filepath.Join(dir, sharedDirName, tableName(t.Number))); err != nil && !errors.Is(err, os.ErrNotExist) {
					errs = append(errs, err)
				}
			}
		}
	}
	return errors.Join(errs...)
}
