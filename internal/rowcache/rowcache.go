// Package rowcache is a byte-keyed cache of small values held entirely outside the Go heap,
// built for the primary-key row cache of server/kvstore: its resident size follows the entries
// written into it, bounded by a byte budget, and a value replaced by one of the same or a
// smaller size is rewritten in place, so a table updated over and over holds its rows once
// instead of filling the whole budget with superseded copies.
//
// The cache is split into shards by key hash, each behind its own mutex. A shard owns a slice
// of one anonymous mapping (its arena, budget/shards bytes) and an open-addressing index in a
// mapping of its own. Pages of the arena become resident only when an entry is first written
// to them, and the index holds one 8-byte slot per entry (at most ¾ full), so neither weighs on
// the garbage collector nor counts towards the Go heap's goal.
//
// Invariants of a shard:
//   - The arena is a ring: entries occupy the virtual range [head, tail) (tail−head ≤ the
//     arena's size), a virtual position p living at p mod size. An entry never straddles the
//     end of the arena; the gap before the end is a padding entry.
//   - Every key has at most one index slot, and that slot points at the key's live entry.
//     Entries no slot points at (replaced by a larger value, deleted) are dead: their space is
//     reclaimed when the ring comes round to them.
//   - Eviction is first-in, first-out in the order entries were appended (in-place rewrites
//     keep their place): the entry at head is evicted (its slot removed if it is live) until
//     the new entry fits.
//   - A shard without live entries may be released (Sweep): its arena pages are given back to
//     the system and its ring and index start again from empty (head = tail = 0).
package rowcache

import (
	"encoding/binary"
	"fmt"
	"sync"
	"unsafe"

	"github.com/cespare/xxhash/v2"
	"golang.org/x/sys/unix"
)

const (
	// headerSize is an entry's header: key length, value length (both uint16) and the
	// entry's footprint in the arena (uint32, a multiple of entryAlign).
	headerSize = 8
	entryAlign = 8
	// padKey marks a padding entry in the key-length field.
	padKey = 0xFFFF
	// MaxEntry is the largest key+value (with the header) an entry holds; Set refuses larger
	// ones (and removes the key's older value).
	MaxEntry = 64<<10 - 1
	// shardCount is the number of shards; budgets below shardCount×minShard get fewer.
	shardCount = 256
	// minShard is the smallest arena a shard is given, so that small budgets still hold
	// entries of a few KiB.
	minShard = 64 << 10
	// initialSlots is the index size of an empty shard.
	initialSlots = 512 // one page
)

// Cache is a cache of values by key, safe for concurrent use. The zero value is not usable;
// make one with New.
type Cache struct {
	arena  []byte // one anonymous mapping split among the shards
	shards []shard
	mask   uint64 // len(shards)−1
}

// New returns a cache whose arenas total at most budget bytes (rounded down to the shards'
// granularity); its index adds about 11 bytes per cached entry on top. It fails when the
// budget is below the smallest arena (64 KiB) or the mapping cannot be made.
func New(budget int64) (*Cache, error) {
	if budget < minShard {
		return nil, fmt.Errorf("rowcache: budget %d bytes is below the minimum of %d", budget, minShard)
	}
	n := int64(shardCount)
	for n > 1 && budget/n < minShard {
		n /= 2
	}
	per := budget / n / entryAlign * entryAlign
	if per > 1<<35 { // slot offsets are 32 bits of entryAlign units
		per = 1 << 35
	}
	arena, err := unix.Mmap(-1, 0, int(per*n), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		return nil, fmt.Errorf("rowcache: map %d bytes: %w", per*n, err)
	}
	c := &Cache{arena: arena, shards: make([]shard, n), mask: uint64(n - 1)}
	for i := range c.shards {
		s := &c.shards[i]
		s.buf = arena[int64(i)*per : int64(i+1)*per : int64(i+1)*per]
		if err := s.growIndex(initialSlots); err != nil {
			c.Close()
			return nil, err
		}
	}
	return c, nil
}

// Get appends the value cached for key to dst; ok is false when there is none.
func (c *Cache) Get(dst, key []byte) ([]byte, bool) {
	h := xxhash.Sum64(key)
	s := &c.shards[h&c.mask]
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return dst, false
	}
	i, off := s.find(key, h)
	if i < 0 {
		return dst, false
	}
	kl, vl, _ := s.header(off)
	v := s.buf[off+headerSize+kl : off+headerSize+kl+vl]
	return append(dst, v...), true
}

// Set caches v as key's value, replacing any older one. A key and value too large for an entry
// (MaxEntry, or a quarter of a shard's arena) are not cached, and the key's older value is
// removed: the caller relies on never reading a value older than its last Set.
func (c *Cache) Set(key, v []byte) {
	h := xxhash.Sum64(key)
	s := &c.shards[h&c.mask]
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	foot := footprint(len(key), len(v))
	i, off := s.find(key, h)
	if i >= 0 {
		if _, _, have := s.header(off); foot <= have {
			s.writeEntry(off, key, v, have) // in place: the entry keeps its place and footprint
			return
		}
		s.removeSlot(i) // the old entry is dead from here on
	}
	if headerSize+len(key)+len(v) > MaxEntry || foot > len(s.buf)/4 {
		return
	}
	off = s.alloc(foot)
	s.writeEntry(off, key, v, foot)
	s.insertSlot(h, off)
}

