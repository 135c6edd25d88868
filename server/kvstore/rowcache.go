package kvstore

import (
	"encoding/binary"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/stromdb/strom/internal/rowcache"
)

// rowCache holds the stored value of recently written and read keys, so that the read before
// a write of an existing key skips Pebble. In an update of existing keys that read was half of
// the server's CPU: the keys had just been flushed and compacted into new sstables whose blocks
// were not in the block cache, so each read searched the levels and loaded a block with a
// pread (docs/benchmarks.md, the section "…updates of existing keys, a row cache"). The cache
// (internal/rowcache) lives outside the Go heap, rows and index, so its size does not weigh on
// the garbage collector; it rewrites a row whose new value is no larger in place, so its
// resident size follows the rows cached, not the writes (kv.row-cache-size bounds it).
//
// An entry is the tablet's generation (a uvarint: prefix-free, so generation and key never
// run into each other) followed by the key without the bucket prefix. Invariants:
//   - An entry under a tablet's current generation holds the key's value in Pebble. Entries
//     are written by the applier right after its commit to Pebble succeeded, before the batch
//     leaves the pre-write buffer (fillRows), and by a stage (under mu) that read the value
//     from Pebble. A stage reads a key from the cache or Pebble only when no queued batch
//     holds it, and only queued keys are being committed, so the two never race for a key.
//   - Every other write to the bucket's keys (recovery and a follower's replay, a rebuild after
//     corruption, whatever happened before the tablet was opened) comes with a new generation
//     (Tablet.forgetRows, under mu, before the write reaches Pebble), which makes every older
//     entry unreachable. The applier writes under the generation it read with its batches, so
//     what an apply that raced with such a write leaves in the cache is unreachable too.
//   - A deleted key, or a value too large for an entry, is removed instead of written.
//   - Removing an entry is always allowed (it only sends a read to Pebble), which is what makes
//     eviction and the sweep below safe without coordinating with the tablets.
//
// # Releasing the rows of closed tablets
//
// A tablet that closes (its table dropped, its bucket moved away) leaves its entries behind
// under a generation no tablet reads again, and a ring cache reclaims them only when new
// writes come round. So that a server whose tables were dropped does not keep their rows
// resident, every close schedules a sweep (Store.scheduleRowSweep): after sweepDelay, which
// lets the closes of one table's buckets share it, the cache's entries whose generation
// belongs to no open tablet are removed, and every shard left empty gives its pages back
// (rowcache.Cache.Sweep). The generations are read under Store.mu; one handed out after that
// read is newer than any seen and is kept, and one that is missed only costs its entries.

// # Lookups
//
// Tablet.Lookup reads the cache first and Pebble on a miss; it never writes the cache (a
// value it read from Pebble could be overtaken by an apply before it was written, leaving an
// older value cached than Pebble holds). What a lookup answers from the cache is therefore
// exactly what it would have read from Pebble at some moment during the lookup:
//   - Never a value that is not durable: entries come only from Pebble reads and from
//     applies, and the applier commits only batches whose changelog is durable (below the
//     high watermark), after the commit succeeded.
//   - Never older than an acknowledged write of the key: the write is acknowledged after its
//     apply returned, so by then its entry was written (or the key's entry removed: a delete,
//     a value too large); a later write of the key only replaces the entry with a newer value,
//     and eviction only sends the lookup to Pebble, which holds the write already.
//   - Never older than a value an earlier lookup returned: an entry is written after Pebble
//     holds its value, so a lookup that misses the cache afterwards reads that value or a
//     newer one from Pebble. A write that bypasses the cache takes a new generation before it
//     reaches Pebble, so no entry older than it is found afterwards.
type rowCache struct {
	c *rowcache.Cache
}

// rowCacheMaxEntry is the largest entry the cache stores (key, value and header); a larger
// value removes the key's entry (rowcache.Cache.Set), so no older value is left behind.
const rowCacheMaxEntry = rowcache.MaxEntry

// defaultRowCacheBytes is the row cache's budget unless configured (kv.row-cache-size).
const defaultRowCacheBytes = 128 << 20

// minRowCacheBytes is the smallest budget the cache takes; smaller ones are raised to it.
const minRowCacheBytes = 256 << 10

// newRowCache returns a row cache of bytes, nil when bytes ≤ 0 (turned off).
func newRowCache(bytes int64) (*rowCache, error) {
	if bytes <= 0 {
		return nil, nil
	}
	c, err := rowcache.New(max(bytes, minRowCacheBytes))
	if err != nil {
		return nil, fmt.Errorf("kvstore: row cache: %w", err)
	}
	return &rowCache{c: c}, nil
}

