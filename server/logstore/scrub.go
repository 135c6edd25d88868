package logstore

import (
	"context"
	"errors"
	"fmt"

	"golang.org/x/time/rate"

	"github.com/stromdb/strom/internal/record"
)

// ScrubResult is what one Scrub pass checked.
type ScrubResult struct {
	Segments int   // sealed segments read in full
	Bytes    int64 // bytes read and checked
	// Corrupt is the first bad batch found; the log is offline when it is set.
	Corrupt *CorruptionError
}

// scrubChunk is the most Scrub reads between two waits on the limiter; the limiter's burst
// must be at least this.
const scrubChunk = 1 << 20

// Scrub re-reads every sealed segment of the log from disk and checks each batch again
// (length, magic, CRC-32C, contiguous offsets), whether or not it was checked before: it
// finds bytes that went bad on disk after they were first verified, which reads would
// otherwise serve from the verified set (docs/durability.md, "The scrubber"). It reads at
// most lim's rate (nil: unlimited), in chunks of at most 1 MiB between waits. The active
// segment is left alone: its bytes were just written or recovered. A bad batch takes the
// log offline exactly as a read that found it would, and is returned in Corrupt; the
// caller (the replica manager) decides how to repair. Segments deleted by retention or
// truncation while Scrub runs are skipped.
func (l *Log) Scrub(ctx context.Context, lim *rate.Limiter) (ScrubResult, error) {
	var res ScrubResult
	if err := l.Offline(); err != nil {
		return res, err
	}
	v := l.v.Load()
	if v == nil || len(v.segs) < 2 {
		return res, nil
	}
	for _, s := range v.segs[:len(v.segs)-1] {
		if !s.acquire() {
			continue // removed since the view was taken
		}
		n, err := s.scrub(ctx, lim)
		sealed := l.stillSealed(s)
		s.release()
		res.Bytes += n
		if err != nil {
			var c *CorruptionError
			if !sealed {
				continue // truncated or deleted meanwhile: what was read may not be the segment's now
			}
			if errors.As(err, &c) {
				res.Corrupt = c
				return res, l.goOffline(c)
			}
			return res, err
		}
		res.Segments++
	}
	return res, nil
}

// scrub checks every batch of the sealed segment s, reading it in rate-limited chunks of
// whole batches. It returns the bytes it read.
func (s *segment) scrub(ctx context.Context, lim *rate.Limiter) (int64, error) {
	s.mu.RLock()
	size := s.size
	s.mu.RUnlock()
	var done int64
	for done < size {
		end, err := s.chunkEnd(done, size)
		if err != nil {
			return done, err
		}
		if lim != nil {
			if err := waitBytes(ctx, lim, end-done); err != nil {
				return done, err
			}
		} else if err := ctx.Err(); err != nil {
			return done, err
		}
		if err := s.verifySpan(done, end); err != nil {
			return done, err
		}
		done = end
	}
	return done, nil
}

// chunkEnd returns the end of a run of whole batches starting at pos: at least one batch,
// and more while the run stays within scrubChunk. A batch header that does not parse ends
// the run right after it so that verifySpan reports it.
func (s *segment) chunkEnd(pos, size int64) (int64, error) {
	end := pos
	for end < size {
		var hdr [record.LogOverhead]byte
		if size-end < int64(len(hdr)) {
			return size, nil
		}
		if _, err := s.file.ReadAt(hdr[:], end); err != nil {
			return 0, storageErr(s, err)
		}
		n := int64(record.NextBatchSize(hdr[:]))
		if n < record.LogOverhead+1 || end+n > size {
			return size, nil // verifySpan reports the bad length
		}
		if end > pos && end+n-pos > scrubChunk {
			break
		}
		end += n
	}
	return end, nil
}

// waitBytes takes n bytes from lim, in pieces no larger than its burst.
func waitBytes(ctx context.Context, lim *rate.Limiter, n int64) error {
	for n > 0 {
		take := min(n, int64(lim.Burst()))
		if take <= 0 {
			return fmt.Errorf("logstore: scrub limiter has burst %d", lim.Burst())
		}
		if err := lim.WaitN(ctx, int(take)); err != nil {
			return err
		}
		n -= take
	}
	return nil
}

// stillSealed reports whether s is still a sealed segment of the log: neither removed nor
// the active segment (a truncation to inside s would make it the active one and rewrite
// the bytes after the cut).
func (l *Log) stillSealed(s *segment) bool {
	v := l.v.Load()
	if v == nil || len(v.segs) == 0 {
		return false
	}
	for _, x := range v.segs[:len(v.segs)-1] {
		if x == s {
			return true
		}
	}
	return false
}
