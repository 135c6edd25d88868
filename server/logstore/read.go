package logstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"sort"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/filecache"
	"github.com/stromdb/strom/internal/record"
	"github.com/stromdb/strom/internal/sendfile"
)

// ReadResult is a run of whole stored batches, referenced as a file range so that the wire
// layer can copy (or sendfile) it without decoding. The range stays readable, even if
// retention deletes the segment meanwhile, until Release is called; every non-empty result
// must be released exactly once.
type ReadResult struct {
	// HighWatermark is the HW sampled for this read; the range ends at or before it.
	HighWatermark int64
	// File holds the batches at [Position, Position+Size). Use positional reads only (ReadAt,
	// io.NewSectionReader): other readers share the descriptor. Nil when Size is 0.
	File     *os.File
	Position int64
	Size     int64

	seg *segment
	pin *filecache.File // File is pinned open until Release
}

// Release returns the reference on the underlying segment. It is safe on an empty result and
// idempotent.
func (r *ReadResult) Release() {
	if r.pin != nil {
		r.pin.Unpin()
		r.pin = nil
	}
	if r.seg != nil {
		r.seg.release()
		r.seg = nil
	}
}

// AppendTo appends the referenced bytes to dst.
func (r *ReadResult) AppendTo(dst []byte) ([]byte, error) {
	if r.Size == 0 {
		return dst, nil
	}
	n := len(dst)
	dst = append(dst, make([]byte, r.Size)...)
	if _, err := r.File.ReadAt(dst[n:], r.Position); err != nil {
		return dst[:n], fmt.Errorf("%w: %w", ferr.New(ferr.LogStorageException, "read"), err)
	}
	return dst, nil
}

// WriteTo copies the referenced bytes to w: with sendfile(2) when w is a socket, pipe or file
// (zero copy), else through a buffer. It never uses the file's shared seek position.
func (r *ReadResult) WriteTo(w io.Writer) (int64, error) {
	if r.Size == 0 {
		return 0, nil
	}
	if n, ok, err := sendfile.Send(w, r.File, r.Position, r.Size); ok {
		return n, err
	}
	return sendfile.Copy(w, r.File, r.Position, r.Size)
}

// Slice returns bytes [off, off+n) of r as a result of its own, with its own reference on
// the segment: it stays readable after r is released, until it is released itself. The
// range must lie within r (0 <= off, n > 0, off+n <= r.Size).
func (r *ReadResult) Slice(off, n int64) (ReadResult, error) {
	if r.seg == nil || off < 0 || n <= 0 || off+n > r.Size {
		return ReadResult{}, fmt.Errorf("logstore: slice [%d, %d) of a %d-byte read", off, off+n, r.Size)
	}
	// r holds a reference, so the count is positive and acquire cannot fail.
	if !r.seg.acquire() {
		return ReadResult{}, fmt.Errorf("logstore: slice of a released read")
	}
	// r pins the file, so this Pin returns the same descriptor without reopening.
	f, err := r.pin.Pin()
	if err != nil {
		r.seg.release()
		return ReadResult{}, fmt.Errorf("%w: %w", ferr.New(ferr.LogStorageException, "slice"), err)
	}
	return ReadResult{HighWatermark: r.HighWatermark, File: f, Position: r.Position + off, Size: n, seg: r.seg, pin: r.pin}, nil
}

// ReadBatches copies out what Read(offset, maxBytes, true) refers to: whole batches from the
// one containing offset, at least one when there is one below the high watermark.
func (l *Log) ReadBatches(offset int64, maxBytes int) ([]byte, error) {
	res, err := l.Read(offset, maxBytes, true)
	if err != nil {
		return nil, err
	}
	defer res.Release()
	return res.AppendTo(nil)
}

// Read returns whole batches starting with the batch that contains offset (the first batch
// whose last offset is >= offset), up to the high watermark and at most maxBytes; with
// minOneBatch the first batch is returned even if larger. The result never crosses a segment
// boundary (the caller reads again from the next offset). offset < log start or > LEO gives
// LOG_OFFSET_OUT_OF_RANGE_EXCEPTION; offset in [HW, LEO] gives an empty result.
//
// Every batch of the returned range has passed its length, CRC-32C and offset checks since
// the segment was opened (see segment.verify): a range is verified once, the first time it
// is read, so sendfile never serves bytes that changed on disk before that. A bad batch takes
// the log offline (LOG_STORAGE_EXCEPTION, see Offline) instead of being served.
func (l *Log) Read(offset int64, maxBytes int, minOneBatch bool) (ReadResult, error) {
	maxBytes = max(maxBytes, 0)
	for {
		v := l.v.Load()
		if v.closed {
			return ReadResult{}, ErrClosed
		}
		if err := l.Offline(); err != nil {
			return ReadResult{HighWatermark: v.hw}, err
		}
		empty := ReadResult{HighWatermark: v.hw}
		if offset < v.logStart || offset > v.leo {
			return empty, outOfRange(offset, v.logStart, v.leo)
		}
		if offset >= v.hw || (maxBytes == 0 && !minOneBatch) {
			return empty, nil
		}
		res, stale, err := l.readView(v, offset, maxBytes, minOneBatch)
		if !stale {
			return res, err
		}
		// A segment of v was deleted meanwhile; v is outdated, look again.
	}
}

