package kvstore

import (
	"errors"
	"hash/maphash"
	"unsafe"

	"github.com/cockroachdb/pebble"
)

// stagedBatch is the state change of one PUT_KV bucket batch: the final value of every key the
// batch touched (nil: deleted), and the log end offset after its changelog. Only the final
// value per key matters because the batch is applied to Pebble as one atomic Pebble batch.
type stagedBatch struct {
	end    int64
	writes map[string][]byte
	// arena holds the bytes of the keys and values in writes; they are appended and never
	// modified, so the map's keys are strings viewing the arena (one allocation per batch
	// instead of two per record). A batch's arena is never reused: the pre-write buffer may
	// keep its keys and values after the batch is recycled.
	arena []byte
}

// keep copies b into the arena and returns the copy.
func (sb *stagedBatch) keep(b []byte) []byte {
	if cap(sb.arena)-len(sb.arena) < len(b) {
		// Grow into a new array; slices of the old one stay valid and unchanged.
		sb.arena = make([]byte, 0, max(2*cap(sb.arena), len(b), 4096))
	}
	off := len(sb.arena)
	sb.arena = append(sb.arena, b...)
	return sb.arena[off:len(sb.arena):len(sb.arena)]
}

// stateBatch is the view one Put reads and writes through while it computes a batch's
// changelog. Reads see, in order: the batch's own earlier writes (records of one batch see
// each other), the pre-write buffer (the tablet's queue of batches whose changelog is
// appended but not yet durable and applied, newest first), then Pebble. Writes go to the
// staged batch only; nothing is visible to other Puts until the batch's changelog append
// succeeds and the batch joins the queue.
//
// The pre-write buffer is the queue itself, searched batch by batch, rather than a map of
// its keys: a client that waits for each answer (pyfluss) stages every batch against an
// empty queue, and copying each key into such a map and deleting it after the apply was ~10%
// of the server's CPU (docs/benchmarks.md). A queue longer than maxQueueScan batches (many
// writers of one bucket, or the tail a new leader stages) is merged into one map per stage.
//
// A pending-write map and a plain DB.Get are used instead of a Pebble indexed batch: an
// indexed batch's Get builds a merged iterator over the batch, the memtables and every level
// for each key, which is much more expensive on the upsert hot path.
//
// Pebble is read in one of two ways, chosen per batch from the tablet's recent miss rate
// (missRate). Pebble's DB.Get never consults the bloom filters of the bottom level, where most
// of a table's keys live, so the read of a new key (a miss) loads and searches an L6 index and
// data block — half of the server's CPU in an upsert benchmark of new keys. An iterator with
// UseL6Filters answers such a miss from the filter, but a hit through it costs a seek of every
// level, where DB.Get stops at the first: updates of existing keys were 30–45% slower through
// the iterator. So inserts read through the iterator and updates through DB.Get. The iterator
// is a snapshot, which is exact here: it is created and used while the tablet's mu is held,
// and a batch being applied to Pebble stays in the queue (read first) until the applier takes
// mu to remove it.
type stateBatch struct {
	db            *pebble.DB
	lo, hi        []byte            // the bucket's data key range
	queue         []*stagedBatch    // the tablet's staged, unapplied batches, oldest first
	merged        map[string][]byte // the queue's latest value per key, when it is long; else nil
	mergedScratch map[string][]byte
	sb            *stagedBatch
	it            *pebble.Iterator // created at the first Pebble read when useIter
	// itSST reads the sstables only, for keys mem says no memtable holds (memkeys.go);
	// created at the first such read, after skipMem was decided.
	itSST   *pebble.Iterator
	mem     *memKeys
	skipMem bool
	rate    *missRate
	// rows is the store's row cache (nil: off), read before Pebble and filled from it with
	// entries of generation rowGen (rowcache.go); ck is scratch for an entry's key.
	rows   *rowCache
	rowGen uint64
	ck     []byte
	// live, when ready, answers that a key is new without Pebble (livekeys.go); absent
	// counts the reads it answered, which are in neither hits nor misses (the way Pebble is
	// read is chosen by the reads that reach it).
	live   *liveKeys
	absent int
	// useIter reads Pebble through an L6-filtered iterator (mostly misses) instead of DB.Get.
	useIter      bool
	hits, misses int
}

// missRate is a tablet's recent share of Pebble reads before writes that found no key: an
// exponentially weighted average over batches, guarded by the tablet's mu.
type missRate struct{ v float64 }

func (r *missRate) update(hits, misses int) {
	if n := hits + misses; n > 0 {
		r.v = 0.7*r.v + 0.3*float64(misses)/float64(n)
	}
}

// reset prepares the view for one batch. flushedSeq is the store's flushed sequence number,
// read before any iterator of this batch is created.
func (s *stateBatch) reset(db *pebble.DB, lo, hi []byte, queue []*stagedBatch, sb *stagedBatch, rate *missRate, mem *memKeys, flushedSeq uint64) {
	s.db, s.lo, s.hi, s.queue, s.sb, s.rate, s.mem = db, lo, hi, queue, sb, rate, mem
	s.merged = nil
	if len(queue) > maxQueueScan {
		if s.mergedScratch == nil {
			s.mergedScratch = make(map[string][]byte)
		}
		for _, q := range queue { // oldest first: later batches overwrite
			for k, v := range q.writes {
				s.mergedScratch[k] = v
			}
		}
		s.merged = s.mergedScratch
	}
	s.rows, s.rowGen, s.live, s.absent = nil, 0, nil, 0
	s.skipMem = mem != nil && mem.usable(flushedSeq)
	s.useIter = rate.v > 0.5
	s.hits, s.misses = 0, 0
}

