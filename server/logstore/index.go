package logstore

import (
	"encoding/binary"
	"fmt"
	"os"
	"sort"
	"syscall"
)

// Index entry sizes on disk (see doc.go for the formats).
const (
	offsetEntrySize = 8
	timeEntrySize   = 12
)

// offsetEntry says that the batch starting at byte pos of the segment has base offset
// segment base + rel. Entries are strictly increasing in both fields.
type offsetEntry struct {
	rel uint32
	pos uint32
}

// timeEntry says that the batch with base offset segment base + rel has commit timestamp ts
// and that every earlier batch has a commit timestamp <= ts. Entries are strictly increasing
// in ts and non-decreasing in rel; every rel also has an offsetEntry.
type timeEntry struct {
	ts  int64
	rel uint32
}

// segIndex holds a segment's two sparse indexes. While the segment is active they live in
// growable slices; once sealed they are read-only memory maps of the index files. A segIndex
// is guarded by its segment's mu.
type segIndex struct {
	offs    []offsetEntry
	times   []timeEntry
	offMap  []byte // sealed form, len%offsetEntrySize == 0
	timeMap []byte // sealed form, len%timeEntrySize == 0
	sealed  bool
}

func (x *segIndex) offLen() int {
	if x.sealed {
		return len(x.offMap) / offsetEntrySize
	}
	return len(x.offs)
}

func (x *segIndex) offAt(i int) offsetEntry {
	if x.sealed {
		b := x.offMap[i*offsetEntrySize:]
		return offsetEntry{rel: binary.LittleEndian.Uint32(b), pos: binary.LittleEndian.Uint32(b[4:])}
	}
	return x.offs[i]
}

func (x *segIndex) timeLen() int {
	if x.sealed {
		return len(x.timeMap) / timeEntrySize
	}
	return len(x.times)
}

func (x *segIndex) timeAt(i int) timeEntry {
	if x.sealed {
		b := x.timeMap[i*timeEntrySize:]
		return timeEntry{ts: int64(binary.LittleEndian.Uint64(b)), rel: binary.LittleEndian.Uint32(b[8:])}
	}
	return x.times[i]
}

// floorOffset returns the last entry whose rel is <= rel, or the implicit entry {0, 0}.
func (x *segIndex) floorOffset(rel uint32) offsetEntry {
	n := x.offLen()
	i := sort.Search(n, func(i int) bool { return x.offAt(i).rel > rel })
	if i == 0 {
		return offsetEntry{}
	}
	return x.offAt(i - 1)
}

// floorPosition returns the last entry whose pos is <= pos, or the implicit entry {0, 0}.
func (x *segIndex) floorPosition(pos uint32) offsetEntry {
	n := x.offLen()
	i := sort.Search(n, func(i int) bool { return x.offAt(i).pos > pos })
	if i == 0 {
		return offsetEntry{}
	}
	return x.offAt(i - 1)
}

// lastTimeBefore returns the last entry with ts < target.
func (x *segIndex) lastTimeBefore(target int64) (timeEntry, bool) {
	n := x.timeLen()
	i := sort.Search(n, func(i int) bool { return x.timeAt(i).ts >= target })
	if i == 0 {
		return timeEntry{}, false
	}
	return x.timeAt(i - 1), true
}

// add appends entries for a batch; the caller has checked the capacity.
func (x *segIndex) add(rel, pos uint32, ts int64) {
	x.offs = append(x.offs, offsetEntry{rel: rel, pos: pos})
	if n := len(x.times); n == 0 || x.times[n-1].ts < ts {
		x.times = append(x.times, timeEntry{ts: ts, rel: rel})
	}
}

func (x *segIndex) encodeOffsets() []byte {
	n := x.offLen()
	b := make([]byte, n*offsetEntrySize)
	for i := 0; i < n; i++ {
		e := x.offAt(i)
		binary.LittleEndian.PutUint32(b[i*offsetEntrySize:], e.rel)
		binary.LittleEndian.PutUint32(b[i*offsetEntrySize+4:], e.pos)
	}
	return b
}

func (x *segIndex) encodeTimes() []byte {
	n := x.timeLen()
	b := make([]byte, n*timeEntrySize)
	for i := 0; i < n; i++ {
		e := x.timeAt(i)
		binary.LittleEndian.PutUint64(b[i*timeEntrySize:], uint64(e.ts))
		binary.LittleEndian.PutUint32(b[i*timeEntrySize+8:], e.rel)
	}
	return b
}

// decodeIndexes parses index file contents into the active (slice) form, checking every
// invariant stated on offsetEntry and timeEntry plus pos < size. It returns an error for
// anything else, in which case the caller rebuilds the index from the log.
func decodeIndexes(offs, times []byte, size int64) (segIndex, error) {
	if len(offs)%offsetEntrySize != 0 || len(times)%timeEntrySize != 0 {
		return segIndex{}, fmt.Errorf("index size not a multiple of the entry size")
	}
	x := segIndex{sealed: true, offMap: offs, timeMap: times}
	if err := x.check(size, true); err != nil {
		return segIndex{}, err
	}
	out := segIndex{
		offs:  make([]offsetEntry, x.offLen()),
		times: make([]timeEntry, x.timeLen()),
	}
	for i := range out.offs {
		out.offs[i] = x.offAt(i)
	}
	for i := range out.times {
		out.times[i] = x.timeAt(i)
	}
	return out, nil
}

// check verifies the index invariants. With full=false it checks only the shape and the
// last entries (cheap, for memory-mapped sealed segments); full=true walks every entry.
func (x *segIndex) check(size int64, full bool) error {
	n := x.offLen()
	from := 0
	if !full && n > 1 {
		from = n - 1
	}
	var prev offsetEntry
	for i := from; i < n; i++ {
		e := x.offAt(i)
		if int64(e.pos) >= size || e.pos == 0 || e.rel == 0 {
			return fmt.Errorf("offset index entry %d out of range", i)
		}
		if i > from && (e.rel <= prev.rel || e.pos <= prev.pos) {
			return fmt.Errorf("offset index entry %d not increasing", i)
		}
		prev = e
	}
	m := x.timeLen()
	from = 0
	if !full && m > 1 {
		from = m - 1
	}
	var prevT timeEntry
	for i := from; i < m; i++ {
		e := x.timeAt(i)
		if i > from && (e.ts <= prevT.ts || e.rel < prevT.rel) {
			return fmt.Errorf("time index entry %d not increasing", i)
		}
		if x.floorOffset(e.rel).rel != e.rel {
			return fmt.Errorf("time index entry %d has no offset entry", i)
		}
		prevT = e
	}
	return nil
}

// mmapFile maps a whole file read-only; an empty file maps to nil.
func mmapFile(f *os.File) ([]byte, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.Size() == 0 {
		return nil, nil
	}
	if st.Size() > maxSegmentBytes {
		return nil, fmt.Errorf("index file %s too large", f.Name())
	}
	return syscall.Mmap(int(f.Fd()), 0, int(st.Size()), syscall.PROT_READ, syscall.MAP_SHARED)
}

func munmap(b []byte) {
	if b != nil {
		_ = syscall.Munmap(b)
	}
}
