package kvstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/bloom"
	"github.com/cockroachdb/pebble/vfs"

	"github.com/stromdb/strom/server/cluster"
	"github.com/stromdb/strom/server/logstore"
	"github.com/stromdb/strom/server/pebblefs"
)

// Keyspace: one Pebble instance holds every bucket of the server.
//
//	data:  'd' | table id uint64 BE | partition id + 1 uint64 BE | bucket uint32 BE | key
//	meta:  'm' | table id uint64 BE | partition id + 1 uint64 BE | bucket uint32 BE
//	fence: 'f' (one key, empty value: written only for its sequence number, memkeys.go)
//
// The partition id is stored plus one so that non-partitioned tables (-1) sort first. Data
// and meta keys have distinct first bytes, so a scan of a bucket's data range never meets a
// meta key. The meta value is the bucket's applied offset as int64 BE: every changelog batch
// below it is reflected in the data keys, and nothing at or above it is. Data and meta are
// always written in the same Pebble batch, so the invariant holds for whatever subset of
// batches survives a crash.
const (
	tagData   = 'd'
	tagMeta   = 'm'
	tagFence  = 'f' // one key, rewritten to obtain a Pebble sequence number (Tablet.seqFence)
	bucketLen = 1 + 8 + 8 + 4
)

func bucketKey(tag byte, b cluster.Bucket) []byte {
	k := make([]byte, bucketLen, bucketLen+16)
	k[0] = tag
	binary.BigEndian.PutUint64(k[1:], uint64(b.TableID))
	binary.BigEndian.PutUint64(k[9:], uint64(b.PartitionID+1))
	binary.BigEndian.PutUint32(k[17:], uint32(b.Bucket))
	return k
}

// Options configure a Store.
type Options struct {
	// CacheBytes is the block cache shared by all buckets (default 32 MiB: docs/benchmarks.md, "Resident memory: who holds it").
	CacheBytes int64
	// RowCacheBytes is the row cache of the reads before writes, shared by all buckets
	// (rowcache.go): 0 means the default (defaultRowCacheBytes), negative turns it off.
	RowCacheBytes int64
	// MemTableBytes is the size of one Pebble memtable (default memTableBytes); the server
	// sets it from kv.rocksdb.writebuffer.size.
	MemTableBytes int64
	// Logger receives Pebble's messages and recovery notes; nil means slog.Default().
	Logger *slog.Logger
	// Sequences hands out the ids of auto-increment columns (autoinc.go); without it, an
	// insert into a table with such a column fails.
	Sequences SequenceSource

	// tunePebble, when set, adjusts the Pebble options last: the benchmarks that chose them
	// (pebbletune_bench_test.go) compare alternatives with it.
	tunePebble func(*pebble.Options)
}

// Store is the server's Pebble instance. Pebble's own WAL is disabled: each bucket's
// changelog is its write-ahead log, and Tablet recovery replays it from the applied offset.
// What Pebble loses in a crash (unflushed memtables) is therefore always re-derivable.
type Store struct {
	db       *pebble.DB
	dir      string
	log      *slog.Logger
	repairMu sync.Mutex // one corruption repair at a time (pebblerepair.go)
	bg       *backgroundErrors

	// flushedSeq is the largest Pebble sequence number a finished flush wrote to an sstable:
	// every write at or below it is in sstables (Pebble flushes memtables in commit order).
	// flushes counts finished flushes. Both only grow (memkeys.go).
	flushedSeq atomic.Uint64
	flushes    atomic.Uint64

	seqs    SequenceSource // nil: no auto-increment ids
	rows    *rowCache      // nil when turned off
	rowGens atomic.Uint64  // the last generation handed to a tablet (rowcache.go)

	// builds counts the live-key scans running (livekeys.go); Close closes stopBuilds and
	// waits for them before it closes Pebble.
	builds     sync.WaitGroup
	stopBuilds chan struct{}

	mu              sync.Mutex
	tablets         map[cluster.Bucket]*Tablet
	closed          bool
	rowSweepPending bool // a row cache sweep is scheduled and has not read the tablets yet (rowcache.go)

	sweepMu    sync.Mutex   // one row cache sweep at a time (rowcache.go)
	lastSweep  atomic.Int64 // when the last sweep started, Unix nanoseconds
	lastFreeOS time.Time    // the last sweep's debug.FreeOSMemory; guarded by sweepMu
}

