package logstore

import (
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stromdb/strom/internal/faultfs"
	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/record"
)

// snapshotsKept is how many writer snapshots stay on disk.
const snapshotsKept = 2

// Log is the durable, segmented log of one table bucket. It is safe for one writer and many
// concurrent readers; see doc.go for the locking.
type Log struct {
	dir  string
	opts Options

	// syncer serialises fdatasync of the active segment (group commit) and excludes
	// Truncate/Close from a sync in progress. Lock order: syncer.mu, then mu.
	syncer syncer

	// mu is the writer lock: every field below it changes only while mu is held.
	mu       sync.Mutex
	segs     []*segment // ascending base offsets, last is active; replaced, never mutated in place
	leo      int64      // log end offset: next offset to assign
	maxTs    int64      // max commit timestamp ever appended (Fluss localMaxTimestamp)
	writers  writerState
	appender appender // the write path of Append and AppendAsFollower, with its scratch space
	failed   error    // sticky I/O failure: no more appends
	closed   bool
	dirty    bool // bytes written since the last sync (FlushInterval)

	// offline is set (once) when a stored batch is found corrupt; every request then gets
	// it. See goOffline.
	offline atomic.Pointer[error]

	retention Retention // retention.go, tier.go
	replica   Replica   // replica.go, epoch.go, truncate.go, hwcheckpoint.go, follower.go

	v atomic.Pointer[view] // what readers see

	batchStats BatchStats // statistics sidecars (batchstats.go)

	journal logJournal // the server-wide journal, when used (journal.go); guarded by mu
}

// view is an immutable snapshot of the reader-visible state, swapped atomically on every
// change. Readers never take Log.mu.
type view struct {
	segs     []*segment
	logStart int64
	leo      int64
	hw       int64 // high watermark: everything below it is readable
	hwSeg    *segment
	hwPos    int64 // byte position in hwSeg where the HW falls (a batch boundary)
	maxTs    int64
	closed   bool
	changed  chan struct{} // closed when a newer view replaces this one
}

// bound returns how many bytes of s lie below the high watermark.
func (v *view) bound(s *segment) int64 {
	switch {
	case s == v.hwSeg:
		return v.hwPos
	case s.base < v.hwSeg.base:
		s.mu.RLock()
		defer s.mu.RUnlock()
		return s.size
	default:
		return 0
	}
}

// publish installs a new view built from the writer state plus the given high watermark
// position, waking everyone waiting on the old one. Caller holds mu.
func (l *Log) publish(hw int64, hwSeg *segment, hwPos int64) {
	// Normalise an HW that sits at the very end of a sealed segment to the start of the next
	// one, so that retention of the former never strands the HW pointer.
	for i, s := range l.segs {
		if s == hwSeg && i+1 < len(l.segs) && hwPos == s.size && l.segs[i+1].base == hw {
			hwSeg, hwPos = l.segs[i+1], 0
		}
	}
	nv := &view{
		segs:     l.segs,
		logStart: l.segs[0].base,
		leo:      l.leo,
		hw:       hw,
		hwSeg:    hwSeg,
		hwPos:    hwPos,
		maxTs:    l.maxTs,
		closed:   l.closed,
		changed:  make(chan struct{}),
	}
	if old := l.v.Swap(nv); old != nil {
		close(old.changed)
	}
}

// republish publishes the writer state with the current high watermark.
func (l *Log) republish() {
	v := l.v.Load()
	l.publish(v.hw, v.hwSeg, v.hwPos)
}

func (l *Log) active() *segment { return l.segs[len(l.segs)-1] }

// AppendResult describes a successful Append.
type AppendResult struct {
	// FirstOffset and LastOffset span the appended batches (for a duplicate: the original
	// batch's offsets).
	FirstOffset int64
	LastOffset  int64
	// CommitTimestamp is the timestamp written into every batch (for a duplicate: the
	// original batch's).
	CommitTimestamp int64
	// Duplicate is set when a batch's writer sequence was already appended: nothing was
	// written and the offsets are those of the original batch. PRODUCE_LOG answers success
	// with FirstOffset as base offset.
	Duplicate bool
}

// Append assigns offsets and the commit timestamp to batches, patches them in place, and
// appends them to the active segment as one atomic unit. Every batch is validated first
// (CORRUPT_RECORD_EXCEPTION); idempotent writers are checked per Fluss rules
// (OUT_OF_ORDER_SEQUENCE_EXCEPTION, or a Duplicate result). When Append returns without error
// the batches are readable and, under FlushEveryAppend, durable.
func (l *Log) Append(batches []record.Batch, nowMs int64) (AppendResult, error) {
	res, durable, err := l.AppendStaged(batches, nowMs)
	if err != nil {
		return res, err
	}
	if err := durable(); err != nil {
		return AppendResult{}, err
	}
	return res, nil
}

// AppendStaged is Append split in two: it writes the batches (assigning offsets in call
// order) and returns at once, and durable waits until they are durable and readable per the
// flush policy. Callers that must keep the order of appends but not wait for each fsync in
// turn — a connection pipelining produce requests — call AppendStaged in order and the
// durable functions concurrently, so that one fdatasync covers several appends (group
// commit). The append must not be acknowledged before durable returns nil.
func (l *Log) AppendStaged(batches []record.Batch, nowMs int64) (AppendResult, func() error, error) {
	if len(batches) == 0 {
		return AppendResult{}, nil, ferr.New(ferr.CorruptRecordException, "append without batches")
	}
	var total int64
	for i, b := range batches {
		if err := b.Validate(); err != nil {
			return AppendResult{}, nil, fmt.Errorf("%w: batch %d: %w",
				ferr.New(ferr.CorruptRecordException, "record is corrupt"), i, err)
		}
		total += int64(len(b))
	}
	if total > maxSegmentBytes {
		return AppendResult{}, nil, ferr.New(ferr.RecordTooLargeException, "append of %d bytes exceeds %d", total, maxSegmentBytes)
	}

	// With the journal, every fsync-per-ack append counts as in flight until durable: the
	// routing looks at how many there are (journal.go).
	inFlight, end := int64(0), func() {}
	if l.journal.j != nil {
		inFlight, end = l.journal.j.BeginAppend()
	}
	l.mu.Lock()
	res, err := l.appender.appendLocked(batches, total, nowMs)
	everyAppend := l.opts.FlushPolicy.everyAppend()
	var journaled func() error
	if err == nil && everyAppend {
		journaled = l.journalAppendLocked(batches, total, res, inFlight)
	}
	l.mu.Unlock()
	if err != nil {
		end()
		return AppendResult{}, nil, err
	}
	if !everyAppend {
		end()
		return res, func() error { return nil }, nil
	}
	if journaled != nil {
		return res, func() error { defer end(); return journaled() }, nil
	}
	// A duplicate's original batch may itself still await its fsync: wait for it too.
	target := res.LastOffset + 1
	if l.journal.j != nil {
		return res, func() error { defer end(); return l.syncer.syncTo(target) }, nil
	}
	return res, func() error { return l.syncer.syncTo(target) }, nil
}

func (a *appender) appendLocked(batches []record.Batch, total, nowMs int64) (AppendResult, error) {
	l := a.log
	if l.closed {
		return AppendResult{}, ErrClosed
	}
	if l.failed != nil {
		return AppendResult{}, l.failed
	}
	if err := l.Offline(); err != nil {
		return AppendResult{}, err
	}
	ts := max(l.maxTs, nowMs)
	off := l.leo
	epoch, stamp := l.replica.epochs.latestEpoch()
	for _, b := range batches {
		b.SetBaseOffset(off)
		b.SetCommitTimestamp(ts)
		if stamp {
			setLeaderEpoch(b, epoch)
		}
		off = b.NextOffset()
	}
	last := off - 1
	if last-l.leo > math.MaxInt32 {
		// RecordCount is not checked against the body, so a hostile request could claim
		// offsets that the relative index form cannot hold.
		return AppendResult{}, ferr.New(ferr.CorruptRecordException,
			"append claims %d offsets", last-l.leo+1)
	}

	a.pending = a.pending[:0]
	if dup, isDup, err := l.writers.check(batches, &a.pending); err != nil || isDup {
		return AppendResult{FirstOffset: dup.firstOffset, LastOffset: dup.lastOffset,
			CommitTimestamp: dup.ts, Duplicate: isDup}, err
	}

	seg, pos, err := a.place(batches, total, last)
	if err != nil {
		return AppendResult{}, err
	}

	l.writers.commit(a.pending)
	l.leo = off
	l.maxTs = ts
	l.dirty = true
	if l.opts.FlushPolicy.everyAppend() || l.opts.ExternalHighWatermark {
		l.republish() // LEO moves now; the HW follows after the sync (or SetHighWatermark)
	} else {
		l.publish(l.leo, seg, pos)
	}
	return AppendResult{FirstOffset: batches[0].BaseOffset(), LastOffset: last, CommitTimestamp: ts}, nil
}

// appender is the write path shared by Append and AppendAsFollower: placing batches at the
// end of the active segment, indexing them, and rolling. It owns the scratch space of that
// path; everything else it changes is the Log's. Every method runs with log.mu held.
type appender struct {
	log     *Log
	pending pendingWriters // scratch for Append
	scratch []byte         // scratch for multi-batch writes
}