// entryKey appends the cache key of data key k (with the bucket prefix of length plen) of
// generation gen to dst.
func entryKey(dst []byte, gen uint64, k []byte, plen int) []byte {
	dst = binary.AppendUvarint(dst, gen)
	return append(dst, k[plen:]...)
}

// get appends the cached value of ck to dst; ok is false when the cache has none.
func (r *rowCache) get(dst, ck []byte) ([]byte, bool) {
	return r.c.Get(dst, ck)
}

// set records v as the stored value of ck; v nil means deleted.
func (r *rowCache) set(ck, v []byte) {
	if v == nil {
		r.c.Del(ck)
		return
	}
	r.c.Set(ck, v) // a value too large for an entry removes ck's entry
}

// close releases the cache's memory; gets afterwards miss.
func (r *rowCache) close() { r.c.Close() }

// sweepDelay is how long a sweep waits after the close that scheduled it, so that the closes
// of one table's buckets (a drop closes them one by one) share one walk of the cache, and
// sweepEvery is the least time between the starts of two sweeps, so that many closes in a row
// (a failover moving thousands of buckets) walk the cache at most once a second.
const (
	sweepDelay = 250 * time.Millisecond
	sweepEvery = time.Second
)

// freeOSMemoryEvery bounds how often a sweep that released rows also returns the Go heap's
// free pages to the system (debug.FreeOSMemory, a forced collection): what the closed tablets
// held on the Go heap (their key filters, buffers) is then given back with their rows instead
// of when the scavenger comes to it.
const freeOSMemoryEvery = time.Minute

// scheduleRowSweep starts a sweep of the row cache unless one is already waiting. Caller
// holds s.mu.
func (s *Store) scheduleRowSweep() {
	if s.rows == nil || s.closed || s.rowSweepPending {
		return
	}
	s.rowSweepPending = true
	s.builds.Add(1)
	go func() {
		defer s.builds.Done()
		wait := sweepDelay
		if next := time.Unix(0, s.lastSweep.Load()).Add(sweepEvery); time.Until(next) > wait {
			wait = time.Until(next)
		}
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-t.C:
		case <-s.stopBuilds:
			return
		}
		s.sweepMu.Lock()
		defer s.sweepMu.Unlock()
		s.lastSweep.Store(time.Now().UnixNano())
		if released := s.sweepRows(); released > 0 {
			s.log.Debug("kvstore: row cache released the rows of closed tablets", "bytes", released)
			if now := time.Now(); now.Sub(s.lastFreeOS) >= freeOSMemoryEvery {
				s.lastFreeOS = now
				debug.FreeOSMemory()
			}
		}
	}()
}

// sweepRows removes the row cache entries of every generation no open tablet reads and
// returns the arena bytes given back to the system.
func (s *Store) sweepRows() int64 {
	s.mu.Lock()
	s.rowSweepPending = false // a close from here on schedules a sweep of its own
	newest := s.rowGens.Load()
	live := make(map[uint64]struct{}, len(s.tablets))
	for _, t := range s.tablets {
		live[t.rowGen.Load()] = struct{}{}
	}
	s.mu.Unlock()
	return s.rows.c.Sweep(func(ck []byte) bool {
		gen, n := binary.Uvarint(ck)
		if n <= 0 {
			return true // no tablet builds such a key (entryKey)
		}
		_, open := live[gen]
		return !open && gen <= newest
	})
}

// forgetRows gives the tablet a new generation of row cache entries, after a write to its keys
// that bypassed the cache. Caller holds mu (or owns t).
func (t *Tablet) forgetRows() {
	t.rowGen.Store(t.store.rowGens.Add(1))
}

// fillRows writes the values of the batches just committed to Pebble into the row cache under
// generation gen, oldest batch first (a later batch's value of a key replaces an earlier
// one's). Caller holds applyMu; the batches are still queued, so no stage reads their keys.
func (t *Tablet) fillRows(ready []*stagedBatch, gen uint64) {
	rows := t.store.rows
	if rows == nil {
		return
	}
	var ck []byte
	for _, sb := range ready {
		for k, v := range sb.writes {
			ck = entryKey(ck[:0], gen, bytesOf(k), len(t.prefix))
			rows.set(ck, v)
		}
	}
}