// Open opens (creating if needed) the Pebble store in dir.
func Open(dir string, opts Options) (*Store, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.CacheBytes <= 0 {
		opts.CacheBytes = 32 << 20
	}
	if opts.MemTableBytes <= 0 {
		opts.MemTableBytes = memTableBytes
	}
	// Pebble charges every memtable it allocates to the block cache (Cache.Reserve): a cache
	// of CacheBytes would hold CacheBytes minus up to two memtables of blocks (half of the
	// default 32 MiB). The memtables get their own share, so that CacheBytes is the block
	// cache, as kv.rocksdb.block.cache-size is in Fluss, whose RocksDB write buffers are
	// separate memory too.
	if err := checkDirFormat(dir); err != nil {
		return nil, err
	}
	cache := pebble.NewCache(opts.CacheBytes + 2*opts.MemTableBytes)
	defer cache.Unref()
	if opts.RowCacheBytes == 0 {
		opts.RowCacheBytes = defaultRowCacheBytes
	}
	rows, err := newRowCache(opts.RowCacheBytes)
	if err != nil {
		return nil, err
	}
	s := &Store{dir: dir, log: opts.Logger, bg: newBackgroundErrors(opts.Logger), tablets: map[cluster.Bucket]*Tablet{},
		rows: rows, seqs: opts.Sequences, stopBuilds: make(chan struct{})}
	po := pebbleOptions(cache, opts)
	if opts.tunePebble != nil {
		opts.tunePebble(po)
	}
	// Pebble's files go through the same disk watch and fault rules as the segment files.
	po.FS = pebblefs.Wrap(po.FS, opts.Logger)
	po.EventListener = s.bg.listener() // failed flushes: backoff and one ERROR line (diskfull.go)
	po.EventListener.FlushBegin = func(pebble.FlushInfo) { s.syncLogs() }
	onFlushEnd := po.EventListener.FlushEnd
	po.EventListener.FlushEnd = func(info pebble.FlushInfo) {
		s.noteFlush(info) // Pebble calls FlushEnd after new iterators see the flushed tables
		if onFlushEnd != nil {
			onFlushEnd(info)
		}
	}
	db, err := pebble.Open(dir, po)
	if err != nil {
		if rows != nil {
			rows.close()
		}
		return nil, fmt.Errorf("kvstore: open pebble in %s: %w", dir, err)
	}
	s.db = db
	return s, nil
}

// noteFlush records a finished flush's largest sequence number.
func (s *Store) noteFlush(info pebble.FlushInfo) {
	if info.Err != nil {
		return
	}
	for _, o := range info.Output {
		for {
			cur := s.flushedSeq.Load()
			if o.LargestSeqNum <= cur || s.flushedSeq.CompareAndSwap(cur, o.LargestSeqNum) {
				break
			}
		}
	}
	s.flushes.Add(1)
}

// l0CompactionThreshold and l0StopWritesThreshold are the L0 file counts at which Pebble
// compacts L0 and stops writes (pebbleOptions says why they are above Pebble's defaults).
const (
	l0CompactionThreshold = 16
	l0StopWritesThreshold = 32
)

// memTableBytes is the default size of one Pebble memtable (kv.rocksdb.writebuffer.size's
// default must match it). Pebble keeps up to two (one filling, one flushing), so the
// primary-key state's write buffer is at most twice this. 64 MiB, Fluss's default, was
// cheaper per update at 1M keys in two of three paired runs (0.69–1.16×) and costs ~115 MiB
// more RSS (docs/benchmarks.md, "Pebble options at 1M and 10M keys"), so the default stays.
const memTableBytes = 8 << 20