// place writes batches, whose offsets and commit timestamps are set, at the end of the active
// segment (rolling it first when they would not fit), then indexes them and accounts for
// them in the segment. It returns the segment and its new size. Caller holds mu.
func (a *appender) place(batches []record.Batch, total, last int64) (*segment, int64, error) {
	l := a.log
	seg := l.active()
	if a.shouldRoll(seg, total, last) {
		if err := a.roll(); err != nil {
			return nil, 0, err
		}
		seg = l.active()
	}
	if err := a.write(seg, batches, total); err != nil {
		return nil, 0, err
	}
	// Index and account for every batch; the bytes are in the file already.
	seg.mu.Lock()
	defer seg.mu.Unlock()
	pos := seg.size
	for _, b := range batches {
		if seg.sinceIndex >= int64(l.opts.IndexIntervalBytes) {
			seg.idx.add(uint32(b.BaseOffset()-seg.base), uint32(pos), b.CommitTimestamp())
			seg.sinceIndex = 0
		}
		n := int64(len(b))
		seg.sinceIndex += n
		pos += n
	}
	seg.verified.add(seg.size, pos) // validated in memory before the write
	seg.size = pos
	seg.next = last + 1
	seg.maxTs = batches[len(batches)-1].CommitTimestamp()
	return seg, pos, nil
}

// write puts the batches at the end of seg with positional writes. On failure the file is cut
// back to its previous size; if even that fails the Log refuses further appends.
func (a *appender) write(seg *segment, batches []record.Batch, total int64) error {
	l := a.log
	var data []byte
	if len(batches) == 1 {
		data = batches[0]
	} else {
		a.scratch = a.scratch[:0]
		for _, b := range batches {
			a.scratch = append(a.scratch, b...)
		}
		data = a.scratch
		if cap(a.scratch) > 8<<20 {
			a.scratch = nil // do not pin a huge buffer
		}
	}
	err := faultfs.Before(faultfs.Write, seg.file.Name())
	if err == nil {
		_, err = seg.file.WriteAt(data, seg.size)
	}
	if err != nil {
		logIOError(l.opts.Logger, l.dir, "append", err)
		l.ioFailed(seg.file.Name(), "append", err)
		err = fmt.Errorf("%w: %w", ferr.New(ferr.LogStorageException, "append to segment %d", seg.base), err)
		if terr := seg.file.Truncate(seg.size); terr != nil {
			l.failed = err
		}
		return err
	}
	_ = total
	return nil
}

// shouldRoll mirrors Fluss LogSegment.shouldRoll: the append would push the segment past
// SegmentBytes, an index is full, or an offset would not fit the index's relative form.
func (a *appender) shouldRoll(seg *segment, size, lastOffset int64) bool {
	l := a.log
	seg.mu.RLock()
	defer seg.mu.RUnlock()
	if seg.size == 0 {
		return false
	}
	return seg.size > l.opts.SegmentBytes-size ||
		(seg.idx.offLen()+1)*offsetEntrySize > l.opts.IndexMaxBytes ||
		(seg.idx.timeLen()+1)*timeEntrySize > l.opts.IndexMaxBytes ||
		lastOffset-seg.base > math.MaxInt32
}

// roll seals the active segment (data synced, indexes written and mapped), snapshots the
// writer state at the new base offset and starts a new active segment. Caller holds mu.
func (a *appender) roll() error {
	l := a.log
	old := l.active()
	if err := syncSegmentFile(old.file); err != nil {
		logIOError(l.opts.Logger, l.dir, "sync before roll", err)
		l.ioFailed(old.file.Name(), "sync", err)
		l.failed = fmt.Errorf("%w: %w", ferr.New(ferr.LogStorageException, "sync segment %d", old.base), err)
		return l.failed
	}
	l.syncer.noteSynced(l.leo)
	if err := old.seal(); err != nil {
		logIOError(l.opts.Logger, l.dir, "seal segment", err)
		return fmt.Errorf("%w: %w", ferr.New(ferr.LogStorageException, "seal segment %d", old.base), err)
	}
	seg, err := createSegment(l.dir, l.leo)
	if err != nil {
		logIOError(l.opts.Logger, l.dir, "create segment", err)
		return fmt.Errorf("%w: %w", ferr.New(ferr.LogStorageException, "roll"), err)
	}
	if err := writeSnapshot(l.dir, l.leo, l.writers, snapshotsKept); err != nil {
		l.opts.Logger.Warn("logstore: writer snapshot failed", "dir", l.dir, "err", err)
	}
	if err := syncDir(l.dir); err != nil {
		l.opts.Logger.Warn("logstore: directory sync failed", "dir", l.dir, "err", err)
	}
	l.replica.checkpointHWLocked()
	segs := make([]*segment, len(l.segs), len(l.segs)+1)
	copy(segs, l.segs)
	l.segs = append(segs, seg)
	l.republish()
	return nil
}