// release closes the Pebble iterator and records the batch's misses; call it before mu is
// released.
func (s *stateBatch) release() {
	if s.it != nil {
		s.it.Close()
		s.it = nil
	}
	if s.itSST != nil {
		s.itSST.Close()
		s.itSST = nil
	}
	s.rate.update(s.hits, s.misses)
	if s.merged != nil {
		clear(s.merged) // keep no view of the queued batches' arenas
		s.merged = nil
	}
	s.queue = nil
}

// Set writes key=value into the batch. key and value are copied.
func (s *stateBatch) Set(key, value []byte, _ *pebble.WriteOptions) error {
	s.sb.writes[s.keyString(key)] = s.sb.keep(value)
	return nil
}

// Delete deletes key in the batch.
func (s *stateBatch) Delete(key []byte, _ *pebble.WriteOptions) error {
	s.sb.writes[s.keyString(key)] = nil
	return nil
}

// keyString returns key as a map key backed by the arena (no copy when the batch already
// wrote the key).
func (s *stateBatch) keyString(key []byte) string {
	k := s.sb.keep(key)
	return unsafe.String(unsafe.SliceData(k), len(k))
}

// get appends the current value of key to dst; found is false for a missing or deleted key.
func (s *stateBatch) get(dst, key []byte) ([]byte, bool, error) {
	if v, ok := s.sb.writes[string(key)]; ok {
		return append(dst, v...), v != nil, nil
	}
	if s.merged != nil {
		if v, ok := s.merged[string(key)]; ok {
			return append(dst, v...), v != nil, nil
		}
	} else {
		for i := len(s.queue) - 1; i >= 0; i-- {
			if v, ok := s.queue[i].writes[string(key)]; ok {
				return append(dst, v...), v != nil, nil
			}
		}
	}
	if s.live != nil && s.live.absent(maphash.Bytes(keyHashSeed, key)) {
		s.absent++
		return dst, false, nil
	}
	// The row cache answers hits only, so a batch that reads mostly new keys (useIter) skips
	// it: a miss in it cost 6% of the CPU of upserting new keys (BenchmarkPutNewKeys).
	cached := false
	if s.rows != nil {
		s.ck = entryKey(s.ck[:0], s.rowGen, key, len(s.lo))
		if !s.useIter {
			var v []byte
			if v, cached = s.rows.get(dst, s.ck); cached {
				dst = v
			}
		}
	}
	found, err := cached, error(nil)
	if !cached {
		n0 := len(dst)
		dst, found, err = s.read(dst, key)
		if err == nil && found && s.rows != nil {
			s.rows.set(s.ck, dst[n0:]) // s.ck is still key's entry: read does not touch it
		}
	}
	if err == nil {
		if found {
			s.hits++
		} else {
			s.misses++
		}
		if n := s.hits + s.misses; n%switchEvery == 0 {
			s.useIter = s.misses*2 > n
		}
	}
	return dst, found, err
}

// switchEvery is how many reads of one batch (from Pebble or the row cache) pass between checks of the batch's own
// miss rate. The tablet's recent miss rate picks the way a batch starts reading, but it lags
// by batches, and a client that sends few large batches (pyfluss: ~10k rows per bucket and
// request) would read its first batches of new keys through DB.Get; so a batch switches as
// soon as its own reads show the other way is cheaper.
const switchEvery = 256

func (s *stateBatch) read(dst, key []byte) ([]byte, bool, error) {
	if !s.useIter {
		v, closer, err := s.db.Get(key)
		if errors.Is(err, pebble.ErrNotFound) {
			return dst, false, nil
		}
		if err != nil {
			return dst, false, err
		}
		dst = append(dst, v...)
		closer.Close()
		return dst, true, nil
	}
	itp := &s.it
	if s.skipMem && !s.mem.mayBeInMemtable(maphash.Bytes(keyHashSeed, key)) {
		itp = &s.itSST
	}
	if *itp == nil {
		it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: s.lo, UpperBound: s.hi, UseL6Filters: true,
			OnlyReadGuaranteedDurable: itp == &s.itSST})
		if err != nil {
			return dst, false, err
		}
		*itp = it
	}
	it := *itp
	// The whole key is the prefix (store.go's comparer), so a hit is exactly key.
	if it.SeekPrefixGE(key) {
		v, err := it.ValueAndErr()
		if err != nil {
			return dst, false, err
		}
		return append(dst, v...), true, nil
	}
	return dst, false, it.Error()
}

// maxQueueScan is the longest pre-write queue a stage searches batch by batch.
const maxQueueScan = 8

// bytesOf views s as bytes without copying; the result must not be modified or kept. Pebble's
// Batch.Set and Delete copy their arguments, so it is safe to hand them these views.
func bytesOf(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }
