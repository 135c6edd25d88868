package kvstore

import (
	"context"
	"fmt"
	"hash/maphash"

	"github.com/cockroachdb/pebble"

	"github.com/stromdb/strom/internal/arrowlog"
	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/internal/record"
	"github.com/stromdb/strom/internal/row"
)

// replayCommitBytes bounds the Pebble batch recovery builds before committing it with the
// offset reached so far.
const replayCommitBytes = 8 << 20

// replayReadBytes is how much changelog one read brings in.
const replayReadBytes = 8 << 20

// recover brings the state to the log end offset (docs/primary-keys.md §7, with the local log in
// place of a remote snapshot): from the stored applied offset it re-applies every changelog
// batch: +I/+U/+A rows are put (key re-encoded from the row, value encoded in the KV format
// under the batch's schema id), -D rows deleted, -U rows skipped. Offsets move forward batch
// by batch in the same Pebble batches as the data, so an interrupted recovery resumes.
//
// The state is never rebuilt from a changelog that cannot back it (see repair.go): if the log
// is offline, ends before the applied offset (Pebble ahead of a log that lost its tail) or
// starts after it (the changelog needed is gone), the tablet opens offline and says why. Only
// after an operator cut the log (logstore.AcceptTruncation) is a state ahead of the log
// rebuilt from the log. A corrupt Pebble read of the applied offset rebuilds the state from
// the whole changelog.
func (rc *recovery) recover(ctx context.Context) error {
	t := rc.t
	if err := t.log.Offline(); err != nil {
		_ = t.goOffline("its changelog is offline: %v", err)
		return nil
	}
	applied, err := t.readApplied()
	if pebble.IsCorruptionError(err) {
		t.store.log.Error("kvstore: corrupt state table; rebuilding the bucket's state from its changelog",
			"bucket", t.bucket, "err", err)
		if err := rc.rebuildAfterCorruption(ctx); err != nil {
			_ = t.goOffline("rebuild after corruption failed: %v", err)
		}
		return nil
	}
	if err != nil {
		return err
	}
	start, end := t.log.LogStartOffset(), t.log.LogEndOffset()
	cut, operatorCut := t.log.OperatorTruncation()
	switch {
	case applied > end && operatorCut:
		t.store.log.Warn("kvstore: the changelog was cut by an operator below the state; rebuilding the state from it",
			"bucket", t.bucket, "applied", applied, "log_end", end, "cut_at", cut)
		if err := rc.rebuild(ctx); err != nil {
			_ = t.goOffline("rebuild after the operator's truncation failed: %v", err)
			return nil
		}
		return t.log.ClearOperatorTruncation()
	case applied > end:
		_ = t.goOffline("the state reflects the changelog up to offset %d but the changelog ends at %d: "+
			"acknowledged changelog batches are missing, and rebuilding from it would drop their rows", applied, end)
		return nil
	case applied < start:
		_ = t.goOffline("the state reflects the changelog up to offset %d but the changelog starts at %d: "+
			"the batches needed to catch up are gone", applied, start)
		return nil
	}
	if operatorCut {
		// The cut left everything the state reflects: nothing to rebuild.
		if err := t.log.ClearOperatorTruncation(); err != nil {
			return err
		}
	}
	// What was read from disk is durable (Pebble opens without a WAL, so from flushed
	// tables only); the changelog below it is no longer needed for recovery.
	t.log.Retention().SetMinRetainOffset(applied)
	if t.log.ExternalHighWatermark() && applied > t.log.HighWatermark() {
		// Pebble holds only committed state, so the checkpointed HW (written lazily) lags.
		if _, err := t.log.Replica().SetHighWatermark(applied); err != nil {
			return fmt.Errorf("kvstore: recover %s: %w", t.bucket, err)
		}
	}
	return rc.replay(ctx, applied)
}

// replay applies the changelog from offset applied up to the log's high watermark on top of
// the state, which must reflect exactly the batches below applied, and stores the offset
// reached.
func (rc *recovery) replay(ctx context.Context, applied int64) error {
	t := rc.t
	from := applied
	applied, err := rc.replayRange(ctx, applied, t.log.LogEndOffset())
	if err != nil {
		return fmt.Errorf("kvstore: recover %s: %w", t.bucket, err)
	}
	if applied != from {
		t.store.log.Info("kv state recovered from changelog", "bucket", t.bucket, "from", from, "to", applied)
	}
	t.applied.Store(applied)
	return nil
}

// kvWriter is what a changelog row is applied to: a Pebble batch (replay) or a staged batch
// (BecomeLeader's uncommitted tail).
type kvWriter interface {
	Set(key, value []byte, _ *pebble.WriteOptions) error
	Delete(key []byte, _ *pebble.WriteOptions) error
}

// changeApplier returns the function that applies one changelog row to w: +I/+U/+A rows are
// put (key re-encoded from the row, value encoded in the KV format under the batch's schema
// id), -D rows deleted, -U rows skipped (the +U that follows carries the new state).
func (rc *recovery) changeApplier(w kvWriter) applyFunc {
	t := rc.t
	var keyD []row.Datum
	var key, val []byte
	return func(ct record.ChangeType, r []row.Datum, sid int16, types []metadata.DataType) error {
		var err error
		key, keyD, err = t.tbl.encodeKey(t.dataKey(key, nil), r, keyD)
		if err != nil {
			return err
		}
		switch ct {
		case record.Insert, record.UpdateAfter, record.AppendOnly:
			if val, err = t.tbl.encodeValueAs(val[:0], sid, types, r); err != nil {
				return err
			}
			return w.Set(key, val, nil)
		case record.Delete:
			return w.Delete(key, nil)
		}
		return nil
	}
}

