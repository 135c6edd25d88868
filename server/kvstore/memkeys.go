package kvstore

import (
	"hash/maphash"
	"math/bits"
)

// memKeys lets the read before a write of a new key skip Pebble's memtables. A miss
// through the L6-filtered iterator costs a seek in every memtable skiplist — the biggest
// single cost of upserting new keys (docs/benchmarks-history.md, "What pyfluss sends, and where
// Strom spent the time") — while the sstables answer a miss from their bloom filters. A
// tablet knows which of its keys can be in a memtable: the ones it has committed to Pebble
// since the last flush. memKeys keeps Bloom filters of them, so a key that none of them may
// contain is read from the sstables alone (pebble.IterOptions.OnlyReadGuaranteedDurable,
// which with Pebble's WAL off means: ignore the memtables).
//
// Invariants (guarded by the tablet's mu):
//   - Every key the tablet commits to Pebble through commitToPebble, deletes included, is
//     added before the applier removes its batch from the queue (the pre-write buffer), with
//     the Pebble sequence number of the commit. Until then a stage reads the key from the
//     queue and never from Pebble.
//   - Every other write to the bucket's keys (recovery and a follower's replay, a drop, a
//     repair's excise, whatever came before the tablet was opened) raises enableSeq to a
//     sequence number at or above it: the filters are used only once Pebble reports a flush
//     through enableSeq, after which those writes live in sstables.
//   - A filter is dropped only once a flush covered its largest sequence number, and the
//     flushed sequence number is read before the sstable-only iterator is created, so that
//     iterator sees every flush whose filters were dropped.
type memKeys struct {
	enableSeq uint64
	gens      []*keyFilter // oldest first
}

// keyFilter is a Bloom filter of the keys committed in a run of batches, with 4 probes and
// about 10 bits per key (~1% false positives, which only cost the memtable seek).
type keyFilter struct {
	bits    []uint64
	mask    uint64 // number of bits - 1 (a power of two)
	n, max  int    // keys added, keys it takes before the next filter starts
	maxSeq  uint64 // largest Pebble sequence number of the batches added
	flushes uint64 // the store's flush count when the filter started
}

const (
	keyFilterMinBits = 1 << 13 // 1 KiB, ~800 keys
	keyFilterMaxBits = 1 << 23 // 1 MiB, ~800k keys
	keyFilterProbes  = 4
)

var keyHashSeed = maphash.MakeSeed()

func keyHash(k string) uint64 { return maphash.String(keyHashSeed, k) }

func newKeyFilter(nbits int) *keyFilter {
	return &keyFilter{bits: make([]uint64, nbits/64), mask: uint64(nbits - 1), max: nbits / 10}
}

func (f *keyFilter) add(h uint64) {
	h1, h2 := h, bits.RotateLeft64(h, 32)|1
	for i := range uint64(keyFilterProbes) {
		b := (h1 + i*h2) & f.mask
		f.bits[b>>6] |= 1 << (b & 63)
	}
	f.n++
}

func (f *keyFilter) mayContain(h uint64) bool {
	h1, h2 := h, bits.RotateLeft64(h, 32)|1
	for i := range uint64(keyFilterProbes) {
		b := (h1 + i*h2) & f.mask
		if f.bits[b>>6]&(1<<(b&63)) == 0 {
			return false
		}
	}
	return true
}

// untracked records a write of the bucket's keys that the filters do not hold, at Pebble
// sequence number seq or below.
func (m *memKeys) untracked(seq uint64) {
	m.enableSeq = max(m.enableSeq, seq)
}

// add records key hash h as committed in a batch whose sequence numbers end at seq; flushes
// is the store's count of finished flushes. A new filter starts after each flush, so that the
// older ones can be dropped once a flush covers them.
func (m *memKeys) add(h, seq, flushes uint64) {
	var f *keyFilter
	if n := len(m.gens); n > 0 && m.gens[n-1].n < m.gens[n-1].max && m.gens[n-1].flushes == flushes {
		f = m.gens[n-1]
	} else {
		nbits := keyFilterMinBits
		if n > 0 && m.gens[n-1].n >= m.gens[n-1].max {
			nbits = min(2*len(m.gens[n-1].bits)*64, keyFilterMaxBits)
		}
		f = newKeyFilter(nbits)
		f.flushes = flushes
		m.gens = append(m.gens, f)
	}
	f.add(h)
	f.maxSeq = max(f.maxSeq, seq)
}

// usable drops the filters that a flush through flushedSeq made unnecessary and reports
// whether the filters may be used to skip the memtables.
func (m *memKeys) usable(flushedSeq uint64) bool {
	n := 0
	for n < len(m.gens) && m.gens[n].maxSeq <= flushedSeq {
		n++
	}
	if n > 0 {
		clear(m.gens[:n])
		m.gens = m.gens[n:]
		if len(m.gens) == 0 {
			m.gens = nil
		}
	}
	return flushedSeq >= m.enableSeq
}

// mayBeInMemtable reports whether a key of hash h may be in a memtable; only meaningful
// after usable returned true.
func (m *memKeys) mayBeInMemtable(h uint64) bool {
	for _, f := range m.gens {
		if f.mayContain(h) {
			return true
		}
	}
	return false
}
