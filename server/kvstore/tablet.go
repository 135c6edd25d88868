package kvstore

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/pebble"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/row"
	"github.com/stromdb/strom/server/cluster"
	"github.com/stromdb/strom/server/logstore"
)

// Tablet is the primary-key state of one bucket, kept in the Store's Pebble instance under
// the bucket's key prefix, with the bucket's log as its changelog and write-ahead log.
//
// Invariants:
//   - Writes are staged one at a time (mu), in the order PutStaged is called; each computes its
//     changelog against Pebble plus the pre-write buffer plus the earlier records of the same
//     batch, and appends the changelog to the log before anything of it becomes visible to
//     other writes. A failed or duplicate append publishes nothing.
//   - Pebble receives a batch only after its changelog is durable (pipeline.go), together with
//     the new applied offset.
//   - Readers (Lookup, PrefixLookup, LimitScan) see exactly the writes whose changelog is
//     durable and applied; every acknowledged write is among them. Lookup reads the row
//     cache first and Pebble on a miss (rowcache.go, "Lookups"); the others read Pebble.
//   - applied is the log offset up to which Pebble reflects the changelog; the offsets between
//     applied and the log end belong to batches in queue (staged, not yet applied).
type Tablet struct {
	store  *Store
	bucket cluster.Bucket
	log    *logstore.Log
	tbl    *compiled
	prefix []byte // data key prefix
	hi     []byte // end of the data key range
	meta   []byte // meta key

	applied atomic.Int64

	// offline, when set, is the error every request gets (see repair.go); rebuilding is
	// true while a rebuild after Pebble corruption is pending or running.
	offline    atomic.Pointer[error]
	rebuilding atomic.Bool

	mu       sync.Mutex
	failed   error // set when a staged changelog could not be made durable or applied
	w        writeScratch
	batch    stateBatch     // reused by stage; guarded by mu
	queue    []*stagedBatch // staged batches not yet applied, in offset order; guarded by mu
	missRate missRate       // recent misses of reads before writes (statebatch.go); guarded by mu
	mem      memKeys        // keys that may be in Pebble's memtables (memkeys.go); guarded by mu
	live     liveKeys       // keys the bucket may hold (livekeys.go); guarded by mu
	rowGen   atomic.Uint64  // generation of the tablet's row cache entries (rowcache.go); changed under mu, read by lookups without it
	seq      sequence       // the range of auto-increment ids this tablet hands out (autoinc.go); guarded by mu

	applyMu sync.Mutex // one applier at a time, so batches reach Pebble in order

	// The parts of the tablet by concern (tablet_parts.go).
	pipe pipeline
	rows rowWriter
	rec  recovery

	// Replication roles (replica.go). role and fence change under applyMu and mu; term
	// counts BecomeFollower calls so that a waiter staged in an earlier leadership fails.
	role  role
	term  atomic.Int64
	fence chan struct{} // closed by BecomeFollower; guarded by mu

	// testHookAfterAppend, when set, runs after the changelog is durable and before the
	// Pebble commit; returning an error simulates a crash between the two.
	testHookAfterAppend func() error
}

// OpenTablet opens the state of bucket b, whose changelog is log, and brings it to the log
// end offset by replaying the changelog from the stored applied offset (recovery after a
// restart or crash). The Tablet is registered for Checkpoint.
func (s *Store) OpenTablet(ctx context.Context, b cluster.Bucket, t Table, log *logstore.Log) (*Tablet, error) {
	c, err := compile(t)
	if err != nil {
		return nil, err
	}
	cl, err := newChangelog(c)
	if err != nil {
		return nil, err
	}
	lo, hi := bucketRange(b)
	tb := &Tablet{store: s, bucket: b, log: log, tbl: c, prefix: lo, hi: hi, meta: bucketKey(tagMeta, b),
		fence: make(chan struct{}), seq: sequence{next: 1, end: 0}, live: liveKeys{built: make(chan struct{})}}
	tb.w.cl = cl
	tb.pipe.t, tb.rows.t, tb.rec.t = tb, tb, tb
	if err := tb.rec.recover(ctx); err != nil {
		return nil, err
	}
	// Whatever an earlier holder of the bucket (or the replay above) left in the memtables is
	// not in tb.mem: the filters wait for a flush past this point.
	tb.mem.untracked(tb.seqFence())
	tb.forgetRows() // whatever is cached under an earlier generation may be stale
	// Pebble holds the changelog's effect up to applied: the log must never lose it.
	log.Replica().SetTruncateFloor(tb.AppliedOffset)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errors.New("kvstore: store closed")
	}
	s.tablets[b] = tb
	s.builds.Add(1)
	go s.buildLiveKeys(tb)
	return tb, nil
}

