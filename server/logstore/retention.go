package logstore

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/stromdb/strom/internal/ferr"
)

// Retention is the local retention policy of a Log: the TTL, the floors below which nothing
// may be deleted, and the deletion of old segments (by age here, once tiered in tier.go). It
// owns the policy's settings; the segments it deletes are the Log's, under Log.mu. Get it with
// Log.Retention.
type Retention struct {
	log *Log

	ttlMs atomic.Int64
	floor atomic.Pointer[func() int64] // SetRetentionFloor

	// retainAt: no segment holding offsets >= retainAt is deleted (SetMinRetainOffset).
	// Guarded by log.mu.
	retainAt  int64
	retainSet bool
}

// Retention returns the log's retention policy.
func (l *Log) Retention() *Retention { return &l.retention }

// SetTTL changes `table.log.ttl` (zero or negative keeps everything).
func (r *Retention) SetTTL(d time.Duration) { r.ttlMs.Store(d.Milliseconds()) }

// SetMinRetainOffset stops retention from deleting any segment that holds offsets >= offset
// (e.g. changelog a primary-key table still needs for recovery). It only moves forward.
func (r *Retention) SetMinRetainOffset(offset int64) {
	l := r.log
	l.mu.Lock()
	defer l.mu.Unlock()
	if !r.retainSet || offset > r.retainAt {
		r.retainAt, r.retainSet = offset, true
	}
}

// SetRetentionFloor installs fn, which every retention pass consults: no segment holding
// offsets >= fn() is deleted (e.g. records a lake-enabled table has not tiered yet). fn must
// be cheap and must not call back into the log.
func (r *Retention) SetRetentionFloor(fn func() int64) { r.floor.Store(&fn) }

// RemoveExpiredWriters drops the state of writers idle for longer than
// Options.WriterExpiration (Fluss `server.writer-id.expiration-time`). A writer dropped here
// must restart at sequence 0. It returns how many were removed.
func (r *Retention) RemoveExpiredWriters(nowMs int64) int {
	l := r.log
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.writers.expire(nowMs, l.opts.WriterExpiration.Milliseconds())
}

// DeleteExpiredSegments deletes, oldest first, inactive segments whose newest commit
// timestamp is more than the TTL before nowMs, stopping at the first one that is not expired,
// that is not entirely below the high watermark, or that holds offsets at or above the minimum
// retain offset. The active segment is never deleted. The log start offset advances to the
// first remaining segment. Readers holding a ReadResult keep their range readable. It also
// expires idle writers. It returns the number of segments deleted.
func (r *Retention) DeleteExpiredSegments(nowMs int64) (int, error) {
	l := r.log
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return 0, ErrClosed
	}
	if err := l.Offline(); err != nil {
		return 0, nil // an offline log keeps every file for the operator
	}
	l.writers.expire(nowMs, l.opts.WriterExpiration.Milliseconds())
	ttl := r.ttlMs.Load()
	if ttl <= 0 {
		return 0, nil
	}
	v := l.v.Load()
	floor := int64(math.MaxInt64)
	if fn := r.floor.Load(); fn != nil {
		floor = (*fn)()
	}
	n := 0
	for n < len(l.segs)-1 {
		s, next := l.segs[n], l.segs[n+1]
		s.mu.RLock()
		expired := nowMs-s.maxTs > ttl
		s.mu.RUnlock()
		if !expired || next.base > v.hw || next.base > r.retainAt || next.base > floor {
			break
		}
		n++
	}
	if n == 0 {
		return 0, nil
	}
	if err := r.removeOldestLocked(n); err != nil {
		return n, fmt.Errorf("logstore: retention: %w", err)
	}
	return n, nil
}

// Truncate removes every batch whose last offset is >= offset, so the log end offset becomes
// the base offset of the batch that contained offset (<= offset). The end-derived state
// follows as in TruncateTo (epochs, high watermark, writer state), but Truncate is not
// crash-safe and ignores the floor set with SetTruncateFloor: it is the plain cut, for
// repairs and tests. It must not race readers that
// still hold ranges above the new end (on a single node nothing truncates in normal operation).
func (r *Replica) Truncate(offset int64) error {
	l := r.log
	l.syncer.mu.Lock()
	defer l.syncer.mu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if cut, err := r.truncationCutsLocked(offset); !cut || err != nil {
		return err
	}
	if offset < l.segs[0].base {
		return outOfRange(offset, l.segs[0].base, l.leo)
	}
	if _, _, end, err := positionOf(l.segs, l.leo, offset); err != nil {
		return err
	} else if err := l.journalVoidLocked(end); err != nil {
		return err
	}
	s, pos, changed, err := r.cutLocked(offset)
	if err != nil || !changed {
		return err
	}
	return r.settleCutLocked(s, pos)
}