// pebbleOptions tunes Pebble for the primary-key path (docs/benchmarks-history.md, "What pyfluss sends,
// and where Strom spent the time"):
//   - Bloom filters on every level. Every upsert reads the current value of its key before it
//     writes (merge engines, -U/+U images); for a new key that read misses, and without filters
//     a miss seeks into an sstable of every level. With 10 bits per key a miss costs a memtable
//     probe and a filter check per file (1% false positives). DB.Get skips the filters of the
//     bottom level, so the read before a write goes through an iterator that uses them
//     (statebatch.go).
//   - 8 MiB memtables (Pebble's default is 4 MiB). The read-before-write probes the memtable
//     skiplist for every key, and those probes are cache misses that grow with its size: CPU
//     per upserted row was lowest at 4–8 MiB and a third higher at 32 MiB (BenchmarkPutNewKeys,
//     user CPU of 400k new keys: 2 MiB 3.3–3.5 s, 4 MiB 2.8–3.2 s, 8 MiB 2.6–2.9 s, 32 MiB
//     3.8–4.2 s). Larger memtables make updates of existing keys cheaper (the table then lives
//     in memory, as it does in Fluss's 64 MiB per-bucket RocksDB write buffers) but new keys
//     dearer, because every miss probes a bigger skiplist; see docs/benchmarks.md
//     ("Updates of existing keys: profile and Pebble settings") for the measurements.
//   - No block compression. Reads before writes that miss the block cache decompress a
//     block each (13% of CPU in BenchmarkUpdateLarge, plus 6% compressing in flushes and
//     compactions); rows are compacted binary with short strings, so Snappy saved only ~15%
//     of the state's disk space. Without it updates of existing keys took 15% less CPU per
//     row. Stores written with compression stay readable (compression is per block).
//   - L0 compactions at 16 files (Pebble's default: 4), writes stopped at 32 (12). Compactions
//     were the largest cost of every write workload once the reads before writes were answered
//     from memory; fewer, larger L0→Lbase compactions rewrite each key less often. In paired
//     runs at the shape of `make bench-fluss` the server spent 0.83× the CPU per new key,
//     0.80× per update and 0.91× per lookup; lookups that miss the row cache search more L0
//     files (BenchmarkSteadyState: +13–32% per lookup there). Block size and compaction
//     concurrency measured within the noise. The measurements:
//     docs/benchmarks.md, "The primary-key path at steady state".
//   - sstables written through coalescingFS (sstwrite.go): one write(2) per 256 KiB of a flush
//     or compaction instead of one per 4 KiB block. Same measurements.
func pebbleOptions(cache *pebble.Cache, opts Options) *pebble.Options {
	levels := make([]pebble.LevelOptions, 7)
	for i := range levels {
		levels[i].FilterPolicy = bloom.FilterPolicy(10)
		levels[i].FilterType = pebble.TableFilter
		levels[i].Compression = pebble.NoCompression
	}
	// Keys have no version suffix: the whole key is the prefix the bloom filters hold (what
	// Pebble does without a Split), but SeekPrefixGE needs Split to be set. The comparer keeps
	// the default name and order, so stores written before stay readable.
	cmp := *pebble.DefaultComparer
	cmp.Split = func(key []byte) int { return len(key) }
	return &pebble.Options{
		Comparer:     &cmp,
		DisableWAL:   true,
		FS:           coalescingFS{vfs.Default}, // sstable writes in 256 KiB, not 4 KiB (sstwrite.go)
		Cache:        cache,
		Logger:       pebbleLogger{opts.Logger},
		MemTableSize: uint64(opts.MemTableBytes),
		Levels:       levels,
		// Virtual tables let a corrupt table file be excised (pebblerepair.go).
		FormatMajorVersion:    pebble.FormatVirtualSSTables,
		L0CompactionThreshold: l0CompactionThreshold,
		L0StopWritesThreshold: l0StopWritesThreshold,
	}
}

// syncLogs fdatasyncs the changelog of every open bucket. Pebble calls it when a flush begins,
// before the flush writes anything (pebble.EventListener.FlushBegin): a memtable holds only
// state whose changelog bytes were written before it was applied, so after this sync every
// changelog entry that the flushed state reflects is durable. That keeps the invariant
// recovery depends on under every flush policy — Pebble's durable state never runs ahead of
// the durable changelog — including with log.flush.interval, where state is applied before
// its changelog is synced, and for the flushes Pebble starts by itself when a memtable fills.
// Pebble holds its mutex while it calls this, so commits wait for the sync; under the default
// policy the logs are already synced and it costs a lock per bucket.
func (s *Store) syncLogs() {
	s.mu.Lock()
	logs := make([]*logstore.Log, 0, len(s.tablets))
	for _, t := range s.tablets {
		logs = append(logs, t.log)
	}
	s.mu.Unlock()
	for _, l := range logs {
		if !l.Unsynced() {
			continue
		}
		if err := l.Flush(); err != nil && !errors.Is(err, logstore.ErrClosed) {
			// The flush cannot be stopped from here. If the machine then loses power, recovery
			// finds the state ahead of the log and takes the bucket's state offline (repair.go).
			s.log.Error("kvstore: changelog sync before a Pebble flush failed", "dir", l.Dir(), "err", err)
		}
	}
}