// Del removes key's cached value, if any.
func (c *Cache) Del(key []byte) {
	h := xxhash.Sum64(key)
	s := &c.shards[h&c.mask]
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	if i, _ := s.find(key, h); i >= 0 {
		s.removeSlot(i)
	}
}

// Sweep removes every entry whose key dead reports true, and returns to the system the pages
// of each shard that holds no entry afterwards (its arena and its index, which start again
// from empty), so that the rows of tables no longer open stop counting towards the process's
// resident memory. It reports the arena bytes released. dead is called with each live entry's
// key, under its shard's lock: it must not call into the cache. Entries set while Sweep runs
// may or may not be seen; removing an entry is always safe for a cache.
//
// A shard that keeps a live entry keeps its pages: the ring is not compacted, so dead entries
// between live ones are reclaimed only when the ring comes round to them.
func (c *Cache) Sweep(dead func(key []byte) bool) (released int64) {
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		if !s.closed {
			released += s.sweep(dead)
		}
		s.mu.Unlock()
	}
	return released
}

// sweep is Sweep for one shard (caller holds mu).
func (s *shard) sweep(dead func(key []byte) bool) int64 {
	size := uint64(len(s.buf))
	for p := s.head; p < s.tail && s.entries > 0; {
		off := int(p % size)
		kl, _, foot := s.header(off)
		if kl != padKey {
			key := s.buf[off+headerSize : off+headerSize+kl]
			if dead(key) {
				if i, at := s.find(key, xxhash.Sum64(key)); i >= 0 && at == off {
					s.removeSlot(i)
				}
			}
		}
		p += uint64(foot)
	}
	if s.entries > 0 || s.touched == 0 {
		return 0
	}
	return s.release()
}

// release empties a shard that holds no live entry: its touched arena pages are given back
// (MADV_DONTNEED: the next write finds zeroed pages) and its index shrinks to initialSlots.
// It returns the written arena bytes given back (0 when madvise failed: the pages stay in use, the
// ring stays as it was, which is still consistent).
func (s *shard) release() int64 {
	page := unix.Getpagesize()
	n := (s.touched + page - 1) / page * page
	n = min(n, len(s.buf))
	// Each shard's arena starts on a page boundary when the per-shard size is a multiple of
	// the page size; otherwise only the whole pages inside it are given back.
	start := 0
	if mis := int(uintptr(unsafe.Pointer(unsafe.SliceData(s.buf))) % uintptr(page)); mis != 0 {
		start = page - mis
	}
	var released int64
	if start < n {
		end := start + (n-start)/page*page
		if err := unix.Madvise(s.buf[start:end], unix.MADV_DONTNEED); err != nil {
			return 0
		}
		released = int64(min(end, s.touched) - start) // in Stats' terms: written bytes
	}
	s.head, s.tail = 0, 0
	s.touched = 0
	if len(s.slots) > initialSlots {
		_ = s.growIndex(initialSlots) // on failure the larger (empty) index stays in use
	}
	return released
}

// Stats is what a cache holds.
type Stats struct {
	Entries    int64 // live entries
	ArenaBytes int64 // bytes of the arenas written since start (resident unless swapped out), at most the budget
	IndexBytes int64 // bytes of the index mappings
	Budget     int64 // the arenas' total size
}

// Stats reports what the cache holds now.
func (c *Cache) Stats() Stats {
	var st Stats
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		st.Entries += int64(s.entries)
		st.ArenaBytes += int64(s.touched)
		st.IndexBytes += int64(len(s.slots)) * 8
		st.Budget += int64(len(s.buf))
		s.mu.Unlock()
	}
	return st
}

// Close releases the cache's memory. Calls after it find nothing and cache nothing.
func (c *Cache) Close() {
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		if !s.closed {
			s.closed = true
			s.buf = nil
			if s.slotMap != nil {
				_ = unix.Munmap(s.slotMap)
			}
			s.slots, s.slotMap = nil, nil
		}
		s.mu.Unlock()
	}
	if c.arena != nil {
		_ = unix.Munmap(c.arena)
		c.arena = nil
	}
}

// shard is one lock's worth of the cache (see the package comment for its invariants).
type shard struct {
	mu      sync.Mutex
	buf     []byte   // the arena
	slots   []uint64 // index: 0 empty, else tag<<32 | (offset/entryAlign + 1)
	slotMap []byte   // the mapping behind slots
	head    uint64   // virtual position of the oldest entry
	tail    uint64   // virtual position where the next entry goes
	entries int      // occupied slots
	touched int      // bytes of buf written since start or the last release (the arena's resident part)
	closed  bool
	_       [40]byte // keeps neighbouring shards' locks off one cache line
}