// truncateSegment cuts s at byte pos (a batch boundary) and makes it the active segment. The
// index is rebuilt from the remaining data, which is validated again on the way (Truncate is
// rare; simplicity wins over speed here).
func (r *Replica) truncateSegment(s *segment, pos int64) error {
	l := r.log
	s.mu.Lock()
	if s.idx.sealed {
		munmap(s.idx.offMap)
		munmap(s.idx.timeMap)
	}
	s.idx = segIndex{}
	s.mu.Unlock()
	_ = os.Remove(fileName(s.dir, s.base, indexSuffix))
	_ = os.Remove(fileName(s.dir, s.base, timeIndexSuffix))
	if err := s.file.Truncate(pos); err != nil {
		return fmt.Errorf("%w: %w", ferr.New(ferr.LogStorageException, "truncate segment %d", s.base), err)
	}
	_, corrupt, err := s.recoverData(pos, true, l.opts)
	if err == nil && corrupt != nil {
		err = l.goOffline(corrupt)
	}
	if err != nil {
		return fmt.Errorf("%w: %w", ferr.New(ferr.LogStorageException, "truncate segment %d", s.base), err)
	}
	return nil
}

// Close syncs the log, persists the active segment's indexes and the writer state, marks the
// shutdown clean (so the next Open trusts the active segment's tail) and releases the files.
// Outstanding ReadResults stay valid until released. Close is idempotent.
func (l *Log) Close() error {
	l.mu.Lock()
	stop := l.syncer.stop
	l.syncer.stop = nil
	l.mu.Unlock()
	if stop != nil {
		close(stop)
		<-l.syncer.done
	}
	l.syncer.mu.Lock()
	defer l.syncer.mu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	var err error
	offline := l.Offline() != nil // keep the marker off: the next Open must re-check everything
	if l.failed == nil && !offline {
		act := l.active()
		err = syncSegmentFile(act.file)
		if err == nil {
			err = act.persistIndexes()
		}
		if err == nil {
			err = writeSnapshot(l.dir, l.leo, l.writers, snapshotsKept)
		}
		if err == nil {
			err = writeFileAtomic(filepath.Join(l.dir, cleanMarker), nil)
		}
		if err == nil {
			err = syncDir(l.dir)
		}
		if err == nil {
			// Every byte is synced: the journal's records of this log are void (a later
			// directory of the same name must not inherit them).
			if verr := l.journalVoidLocked(math.MinInt64); verr != nil {
				l.opts.Logger.Warn("logstore: could not void the log's journal records at close", "dir", l.dir, "err", verr)
			}
		}
	}
	if l.failed == nil && !offline && err == nil && l.opts.ExternalHighWatermark {
		err = l.replica.writeHW(l.v.Load().hw)
	}
	l.closed = true
	l.batchStats.close() // batchstats.go
	v := l.v.Load()
	hw, hwSeg, hwPos := v.hw, v.hwSeg, v.hwPos
	if l.failed == nil && !offline && err == nil {
		hw, hwSeg, hwPos = l.leo, l.active(), l.active().size
	}
	l.publish(hw, hwSeg, hwPos)
	for _, s := range l.segs {
		s.release()
	}
	if err != nil {
		return fmt.Errorf("logstore: close %s: %w", l.dir, err)
	}
	return nil
}

// Delete closes the log and removes its directory (drop table). Outstanding ReadResults stay
// readable until released.
func (l *Log) Delete() error {
	cerr := l.Close()
	if err := os.RemoveAll(l.dir); err != nil {
		return fmt.Errorf("logstore: delete %s: %w", l.dir, err)
	}
	if cerr != nil && cerr != ErrClosed {
		return cerr
	}
	return nil
}