// replayRange applies the changelog from offset from up to limit — and never past the log's high
// watermark, since it reads with Log.Read — to Pebble, moving the stored applied offset
// forward in the same Pebble batches as the data, so an interrupted replay resumes. It
// returns the offset reached; on an error, the offset committed so far. Used by recovery (OpenTablet) and by a follower's CatchUp; the
// caller owns the tablet's apply path (at open, or holding applyMu and mu).
func (rc *recovery) replayRange(ctx context.Context, from, limit int64) (int64, error) {
	t := rc.t
	applied, committed := from, from
	b := t.store.db.NewBatch()
	defer func() { b.Close() }()
	commit := func(off int64) error {
		if err := b.Set(t.meta, appendOffset(nil, off), nil); err != nil {
			return err
		}
		// A new generation before the commit: a lookup that reads the replayed values from
		// Pebble can no longer find an older one in the row cache (rowcache.go, "Lookups").
		t.forgetRows()
		if err := b.Commit(pebble.NoSync); err != nil {
			return err
		}
		t.mem.untracked(b.SeqNum() + uint64(b.Count()))
		committed = off
		b.Close()
		b = t.store.db.NewBatch()
		return nil
	}
	apply := rc.changeApplier(batchWriter{b: &b, live: &t.live})
	var buf []byte
	for applied < limit {
		if err := ctx.Err(); err != nil {
			return committed, err
		}
		res, err := t.log.Read(applied, replayReadBytes, true)
		if err != nil {
			return committed, fmt.Errorf("read changelog at %d: %w", applied, err)
		}
		buf, err = res.AppendTo(buf[:0])
		res.Release()
		if err != nil {
			return committed, err
		}
		if len(buf) == 0 {
			break
		}
		for lb, err := range record.Iterate(buf) {
			if err != nil {
				return committed, fmt.Errorf("changelog at %d: %w", applied, err)
			}
			if lb.NextOffset() <= applied {
				continue
			}
			if err := rc.replayBatch(lb, apply); err != nil {
				return committed, fmt.Errorf("batch at %d: %w", lb.BaseOffset(), err)
			}
			applied = lb.NextOffset()
			if b.Len() >= replayCommitBytes {
				if err := commit(applied); err != nil {
					return committed, err
				}
			}
		}
	}
	if applied != from || b.Len() > 0 {
		if err := commit(applied); err != nil {
			return committed, err
		}
	}
	return applied, nil
}

// batchWriter writes to whichever Pebble batch *b is now (replay swaps it after a commit),
// and adds the keys it sets to live (livekeys.go) before they reach Pebble.
type batchWriter struct {
	b    **pebble.Batch
	live *liveKeys
}

func (w batchWriter) Set(key, value []byte, o *pebble.WriteOptions) error {
	w.live.add(maphash.Bytes(keyHashSeed, key))
	return (*w.b).Set(key, value, o)
}

func (w batchWriter) Delete(key []byte, o *pebble.WriteOptions) error { return (*w.b).Delete(key, o) }

type applyFunc func(ct record.ChangeType, r []row.Datum, sid int16, types []metadata.DataType) error

// replayBatch decodes one changelog batch and applies its rows in order.
func (rc *recovery) replayBatch(lb record.Batch, apply applyFunc) error {
	t := rc.t
	if lb.RecordCount() == 0 {
		return nil
	}
	c := t.tbl
	sid := lb.SchemaID()
	if c.Config.LogFormat == metadata.LogFormatArrow {
		as, err := c.arrowOf(sid)
		if err != nil {
			return err
		}
		cts, rec, err := arrowlog.Decode(as.schema, lb.AppendOnly(), int(lb.RecordCount()), lb.Records(), nil)
		if err != nil {
			return err
		}
		defer rec.Release()
		rows, err := arrowlog.RecordToRows(rec, as.cols)
		if err != nil {
			return err
		}
		types := make([]metadata.DataType, len(as.cols))
		for i, col := range as.cols {
			types[i] = col.Type
		}
		for i, r := range rows {
			ct := record.AppendOnly
			if cts != nil {
				ct = record.ChangeType(cts[i])
			}
			if err := apply(ct, r, sid, types); err != nil {
				return err
			}
		}
		return nil
	}
	types, err := c.typesOf(sid)
	if err != nil {
		return err
	}
	var d []row.Datum
	it := lb.RowLogRecords()
	for {
		ct, rb, ok := it.Next()
		if !ok {
			break
		}
		if c.Config.LogFormat == metadata.LogFormatIndexed {
			d, err = row.DecodeIndexedRow(types, rb, d)
		} else {
			d, err = row.DecodeCompactedRow(types, rb, d)
		}
		if err != nil {
			return err
		}
		if err := apply(ct, d, sid, types); err != nil {
			return err
		}
	}
	return it.Err()
}