func footprint(klen, vlen int) int {
	return (headerSize + klen + vlen + entryAlign - 1) &^ (entryAlign - 1)
}

func (s *shard) header(off int) (klen, vlen, foot int) {
	b := s.buf[off : off+headerSize]
	return int(binary.LittleEndian.Uint16(b)), int(binary.LittleEndian.Uint16(b[2:])), int(binary.LittleEndian.Uint32(b[4:]))
}

func (s *shard) writeEntry(off int, key, v []byte, foot int) {
	b := s.buf[off:]
	binary.LittleEndian.PutUint16(b, uint16(len(key)))
	binary.LittleEndian.PutUint16(b[2:], uint16(len(v)))
	binary.LittleEndian.PutUint32(b[4:], uint32(foot))
	copy(b[headerSize:], key)
	copy(b[headerSize+len(key):], v)
}

// alloc makes room for an entry of foot bytes at tail, evicting from head, and returns its
// offset in buf.
func (s *shard) alloc(foot int) int {
	size := uint64(len(s.buf))
	need := uint64(foot)
	pad := uint64(0)
	if phys := s.tail % size; phys+need > size {
		pad = size - phys // ≥ entryAlign: positions and sizes are multiples of it
	}
	for s.tail+pad+need-s.head > size {
		s.evictHead()
	}
	if pad > 0 {
		phys := s.tail % size
		binary.LittleEndian.PutUint16(s.buf[phys:], padKey)
		binary.LittleEndian.PutUint32(s.buf[phys+4:], uint32(pad))
		s.tail += pad
	}
	off := int(s.tail % size)
	s.tail += need
	if end := off + foot; end > s.touched {
		s.touched = end
	}
	return off
}

// evictHead drops the oldest entry of the ring, removing its slot when it is live.
func (s *shard) evictHead() {
	off := int(s.head % uint64(len(s.buf)))
	kl, _, foot := s.header(off)
	if kl != padKey {
		key := s.buf[off+headerSize : off+headerSize+kl]
		if i, at := s.find(key, xxhash.Sum64(key)); i >= 0 && at == off {
			s.removeSlot(i)
		}
	}
	s.head += uint64(foot)
}

func tagOf(h uint64) uint64 { return h >> 32 }

// find returns the slot index and entry offset of key (hash h), or −1.
func (s *shard) find(key []byte, h uint64) (int, int) {
	tag := tagOf(h)
	m := uint64(len(s.slots) - 1)
	for i := tag & m; ; i = (i + 1) & m {
		sl := s.slots[i]
		if sl == 0 {
			return -1, 0
		}
		if sl>>32 != tag {
			continue
		}
		off := int(uint32(sl)-1) * entryAlign
		kl, _, _ := s.header(off)
		if kl == len(key) && string(s.buf[off+headerSize:off+headerSize+kl]) == string(key) {
			return int(i), off
		}
	}
}

func (s *shard) insertSlot(h uint64, off int) {
	if (s.entries+1)*4 > len(s.slots)*3 {
		if err := s.growIndex(len(s.slots) * 2); err != nil {
			return // no memory for a larger index: the entry stays dead, the key uncached
		}
	}
	tag := tagOf(h)
	m := uint64(len(s.slots) - 1)
	i := tag & m
	for s.slots[i] != 0 {
		i = (i + 1) & m
	}
	s.slots[i] = tag<<32 | uint64(off/entryAlign+1)
	s.entries++
}

// removeSlot empties slot i, shifting the slots after it back so that every slot stays
// reachable from its home position (linear probing without tombstones).
func (s *shard) removeSlot(i int) {
	m := len(s.slots) - 1
	for {
		s.slots[i] = 0
		j := i
		for {
			j = (j + 1) & m
			sl := s.slots[j]
			if sl == 0 {
				s.entries--
				return
			}
			home := int(sl>>32) & m
			// sl may move to i when i lies cyclically in [home, j).
			if (j-home)&m >= (j-i)&m {
				s.slots[i] = sl
				i = j
				break
			}
		}
	}
}

// growIndex replaces the index with one of n slots (a power of two) holding the same entries.
func (s *shard) growIndex(n int) error {
	mapped, err := unix.Mmap(-1, 0, n*8, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		return fmt.Errorf("rowcache: map an index of %d slots: %w", n, err)
	}
	slots := unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(mapped))), n)
	m := uint64(n - 1)
	for _, sl := range s.slots {
		if sl == 0 {
			continue
		}
		i := (sl >> 32) & m
		for slots[i] != 0 {
			i = (i + 1) & m
		}
		slots[i] = sl
	}
	if s.slotMap != nil {
		_ = unix.Munmap(s.slotMap)
	}
	s.slots, s.slotMap = slots, mapped
	return nil
}