// syncer is the group commit of a Log: one fdatasync of the active segment covers every
// append that waits meanwhile, and under FlushInterval a background flusher syncs
// periodically. It owns the sync lock, the synced mark and the flusher's lifecycle.
type syncer struct {
	log *Log

	// mu serialises fdatasync and keeps Truncate/TruncateTo/Close out of a sync in progress.
	// Lock order: mu, then log.mu.
	mu     sync.Mutex
	synced atomic.Int64 // offsets below it are durable: fdatasync'ed in the segment or the journal (FlushEveryAppend)

	stop chan struct{} // closes the flusher; nil when none runs
	done chan struct{} // closed by the flusher when it returns
}

// syncTo makes offsets below target durable and advances the high watermark (FlushEveryAppend).
// Appends that queue here while another sync runs are covered by the next single sync.
func (s *syncer) syncTo(target int64) error {
	l := s.log
	s.mu.Lock()
	defer s.mu.Unlock()
	if l.opts.ExternalHighWatermark {
		if s.synced.Load() >= target {
			return nil // the HW is not ours to move: track the synced end instead
		}
	} else if l.v.Load().hw >= target {
		return nil // a sync that started after our write covered it
	}
	return s.syncActive()
}

// syncActive fdatasyncs the active segment and publishes the HW it covers. Caller holds
// syncer.mu (so no Truncate or Close runs meanwhile).
func (s *syncer) syncActive() error {
	l := s.log
	l.mu.Lock()
	if l.failed != nil {
		l.mu.Unlock()
		return l.failed
	}
	if l.closed {
		l.mu.Unlock()
		return ErrClosed
	}
	if err := l.Offline(); err != nil {
		l.mu.Unlock()
		return err
	}
	seg, leo, dirty := l.active(), l.leo, l.dirty
	seg.mu.RLock()
	pos := seg.size
	seg.mu.RUnlock()
	l.dirty = false
	l.mu.Unlock()

	if dirty {
		// Segments before seg were synced when they were rolled.
		if err := syncSegmentFile(seg.file); err != nil {
			logIOError(l.opts.Logger, l.dir, "sync", err)
			l.ioFailed(seg.file.Name(), "sync", err)
			err = fmt.Errorf("%w: %w", ferr.New(ferr.LogStorageException, "sync segment %d", seg.base), err)
			l.mu.Lock()
			l.failed = err
			l.mu.Unlock()
			return err
		}
	}
	s.noteSynced(leo)
	if l.opts.ExternalHighWatermark {
		l.mu.Lock()
		if !l.closed {
			l.republish() // wake whoever long-polls for the durable end
		}
		l.mu.Unlock()
		return nil
	}
	if !l.opts.FlushPolicy.everyAppend() {
		return nil
	}
	l.mu.Lock()
	if leo > l.v.Load().hw {
		l.publish(leo, seg, pos)
	}
	l.mu.Unlock()
	return nil
}

// noteSynced records that offsets below off are fdatasync'ed.
func (s *syncer) noteSynced(off int64) {
	for {
		cur := s.synced.Load()
		if off <= cur || s.synced.CompareAndSwap(cur, off) {
			return
		}
	}
}

// flusher syncs the active segment every interval (FlushInterval with d > 0).
func (s *syncer) flusher(d time.Duration, stop <-chan struct{}) {
	l := s.log
	defer close(s.done)
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			s.mu.Lock()
			err := s.syncActive()
			s.mu.Unlock()
			if err != nil && err != ErrClosed {
				l.opts.Logger.Error("logstore: periodic flush failed", "dir", l.dir, "err", err)
			}
		}
	}
}

// Dir returns the bucket directory.
func (l *Log) Dir() string { return l.dir }

// LogEndOffset returns the next offset to be assigned.
func (l *Log) LogEndOffset() int64 { return l.v.Load().leo }

// HighWatermark returns the offset below which data is readable (single node: LEO once the
// append is durable per the flush policy; with Options.ExternalHighWatermark: what
// SetHighWatermark set).
func (l *Log) HighWatermark() int64 { return l.v.Load().hw }

// LogStartOffset returns the first offset still in the log.
func (l *Log) LogStartOffset() int64 { return l.v.Load().logStart }

// MaxTimestamp returns the largest commit timestamp appended (0 for a log that never held a
// batch, as in Fluss).
func (l *Log) MaxTimestamp() int64 { return l.v.Load().maxTs }

// Flush forces all appended bytes to stable storage.
func (l *Log) Flush() error {
	l.syncer.mu.Lock()
	defer l.syncer.mu.Unlock()
	return l.syncer.syncActive()
}