// Checkpoint flushes Pebble's memtables and then lets each open bucket's changelog drop
// segments below the offset that is now durable in Pebble (logstore.Retention.SetMinRetainOffset).
// Run it periodically: until it runs, recovery may need the whole changelog tail.
func (s *Store) Checkpoint() error {
	s.mu.Lock()
	ts := make([]*Tablet, 0, len(s.tablets))
	for _, t := range s.tablets {
		ts = append(ts, t)
	}
	s.mu.Unlock()
	applied := make([]int64, len(ts))
	for i, t := range ts {
		applied[i] = t.AppliedOffset()
	}
	if err := s.flushWithin(checkpointFlushWait); err != nil {
		return fmt.Errorf("kvstore: flush: %w", err)
	}
	for i, t := range ts {
		t.log.Retention().SetMinRetainOffset(applied[i])
	}
	return nil
}

// Close flushes and closes the store. Tablets must not be used afterwards.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.tablets = map[cluster.Bucket]*Tablet{}
	s.mu.Unlock()
	close(s.stopBuilds)
	s.builds.Wait()
	if s.rows != nil {
		s.rows.close() // its mappings are returned to the system
	}
	// A flush that cannot finish (full disk) is given up: the changelogs restore its data.
	return errors.Join(s.flushWithin(closeFlushWait), s.db.Close())
}

// DropBucket deletes every key of bucket b (its data and applied offset). The bucket's tablet,
// if open, must not be used afterwards.
func (s *Store) DropBucket(b cluster.Bucket) error {
	s.mu.Lock()
	if _, open := s.tablets[b]; open {
		delete(s.tablets, b)
		s.scheduleRowSweep()
	}
	s.mu.Unlock()
	return dropBucket(s.db, b)
}

func dropBucket(db *pebble.DB, b cluster.Bucket) error {
	_, err := dropBucketSeq(db, b)
	return err
}

// dropBucketSeq deletes the bucket's keys and returns the Pebble sequence number at or above
// which the deletion was committed.
func dropBucketSeq(db *pebble.DB, b cluster.Bucket) (uint64, error) {
	lo, hi := bucketRange(b)
	batch := db.NewBatch()
	defer batch.Close()
	if err := batch.DeleteRange(lo, hi, nil); err != nil {
		return 0, err
	}
	if err := batch.Delete(bucketKey(tagMeta, b), nil); err != nil {
		return 0, err
	}
	if err := batch.Commit(pebble.NoSync); err != nil {
		return 0, fmt.Errorf("kvstore: drop %s: %w", b, err)
	}
	return batch.SeqNum() + uint64(batch.Count()), nil
}

// bucketRange returns the data key range [lo, hi) of bucket b.
func bucketRange(b cluster.Bucket) (lo, hi []byte) {
	lo = bucketKey(tagData, b)
	hi = make([]byte, len(lo))
	copy(hi, lo)
	for i := len(hi) - 1; i >= 0; i-- {
		hi[i]++
		if hi[i] != 0 {
			break
		}
	}
	return lo, hi
}

// pebbleLogger routes Pebble's messages to slog at debug level (its info lines are chatty).
type pebbleLogger struct{ l *slog.Logger }

func (p pebbleLogger) Infof(format string, args ...any) {
	p.l.Debug(fmt.Sprintf(format, args...), "component", "pebble")
}

func (p pebbleLogger) Errorf(format string, args ...any) {
	p.l.Error(fmt.Sprintf(format, args...), "component", "pebble")
}

func (p pebbleLogger) Fatalf(format string, args ...any) {
	p.l.Error(fmt.Sprintf(format, args...), "component", "pebble", "fatal", true)
	os.Exit(1) // Pebble's contract: Fatalf does not return (its default logger exits too)
}
