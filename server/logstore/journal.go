package logstore

import (
	"fmt"
	"math"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/record"
	"github.com/stromdb/strom/server/journal"
)

// DefaultJournalMaxBytes is the largest append routed through the journal by default: the
// measurement (docs/benchmarks.md, "fdatasync per bucket or one journal") found the journal
// winning up to 16 KiB records and losing from 64 KiB on.
const DefaultJournalMaxBytes = 16 << 10

// DefaultJournalMinInFlight is the fewest fsync-per-ack appends in flight server-wide
// (this one included) for a small append to go through the journal: the measurement found it
// winning from 16 concurrent writers on distinct buckets on and losing at 4; 8 in flight on
// the server is what 16 clients with one request each keep most of the time.
const DefaultJournalMinInFlight = 8

// logJournal is a Log's use of the server-wide journal (Options.Journal): which appends go
// through it, and the bookkeeping that keeps the high watermark behind durable bytes when
// journaled and segment-synced appends mix. Fields other than j, key and maxBytes are
// guarded by Log.mu.
type logJournal struct {
	j           *journal.Journal // nil: the journal is not used
	key         string
	maxBytes    int64
	minInFlight int64

	// segEnd is the end offset of the latest append that did not go through the journal:
	// a journaled append above it is durable only once the segment is synced up to it.
	segEnd int64
	// used is set once an append went through the journal since Open: Close and truncations
	// then void the log's records (journal.Void), so that no stale record is replayed.
	used bool
	// covers holds the base offsets of the journal_replay records found at Open, for the
	// recovery of the active segment (an unsynced tail damaged by a power loss is cut where
	// the journal holds the batch again). Only used during Open.
	covers map[int64]bool
}

// setupJournal attaches the journal to a log being opened in dir.
func (lj *logJournal) setup(dir string, opts Options) {
	if opts.Journal == nil || !opts.FlushPolicy.everyAppend() {
		return
	}
	key, ok := opts.Journal.Key(dir)
	if !ok {
		opts.Logger.Warn("logstore: the log is outside the journal's data directory; its appends use the segment's own fdatasync", "dir", dir)
		return
	}
	lj.j, lj.key, lj.maxBytes, lj.minInFlight = opts.Journal, key, opts.JournalMaxBytes, int64(opts.JournalMinInFlight)
	if lj.maxBytes <= 0 {
		lj.maxBytes = DefaultJournalMaxBytes
	}
	if lj.minInFlight <= 0 {
		lj.minInFlight = DefaultJournalMinInFlight
	}
}

// covered reports whether the journal_replay file holds a batch starting at off.
func (lj *logJournal) covered(off int64) bool { return lj.covers[off] }

// replayJournal appends the journal_replay records the log lacks (base offset at its LEO,
// in order; those below it are already in the segments), fdatasyncs the segment and removes
// the file. Open calls it after recovery, before the high watermark is set. A record past
// the log end is a gap: nothing after it is replayed and an ERROR says so.
func (l *Log) replayJournal(recs []journal.ReplayRecord) error {
	applied := 0
	for i, r := range recs {
		if r.Base < l.leo {
			continue
		}
		if r.Base > l.leo {
			l.opts.Logger.Error("logstore: the journal's batches do not continue the log; the rest is not replayed",
				"dir", l.dir, "log_end_offset", l.leo, "journal_base_offset", r.Base, "records_left", len(recs)-i)
			break
		}
		b := record.Batch(r.Data)
		if err := b.Validate(); err != nil || b.BaseOffset() != r.Base || b.CommitTimestamp() < l.maxTs {
			l.opts.Logger.Error("logstore: a journal batch does not fit the log; the rest is not replayed",
				"dir", l.dir, "base_offset", r.Base, "err", err)
			break
		}
		last := b.LastOffset()
		if _, _, err := l.appender.place([]record.Batch{b}, int64(len(b)), last); err != nil {
			return err
		}
		l.writers.observe(b)
		if e := b.LeaderEpoch(); e >= 0 {
			if latest, ok := l.replica.epochs.latestEpoch(); !ok || e > latest {
				if l.replica.epochs.assign(e, b.BaseOffset()) {
					if err := l.replica.persistEpochsLocked(); err != nil {
						return err
					}
				}
			}
		}
		l.leo, l.maxTs = b.NextOffset(), b.CommitTimestamp()
		applied++
	}
	if applied > 0 {
		if err := syncSegmentFile(l.active().file); err != nil {
			return fmt.Errorf("logstore: sync replayed journal batches: %w", err)
		}
		l.opts.Logger.Info("logstore: replayed journaled batches into the segment", "dir", l.dir,
			"batches", applied, "log_end_offset", l.leo)
	}
	l.syncer.synced.Store(l.leo)
	return journal.RemoveReplay(l.dir)
}