// readView reads from the segments of v. stale reports that a segment could not be acquired.
func (l *Log) readView(v *view, offset int64, maxBytes int, minOne bool) (ReadResult, bool, error) {
	res := ReadResult{HighWatermark: v.hw}
	i := sort.Search(len(v.segs), func(i int) bool { return v.segs[i].base > offset }) - 1
	for i = max(i, 0); i < len(v.segs); i++ {
		s := v.segs[i]
		end := v.bound(s)
		if end == 0 {
			if s.base >= v.hwSeg.base {
				break
			}
			continue
		}
		if !s.acquire() {
			return res, true, nil
		}
		pos, ok, err := s.translate(offset, end)
		if err != nil || !ok {
			s.release()
			if err != nil {
				return res, false, err
			}
			continue // offset lies beyond this segment's batches
		}
		stop, err := s.extent(pos, end, maxBytes, minOne)
		if err != nil || stop == pos {
			s.release()
			return res, false, err
		}
		if err := s.verify(pos, stop); err != nil {
			s.release()
			var c *CorruptionError
			if errors.As(err, &c) {
				err = l.goOffline(c)
			}
			return res, false, err
		}
		f, err := s.file.Pin()
		if err != nil {
			s.release()
			return res, false, storageErr(s, err)
		}
		res.File, res.Position, res.Size, res.seg, res.pin = f, pos, stop-pos, s, s.file
		return res, false, nil
	}
	return res, false, nil
}

// ReadLastRecords serves LIMIT_SCAN on a log table the way Fluss does (Replica.limitLogScan):
// whole batches from the one containing max(logStart, HW-limit) up to the HW, materialised in
// one slice (possibly spanning segments). The first batch may start before HW-limit and empty
// batches occupy offsets, so the result can hold more or fewer than limit records; the
// client keeps the last limit rows. It returns the HW used.
func (l *Log) ReadLastRecords(limit int) ([]byte, int64, error) {
	v := l.v.Load()
	if v.closed {
		return nil, 0, ErrClosed
	}
	hw := v.hw
	off := max(v.logStart, hw-int64(max(limit, 0)))
	var out []byte
	for off < hw {
		r, err := l.Read(off, math.MaxInt32, true)
		if err != nil {
			return nil, hw, err
		}
		if r.Size == 0 {
			break
		}
		n := len(out)
		out, err = r.AppendTo(out)
		r.Release()
		if err != nil {
			return nil, hw, err
		}
		rest := out[n:]
		for len(rest) > 0 {
			b, tail, ok := record.Split(rest)
			if !ok {
				return nil, hw, ferr.New(ferr.LogStorageException, "torn batch at offset %d", off)
			}
			off, rest = b.NextOffset(), tail
		}
	}
	return out, hw, nil
}

// OffsetForTimestamp implements LIST_OFFSETS by timestamp (Fluss Replica.getOffsetByTimestamp
// and LocalLog.lookupOffsetForTimestamp): ts > nowMs is INVALID_TIMESTAMP_EXCEPTION; ts above
// the max commit timestamp (0 for a log that never held data) answers the HW; otherwise the
// base offset of the first batch whose commit timestamp is >= ts (capped at the HW). A ts that
// matches nothing left in the log (everything was deleted) is INVALID_TIMESTAMP_EXCEPTION.
func (l *Log) OffsetForTimestamp(ts, nowMs int64) (int64, error) {
	for {
		v := l.v.Load()
		if v.closed {
			return 0, ErrClosed
		}
		if err := l.Offline(); err != nil {
			return 0, err
		}
		if ts > nowMs {
			return 0, ferr.New(ferr.InvalidTimestampException,
				"the fetch timestamp %d is larger than the current timestamp %d", ts, nowMs)
		}
		if ts > v.maxTs {
			return v.hw, nil
		}
		off, stale, err := offsetForTimestamp(v, ts)
		if !stale {
			return off, err
		}
	}
}

func offsetForTimestamp(v *view, ts int64) (int64, bool, error) {
	for _, s := range v.segs {
		s.mu.RLock()
		segMax := s.maxTs
		s.mu.RUnlock()
		if segMax < ts {
			continue
		}
		end := v.bound(s)
		if end == 0 {
			return v.hw, false, nil // the matching batch is not committed yet
		}
		if !s.acquire() {
			return 0, true, nil
		}
		off, ok, err := s.findTimestamp(ts, end)
		s.release()
		if err != nil {
			return 0, false, err
		}
		if !ok {
			return v.hw, false, nil
		}
		return off, false, nil
	}
	return 0, false, ferr.New(ferr.InvalidTimestampException,
		"the fetch timestamp %d is larger than the max timestamp %d", ts, v.maxTs)
}

// Changed returns a channel that is closed at the next change of the log's visible state
// (high watermark, end offset, log start, segment list, close). Use it to long-poll.
func (l *Log) Changed() <-chan struct{} { return l.v.Load().changed }

// Wait blocks until the high watermark is above offset (data at offset is readable), the
// context ends, or the log is closed.
func (l *Log) Wait(ctx context.Context, offset int64) error {
	for {
		v := l.v.Load()
		if v.closed {
			return ErrClosed
		}
		if err := l.Offline(); err != nil {
			return err
		}
		if v.hw > offset {
			return nil
		}
		select {
		case <-v.changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
