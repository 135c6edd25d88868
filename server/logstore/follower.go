package logstore

import (
	"fmt"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/record"
)

// AppendAsFollower appends batches fetched from the leader as they are: their base offsets,
// commit timestamps and leader epochs are the leader's, and nothing is patched, so the
// follower's log is byte-identical to the leader's. The first batch must start at the log
// end offset (LOG_OFFSET_OUT_OF_RANGE_EXCEPTION otherwise: the fetcher must truncate or
// refetch), each next one where its predecessor ended, every batch must pass Validate (CRC)
// and commit timestamps must not decrease (CORRUPT_RECORD_EXCEPTION); then they are written
// as one unit like Append's. Writer state is updated from the batches exactly as recovery
// rebuilds it (no sequence check: the leader already checked), so a promoted follower
// detects a client's retry as a duplicate. A V2 batch carrying a leader epoch newer than the
// log's latest starts that epoch in the leader-epoch cache.
//
// Under FlushEveryAppend it returns only after the batches are fdatasync'ed, so the offset a
// follower reports next is durable. It never moves the high watermark of a replicated log
// (SetHighWatermark does); a single-node log's HW follows as for Append.
func (r *Replica) AppendAsFollower(batches []record.Batch) (AppendResult, error) {
	l := r.log
	if len(batches) == 0 {
		return AppendResult{}, ferr.New(ferr.CorruptRecordException, "follower append without batches")
	}
	var total int64
	for i, b := range batches {
		if err := b.Validate(); err != nil {
			return AppendResult{}, fmt.Errorf("%w: batch %d: %w",
				ferr.New(ferr.CorruptRecordException, "fetched record is corrupt"), i, err)
		}
		if i > 0 && b.BaseOffset() != batches[i-1].NextOffset() {
			return AppendResult{}, ferr.New(ferr.CorruptRecordException,
				"fetched batch %d starts at offset %d, its predecessor ends at %d", i, b.BaseOffset(), batches[i-1].NextOffset())
		}
		if i > 0 && b.CommitTimestamp() < batches[i-1].CommitTimestamp() {
			return AppendResult{}, ferr.New(ferr.CorruptRecordException,
				"fetched batch %d has commit timestamp %d below its predecessor's %d", i, b.CommitTimestamp(), batches[i-1].CommitTimestamp())
		}
		total += int64(len(b))
	}
	if total > maxSegmentBytes {
		return AppendResult{}, ferr.New(ferr.RecordTooLargeException, "follower append of %d bytes exceeds %d", total, maxSegmentBytes)
	}

	l.mu.Lock()
	res, err := r.appendFollowerLocked(batches, total)
	l.mu.Unlock()
	if err != nil {
		return AppendResult{}, err
	}
	if l.opts.FlushPolicy.everyAppend() {
		if err := l.syncer.syncTo(res.LastOffset + 1); err != nil {
			return AppendResult{}, err
		}
	}
	return res, nil
}

func (r *Replica) appendFollowerLocked(batches []record.Batch, total int64) (AppendResult, error) {
	l := r.log
	if l.closed {
		return AppendResult{}, ErrClosed
	}
	if l.failed != nil {
		return AppendResult{}, l.failed
	}
	if err := l.Offline(); err != nil {
		return AppendResult{}, err
	}
	first, lastB := batches[0], batches[len(batches)-1]
	if first.BaseOffset() != l.leo {
		return AppendResult{}, ferr.New(ferr.LogOffsetOutOfRangeException,
			"follower append starts at offset %d but the log ends at %d", first.BaseOffset(), l.leo)
	}
	if first.CommitTimestamp() < l.maxTs {
		return AppendResult{}, ferr.New(ferr.CorruptRecordException,
			"fetched batch at %d has commit timestamp %d below the log's %d", first.BaseOffset(), first.CommitTimestamp(), l.maxTs)
	}
	last := lastB.LastOffset()
	if last-l.leo > 1<<31-1 {
		return AppendResult{}, ferr.New(ferr.CorruptRecordException, "follower append claims %d offsets", last-l.leo+1)
	}

	seg, pos, err := l.appender.place(batches, total, last)
	if err != nil {
		return AppendResult{}, err
	}

	epochsChanged := false
	for _, b := range batches {
		l.writers.observe(b)
		if e := b.LeaderEpoch(); e >= 0 {
			if latest, ok := r.epochs.latestEpoch(); !ok || e > latest {
				epochsChanged = r.epochs.assign(e, b.BaseOffset()) || epochsChanged
			}
		}
	}
	l.leo = lastB.NextOffset()
	l.maxTs = lastB.CommitTimestamp()
	l.dirty = true
	if epochsChanged {
		if err := r.persistEpochsLocked(); err != nil {
			l.opts.Logger.Warn("logstore: leader-epoch checkpoint failed", "dir", l.dir, "err", err)
		}
	}
	if l.opts.FlushPolicy.everyAppend() || l.opts.ExternalHighWatermark {
		l.republish()
	} else {
		l.publish(l.leo, seg, pos)
	}
	return AppendResult{FirstOffset: first.BaseOffset(), LastOffset: last, CommitTimestamp: lastB.CommitTimestamp()}, nil
}