// journalFlush is the log's journal.Flusher: it fdatasyncs the active segment if it has
// unsynced bytes (earlier segments were synced at their roll). A closed log was synced by
// Close.
func (l *Log) journalFlush() error {
	l.syncer.mu.Lock()
	defer l.syncer.mu.Unlock()
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	if l.failed != nil {
		err := l.failed
		l.mu.Unlock()
		return err
	}
	seg, dirty := l.active(), l.dirty
	l.dirty = false
	l.mu.Unlock()
	if !dirty {
		return nil
	}
	if err := syncSegmentFile(seg.file); err != nil {
		logIOError(l.opts.Logger, l.dir, "sync", err)
		l.ioFailed(seg.file.Name(), "sync", err)
		err = fmt.Errorf("%w: %w", ferr.New(ferr.LogStorageException, "sync segment %d", seg.base), err)
		l.mu.Lock()
		l.failed = err
		l.mu.Unlock()
		return err
	}
	return nil
}

// journalAppendLocked decides whether the append just placed (res, total bytes, batches;
// inFlight appends in flight server-wide, this one included) goes through the journal and
// enqueues it. It returns the durable function for a journaled append, or nil when the
// append takes the segment's own fdatasync. Caller holds mu.
func (l *Log) journalAppendLocked(batches []record.Batch, total int64, res AppendResult, inFlight int64) func() error {
	lj := &l.journal
	if lj.j == nil || res.Duplicate {
		return nil
	}
	target := res.LastOffset + 1
	if total > lj.maxBytes || inFlight < lj.minInFlight {
		lj.segEnd = target
		return nil
	}
	recs := make([]journal.Record, len(batches))
	for i, b := range batches {
		recs[i] = journal.Record{Base: b.BaseOffset(), Data: b}
	}
	t, err := lj.j.Append(lj.key, l.journalFlush, recs)
	if err != nil {
		lj.segEnd = target // the journal failed: this append and the next rely on the segment
		return nil
	}
	lj.used = true
	need := lj.segEnd
	seg := l.active()
	seg.mu.RLock()
	pos := seg.size
	seg.mu.RUnlock()
	return func() error {
		if err := t.Wait(); err != nil {
			return l.syncer.syncTo(target) // the journal failed: the segment's own sync
		}
		if l.syncer.synced.Load() < need {
			// An earlier append below ours took the segment path and is not synced yet.
			return l.syncer.syncTo(target)
		}
		return l.syncer.journaled(target, seg, pos)
	}
}

// journaled records that offsets below target are durable in the journal (everything below
// them is durable too: earlier journaled appends are in earlier or the same group, earlier
// segment-path ones were synced) and advances the high watermark to target, which ends in
// seg at byte pos.
func (s *syncer) journaled(target int64, seg *segment, pos int64) error {
	l := s.log
	s.mu.Lock()
	defer s.mu.Unlock()
	l.mu.Lock()
	if l.failed != nil {
		err := l.failed
		l.mu.Unlock()
		return err
	}
	if l.closed {
		l.mu.Unlock()
		return ErrClosed
	}
	if l.leo < target {
		// Truncated meanwhile: let the regular path decide.
		l.mu.Unlock()
		return s.syncActive()
	}
	s.noteSynced(target)
	if l.opts.ExternalHighWatermark {
		l.republish() // wake whoever long-polls for the durable end
		l.mu.Unlock()
		return nil
	}
	if target <= l.v.Load().hw {
		l.mu.Unlock()
		return nil
	}
	present := false
	for _, sg := range l.segs {
		if sg == seg {
			present = true
			break
		}
	}
	if !present {
		l.mu.Unlock()
		return s.syncActive()
	}
	l.publish(target, seg, pos)
	l.mu.Unlock()
	return nil
}

// journalVoidLocked makes the journal forget the log's records at or above from before a
// truncation, durably; from = math.MinInt64 (Close, every byte synced) enqueues the void of
// all of them without waiting (journal.VoidAll). Caller holds syncer.mu and mu; the
// journal's committer takes neither, so waiting here cannot deadlock.
func (l *Log) journalVoidLocked(from int64) error {
	lj := &l.journal
	if lj.j == nil || !lj.used {
		return nil
	}
	var err error
	if from == math.MinInt64 {
		err = lj.j.VoidAll(lj.key)
		lj.used = false
	} else {
		err = lj.j.Void(lj.key, from)
	}
	if err != nil {
		return fmt.Errorf("%w: %w", ferr.New(ferr.LogStorageException, "void journal records of %s", l.dir), err)
	}
	return nil
}
