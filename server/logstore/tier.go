package logstore

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/record"
)

// Tiering is what remote-log tiering (server/remotelog) asks of a Log: the sealed segments
// it may copy, and the deletion of local segments once they are copied. It has no state of
// its own; it reads the segments under the Log's view and deletes them under Log.mu within
// the limits of the Log's Retention. Get it with Log.Tiering.
type Tiering struct{ log *Log }

// Tiering returns the log's tiering hooks.
func (l *Log) Tiering() Tiering { return Tiering{log: l} }

// TierSegment is a sealed segment handed to remote-log tiering (server/remotelog): every
// offset in [Base, End) is below the high watermark, so its bytes never change again. It
// holds a reference on the segment, so its files stay readable even if retention deletes
// them meanwhile; Release it when done.
type TierSegment struct {
	// Base is the segment's base offset; End the next segment's base (exclusive end).
	Base, End int64
	// Size is the length in bytes of the data LogData returns.
	Size int64
	// MaxTimestamp is the commit timestamp of its last batch.
	MaxTimestamp int64

	seg  *segment
	skip int64 // bytes of the segment before Base (a segment straddling from)
}

// TierCandidates returns the sealed segments, oldest first, holding offsets >= from and
// lying wholly below the high watermark: the ones tiering may copy. A segment that straddles
// from (a new leader's segments need not end where its predecessor's copies did) is
// returned from the batch holding from on, with Base that batch's base offset and its
// indexes rebased. Each is verified (length, CRC-32C,
// contiguous offsets, as for a read) before it is returned, so a corrupt segment is never
// copied; corruption takes the log offline and is returned as the error.
func (t Tiering) TierCandidates(from int64) ([]TierSegment, error) {
	l := t.log
	if err := l.Offline(); err != nil {
		return nil, err
	}
	v := l.v.Load()
	if v.closed {
		return nil, ErrClosed
	}
	var out []TierSegment
	release := func() {
		for _, t := range out {
			t.Release()
		}
	}
	for i := 0; i+1 < len(v.segs); i++ {
		s, next := v.segs[i], v.segs[i+1]
		if next.base > v.hw {
			break
		}
		if next.base <= from {
			continue
		}
		if !s.acquire() {
			continue // deleted by retention meanwhile
		}
		s.mu.RLock()
		size, maxTs := s.size, s.maxTs
		s.mu.RUnlock()
		base, skip := s.base, int64(0)
		if from > s.base {
			var err error
			if base, skip, err = s.batchAt(from, size); err != nil {
				s.release()
				release()
				return nil, err
			}
		}
		if err := s.verify(skip, size); err != nil {
			s.release()
			release()
			var c *CorruptionError
			if errors.As(err, &c) {
				err = l.goOffline(c)
			}
			return nil, err
		}
		out = append(out, TierSegment{Base: base, End: next.base, Size: size - skip, MaxTimestamp: maxTs, seg: s, skip: skip})
	}
	return out, nil
}

// batchAt returns the base offset and position of the batch of s holding off.
func (s *segment) batchAt(off, end int64) (base, pos int64, err error) {
	pos, ok, err := s.translate(off, end)
	if err != nil {
		return 0, 0, err
	}
	if !ok {
		return 0, 0, ferr.New(ferr.LogStorageException, "segment %d holds no offset %d", s.base, off)
	}
	var buf [record.HeaderSizeV2]byte
	b, err := readHeader(s.file, pos, end, &buf)
	if err != nil {
		return 0, 0, storageErr(s, err)
	}
	return b.BaseOffset(), pos, nil
}

// Release drops the segment reference.
func (t TierSegment) Release() { t.seg.release() }

// LogData reads the .log file's bytes.
func (t TierSegment) LogData() io.Reader { return io.NewSectionReader(t.seg.file, t.skip, t.Size) }

// Indexes returns the offset and time indexes of the data LogData returns (the formats of
// doc.go, relative to Base): copies, safe to keep.
func (t TierSegment) Indexes() (offsets, times []byte) {
	s := t.seg
	s.mu.RLock()
	defer s.mu.RUnlock()
	delta := uint32(t.Base - s.base)
	var x segIndex
	for i := range s.idx.offLen() {
		if e := s.idx.offAt(i); int64(e.pos) > t.skip {
			x.offs = append(x.offs, offsetEntry{rel: e.rel - delta, pos: e.pos - uint32(t.skip)})
		}
	}
	for i := range s.idx.timeLen() {
		if e := s.idx.timeAt(i); e.rel > delta {
			x.times = append(x.times, timeEntry{ts: e.ts, rel: e.rel - delta})
		}
	}
	return x.encodeOffsets(), x.encodeTimes()
}

// WriterSnapshot returns the writer-state snapshot valid at End (written when the segment
// was rolled), if it is still on disk: only the newest two are kept.
func (t TierSegment) WriterSnapshot() ([]byte, bool) {
	b, err := os.ReadFile(fileName(t.seg.dir, t.End, snapshotSuffix))
	if err != nil {
		return nil, false
	}
	return b, true
}

// DeleteTieredSegments deletes, oldest first, inactive segments whose every offset is below
// remoteEnd — offsets whose copy is committed in remote storage — while more than keep
// segments (counting the active one, as Fluss's table.log.tiered.local-segments does) remain.
// It stops at the first segment that still holds offsets at or above the high watermark,
// the minimum retain offset or the retention floor, exactly like DeleteExpiredSegments, so
// state derived from the local log (KV recovery, lake tiering) keeps what it needs. The log
// start offset advances to the first remaining segment. It returns how many were deleted.
func (t Tiering) DeleteTieredSegments(remoteEnd int64, keep int) (int, error) {
	l := t.log
	keep = max(keep, 1)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return 0, ErrClosed
	}
	if err := l.Offline(); err != nil {
		return 0, nil // an offline log keeps every file for the operator
	}
	v := l.v.Load()
	floor := int64(1<<63 - 1)
	if fn := l.retention.floor.Load(); fn != nil {
		floor = (*fn)()
	}
	n := 0
	for n < len(l.segs)-keep {
		next := l.segs[n+1]
		if next.base > remoteEnd || next.base > v.hw || next.base > l.retention.retainAt || next.base > floor {
			break
		}
		n++
	}
	if n == 0 {
		return 0, nil
	}
	if err := l.retention.removeOldestLocked(n); err != nil {
		return n, fmt.Errorf("%w: %w", ferr.New(ferr.LogStorageException, "delete tiered segments"), err)
	}
	return n, nil
}

// removeOldestLocked removes the n oldest segments (never the active one), publishes the new
// log start and deletes their files. Caller holds mu.
func (r *Retention) removeOldestLocked(n int) error {
	l := r.log
	v := l.v.Load()
	dead := l.segs[:n]
	l.segs = append([]*segment(nil), l.segs[n:]...)
	hwSeg, hwPos := v.hwSeg, v.hwPos
	for _, d := range dead {
		if d == hwSeg {
			hwSeg, hwPos = l.segs[0], 0
		}
	}
	l.publish(v.hw, hwSeg, hwPos)
	var first error
	for _, d := range dead {
		if err := d.removeFiles(); err != nil && first == nil {
			first = err
		}
		d.release()
	}
	deleteSnapshotsBelow(l.dir, l.segs[0].base)
	if err := syncDir(l.dir); err != nil && first == nil {
		first = err
	}
	return first
}
