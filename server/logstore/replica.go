package logstore

import (
	"errors"
	"sort"
	"sync/atomic"

	"github.com/stromdb/strom/internal/record"
)

// This file holds the read side of replication and the externally driven high watermark;
// follower.go, truncate.go, epoch.go and hwcheckpoint.go hold the rest (see doc.go,
// "Replication").

// Replica is the replication side of a Log (see doc.go, "Replication"): the externally set
// high watermark and its checkpoint, follower appends, the leader-epoch cache and crash-safe
// truncation. It owns the epoch cache and the truncation floor; everything else it reads and
// changes is the Log's, under the Log's locks (syncer.mu, then mu). Get it with Log.Replica.
type Replica struct {
	log *Log

	epochs     epochCache // leader epoch -> start offset; guarded by log.mu
	truncFloor atomic.Pointer[func() int64]
	// testHook, when set, runs at numbered steps of TruncateTo; an error stops the
	// truncation there, as a crash would.
	testHook func(step int) error
}

// Replica returns the log's replication primitives.
func (l *Log) Replica() *Replica { return &l.replica }

// errNotReplicated is returned by SetHighWatermark on a single-node log, whose HW follows
// its own fsync.
var errNotReplicated = errors.New("logstore: the high watermark is set from outside only with Options.ExternalHighWatermark")

// ExternalHighWatermark reports whether the log runs in replicated mode (the HW is set by
// SetHighWatermark).
func (l *Log) ExternalHighWatermark() bool { return l.opts.ExternalHighWatermark }

// DurableLogEndOffset returns the log end offset that is durable per the flush policy: under
// FlushEveryAppend the end of what is fdatasync'ed, under FlushInterval the log end offset
// (the policy accepts page-cache durability). A follower reports it as its fetch offset; a
// leader counts it as its own replica's end when it computes the HW. The high watermark
// never passes it.
func (r *Replica) DurableLogEndOffset() int64 {
	l := r.log
	leo := l.v.Load().leo
	if !l.opts.FlushPolicy.everyAppend() {
		return leo
	}
	return min(l.syncer.synced.Load(), leo)
}

// durableEndLocked is DurableLogEndOffset for a caller holding mu.
func (r *Replica) durableEndLocked() int64 {
	l := r.log
	if !l.opts.FlushPolicy.everyAppend() {
		return l.leo
	}
	return min(l.syncer.synced.Load(), l.leo)
}

// SetHighWatermark moves the high watermark to hw (replicated mode: a leader sets the
// minimum log end of its ISR, a follower the leader's HW). It is clamped to
// DurableLogEndOffset and rounded down to a batch boundary, and it never moves backwards
// (only TruncateTo lowers it). It returns the HW in force afterwards.
func (r *Replica) SetHighWatermark(hw int64) (int64, error) {
	l := r.log
	if !l.opts.ExternalHighWatermark {
		return 0, errNotReplicated
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return 0, ErrClosed
	}
	if err := l.Offline(); err != nil {
		return 0, err
	}
	v := l.v.Load()
	hw = min(hw, r.durableEndLocked())
	if hw <= v.hw {
		return v.hw, nil
	}
	seg, pos, boundary, err := positionOf(l.segs, l.leo, hw)
	if err != nil {
		return v.hw, err
	}
	if boundary <= v.hw {
		return v.hw, nil
	}
	l.publish(boundary, seg, pos)
	return boundary, nil
}

// positionOf finds where offset off falls: the segment and byte position of the batch that
// contains it, and that batch's base offset (off itself when off is a batch boundary). off
// must lie in [log start, leo]; leo maps to the end of the active segment. segs and leo are
// the Log's, read under its mu.
func positionOf(segs []*segment, leo, off int64) (*segment, int64, int64, error) {
	i := max(sort.Search(len(segs), func(i int) bool { return segs[i].base > off })-1, 0)
	for ; i < len(segs); i++ {
		s := segs[i]
		s.mu.RLock()
		size, next := s.size, s.next
		s.mu.RUnlock()
		if off >= next {
			if i == len(segs)-1 {
				return s, size, next, nil
			}
			continue
		}
		pos, ok, err := s.translate(off, size)
		if err != nil {
			return nil, 0, 0, err
		}
		if !ok {
			continue
		}
		var buf [record.HeaderSizeV2]byte
		b, err := readHeader(s.file, pos, size, &buf)
		if err != nil {
			return nil, 0, 0, storageErr(s, err)
		}
		return s, pos, b.BaseOffset(), nil
	}
	s := segs[len(segs)-1]
	return s, s.size, leo, nil
}

// ReadReplica is Read for a follower's fetch: like Read, but bounded by the log end offset
// instead of the high watermark (a follower copies the leader's uncommitted tail; that is
// how the HW advances). ReadResult.HighWatermark is still the HW, which the follower adopts.
// Like Read it must not race TruncateTo for ranges above the new end.
func (r *Replica) ReadReplica(offset int64, maxBytes int, minOneBatch bool) (ReadResult, error) {
	l := r.log
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
		if offset >= v.leo || (maxBytes == 0 && !minOneBatch) {
			return empty, nil
		}
		last := v.segs[len(v.segs)-1]
		last.mu.RLock()
		size := last.size
		last.mu.RUnlock()
		lv := *v
		lv.hw, lv.hwSeg, lv.hwPos = v.leo, last, size
		res, stale, err := l.readView(&lv, offset, maxBytes, minOneBatch)
		res.HighWatermark = v.hw
		if !stale {
			return res, err
		}
	}
}