// seqFence commits a write of the store's fence key (tagFence, read by nothing) and returns
// its Pebble sequence number, which is above that of every write committed before it; when
// the commit fails, a number no flush reaches.
func (t *Tablet) seqFence() uint64 {
	b := t.store.db.NewBatch()
	defer b.Close()
	if err := b.Set([]byte{tagFence}, nil, nil); err != nil {
		return math.MaxUint64
	}
	if err := b.Commit(pebble.NoSync); err != nil {
		return math.MaxUint64
	}
	return b.SeqNum()
}

// Bucket returns the bucket the tablet stores.
func (t *Tablet) Bucket() cluster.Bucket { return t.bucket }

// AppliedOffset returns the log offset up to which the state reflects the changelog.
func (t *Tablet) AppliedOffset() int64 { return t.applied.Load() }

// Close unregisters the tablet; its state stays in the store.
func (t *Tablet) Close() {
	t.store.mu.Lock()
	if t.store.tablets[t.bucket] == t {
		delete(t.store.tablets, t.bucket)
		t.store.scheduleRowSweep() // its row cache entries are unreachable from now on
	}
	t.store.mu.Unlock()
}

// Drop deletes the tablet's state. It waits for a stage and an apply in progress (which hold
// mu and applyMu) and makes later ones fail, so no write lands under the prefix after it is
// deleted.
func (t *Tablet) Drop() error {
	t.applyMu.Lock()
	t.mu.Lock()
	t.failed = ferr.New(ferr.UnknownTableOrBucketException, "%s was dropped", t.bucket)
	t.mu.Unlock()
	t.applyMu.Unlock()
	t.Close()
	return dropBucket(t.store.db, t.bucket)
}

func (t *Tablet) dataKey(dst, key []byte) []byte {
	dst = append(dst[:0], t.prefix...)
	return append(dst, key...)
}

func (t *Tablet) readApplied() (int64, error) {
	v, closer, err := t.store.db.Get(t.meta)
	if errors.Is(err, pebble.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("kvstore: read applied offset of %s: %w", t.bucket, err)
	}
	defer closer.Close()
	if len(v) != 8 {
		return 0, fmt.Errorf("kvstore: applied offset of %s has %d bytes", t.bucket, len(v))
	}
	return int64(binary.BigEndian.Uint64(v)), nil
}

func appendOffset(dst []byte, off int64) []byte {
	return binary.BigEndian.AppendUint64(dst, uint64(off))
}

// Lookup reads the stored value ([int16 schema id][row]) of each key, in order, into out
// (nil for a missing key). The values share one freshly allocated buffer.
func (t *Tablet) Lookup(keys [][]byte, out [][]byte) ([][]byte, error) {
	if err := t.offlineError(); err != nil {
		return nil, err
	}
	out = out[:0]
	var kbuf, ck []byte
	var slab []byte
	offs := make([]int, 0, 2*len(keys))
	rows, gen := t.store.rows, t.rowGen.Load()
	for _, k := range keys {
		kbuf = t.dataKey(kbuf, k)
		if rows != nil {
			// A cached entry is the key's committed value (rowcache.go, "Lookups").
			ck = entryKey(ck[:0], gen, kbuf, len(t.prefix))
			n0 := len(slab)
			if v, ok := rows.get(slab, ck); ok {
				slab = v
				offs = append(offs, n0, len(slab))
				continue
			}
		}
		v, closer, err := t.store.db.Get(kbuf)
		if errors.Is(err, pebble.ErrNotFound) {
			offs = append(offs, -1, -1)
			continue
		}
		if err != nil {
			return nil, t.storageError("lookup", err)
		}
		offs = append(offs, len(slab), len(slab)+len(v))
		slab = append(slab, v...)
		closer.Close()
	}
	for i := 0; i < len(offs); i += 2 {
		if offs[i] < 0 {
			out = append(out, nil)
			continue
		}
		out = append(out, slab[offs[i]:offs[i+1]:offs[i+1]])
	}
	return out, nil
}

