package kvstore

import (
	"hash/maphash"
	"math/bits"

	"github.com/cockroachdb/pebble"
)

// liveKeys lets the read before a write of a new key skip Pebble altogether. Every upsert
// reads its key's current value first; for a new key that read misses, and at steady state
// (1M+ keys in the bucket, most of them in sstables whose filter and index blocks no longer
// fit the block cache) a miss still searched the levels, loading and checking an sstable
// bloom filter per level, often with a pread: a third of the server's CPU when upserting new
// keys into a table of 1M keys
// (docs/benchmarks.md, "The primary-key path at steady state").
// liveKeys is a Bloom filter, per bucket and in memory, of every key the bucket may hold; a
// key it does not contain is new, and the read is answered without Pebble. A false positive
// (or a key that was deleted since) only costs the read it would have cost anyway.
//
// Invariants (guarded by the tablet's mu; at open the tablet is not shared yet):
//   - Once ready, the filters contain every key that Pebble or the pre-write buffer may hold
//     for the bucket. The applier adds the keys it set before its batch leaves the queue
//     (pipeline.go); a replay (recovery, a follower's CatchUp, a rebuild) adds the keys it sets
//     before their commit, holding mu across both (recover.go, batchWriter). Deleting a key
//     does not remove it: the filters only ever say "maybe" for more keys than exist.
//   - The filters become ready after a scan of the bucket's keys started at open (build).
//     The scan's iterator is created after the build began collecting the keys added
//     meanwhile (pending), so every key is either in the scan's snapshot or added during the
//     build; both reach the filters before ready is set.
type liveKeys struct {
	ready    bool
	building bool
	pending  []uint64 // key hashes added while building
	// built is closed when the build at open ended (ready, abandoned or stopped by Close).
	built   chan struct{}
	filters []*keyFilter // oldest first; a new one, twice as large, when the last is full
}

// A live-key filter takes liveKeysBitsPerKey bits per key (4 probes: ~0.25% false positives
// when full), from liveKeysMinBits to liveKeysMaxBits (1 KiB to 16 MiB, 512 to 8M keys).
// When the last filter is full, the next is liveKeysGrowth times larger, so a bucket that
// grows from empty to 1M keys has 6 filters, ~4 of them small, and a false-positive rate of
// ~1% (the filters' rates add up).
const (
	liveKeysBitsPerKey = 16
	liveKeysMinBits    = 1 << 13
	liveKeysMaxBits    = 1 << 27
	liveKeysGrowth     = 4
)

func newLiveFilter(nbits int) *keyFilter {
	f := newKeyFilter(nbits)
	f.max = nbits / liveKeysBitsPerKey
	return f
}

// add records key hash h as a key the bucket may hold. A key the filters may already hold is
// not added again, so that updates do not fill them: they grow with the bucket's keys.
func (l *liveKeys) add(h uint64) {
	switch {
	case l.ready:
		if !l.absent(h) {
			return
		}
		f := l.filters[len(l.filters)-1]
		if f.n >= f.max {
			f = newLiveFilter(min(liveKeysGrowth*len(f.bits)*64, liveKeysMaxBits))
			l.filters = append(l.filters, f)
		}
		f.add(h)
	case l.building:
		l.pending = append(l.pending, h)
	}
	// Neither: the build that starts later scans Pebble, which holds the key.
}

// absent reports whether the bucket certainly holds no key of hash h.
func (l *liveKeys) absent(h uint64) bool {
	if !l.ready {
		return false
	}
	for _, f := range l.filters {
		if f.mayContain(h) {
			return false
		}
	}
	return true
}

// finish makes the filters ready from the scanned key hashes and those added meanwhile. The
// filter gets room for twice the keys, so that the bucket can double before another is added.
func (l *liveKeys) finish(scanned []uint64) {
	n := len(scanned) + len(l.pending)
	nbits := liveKeysMinBits
	if want := 2 * liveKeysBitsPerKey * n; want > nbits {
		nbits = min(1<<bits.Len(uint(want-1)), liveKeysMaxBits)
	}
	f := newLiveFilter(nbits)
	l.filters = []*keyFilter{f}
	l.building, l.ready = false, true
	for _, h := range scanned {
		l.add(h)
	}
	for _, h := range l.pending {
		l.add(h)
	}
	l.pending = nil
}

// buildLiveKeys scans the bucket's keys into its filters in the background; the store's Close
// stops it and waits for it. Until it finishes, reads before writes go to Pebble as before.
func (s *Store) buildLiveKeys(t *Tablet) {
	defer s.builds.Done()
	defer close(t.live.built)
	t.mu.Lock()
	t.live.building = true
	t.mu.Unlock()
	// Created after building was set: keys committed from now on are added to pending.
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: t.prefix, UpperBound: t.hi})
	if err != nil {
		s.abandonLiveKeys(t, err)
		return
	}
	var scanned []uint64
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		scanned = append(scanned, maphash.Bytes(keyHashSeed, it.Key()))
		if n++; n%4096 == 0 {
			select {
			case <-s.stopBuilds:
				it.Close()
				return
			default:
			}
		}
	}
	if err := it.Close(); err != nil {
		s.abandonLiveKeys(t, err)
		return
	}
	t.mu.Lock()
	t.live.finish(scanned)
	t.mu.Unlock()
}

// abandonLiveKeys leaves a tablet whose keys could not be scanned without filters: every
// read before a write then goes to Pebble, which is only slower.
func (s *Store) abandonLiveKeys(t *Tablet, err error) {
	t.mu.Lock()
	t.live.building, t.live.pending = false, nil
	t.mu.Unlock()
	s.log.Warn("kvstore: live-key filter not built; reads before writes use Pebble", "bucket", t.bucket, "err", err)
}