// PrefixLookup returns, for each prefix in order, the values of all keys starting with it,
// in key order.
func (t *Tablet) PrefixLookup(prefixes [][]byte) ([][][]byte, error) {
	if err := t.offlineError(); err != nil {
		return nil, err
	}
	out := make([][][]byte, len(prefixes))
	var lo, hi []byte
	for i, p := range prefixes {
		lo = t.dataKey(lo, p)
		hi = row.PrefixUpperBound(hi, lo)
		if hi == nil {
			hi = t.hi
		}
		it, err := t.store.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
		if err != nil {
			return nil, t.storageError("prefix lookup", err)
		}
		var vals [][]byte
		for ok := it.First(); ok; ok = it.Next() {
			vals = append(vals, append([]byte(nil), it.Value()...))
		}
		err = errors.Join(it.Error(), it.Close())
		if err != nil {
			return nil, t.storageError("prefix lookup", err)
		}
		out[i] = vals
	}
	return out, nil
}

// LimitScan appends to dst a value record batch (docs/encodings.md §11, Java DefaultValueRecordBatch)
// holding the first limit values of the bucket in key order:
//
//	int32 Length (= total - 4) | int8 magic 0 | int32 RecordCount | records
//	record: int32 Length (= len(value)) | value ([int16 schema id][row])
func (t *Tablet) LimitScan(dst []byte, limit int) ([]byte, error) {
	if err := t.offlineError(); err != nil {
		return dst, err
	}
	start := len(dst)
	dst = append(dst, make([]byte, 9)...)
	it, err := t.store.db.NewIter(&pebble.IterOptions{LowerBound: t.prefix, UpperBound: t.hi})
	if err != nil {
		return dst[:start], t.storageError("limit scan", err)
	}
	n := 0
	for ok := it.First(); ok && n < limit; ok = it.Next() {
		v := it.Value()
		dst = binary.LittleEndian.AppendUint32(dst, uint32(len(v)))
		dst = append(dst, v...)
		n++
	}
	if err := errors.Join(it.Error(), it.Close()); err != nil {
		return dst[:start], t.storageError("limit scan", err)
	}
	b := dst[start:]
	binary.LittleEndian.PutUint32(b, uint32(len(b)-4))
	b[4] = 0
	binary.LittleEndian.PutUint32(b[5:], uint32(n))
	return dst, nil
}

// SetTable applies an altered table (a new schema version or new options) to the tablet:
// later writes merge and emit changelog rows under t's latest schema; values stored under
// older schemas are padded to it when read. Writes in progress finish under the old table.
func (t *Tablet) SetTable(tbl Table) error {
	c, err := compile(tbl)
	if err != nil {
		return err
	}
	cl, err := newChangelog(c)
	if err != nil {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.tbl = c
	t.w.cl = cl
	return nil
}

// RowCount returns the number of live keys of the bucket. It counts the committed state, so
// it costs a scan of the bucket's key range.
func (t *Tablet) RowCount() (int64, error) {
	it, err := t.store.db.NewIter(&pebble.IterOptions{LowerBound: t.prefix, UpperBound: t.hi})
	if err != nil {
		return 0, ferr.New(ferr.KvStorageException, "row count of %s: %v", t.bucket, err)
	}
	var n int64
	for ok := it.First(); ok; ok = it.Next() {
		n++
	}
	if err := errors.Join(it.Error(), it.Close()); err != nil {
		return 0, ferr.New(ferr.KvStorageException, "row count of %s: %v", t.bucket, err)
	}
	return n, nil
}
