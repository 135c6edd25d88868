package kvstore

import (
	"bytes"
	"fmt"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/internal/record"
	"github.com/stromdb/strom/internal/row"
)

// writeScratch holds the buffers one Put reuses across records and calls (guarded by
// Tablet.mu), so that the per-record path does not allocate for flat rows.
type writeScratch struct {
	cl      changelog
	clBuf   []byte // changelog batch
	key     []byte // data key
	old     []byte // copy of the current value
	val     []byte // encoded new value
	oldD    []row.Datum
	newD    []row.Datum
	mergedD []row.Datum
	keyD    []row.Datum
	rowKey  []byte // key encoded from a record's row, to check it against the record's key
}

// mergeKind is the row merger chosen for one PUT_KV request (Java RowMerger
// configureTargetColumns).
type mergeKind uint8

const (
	mergeDefault mergeKind = iota
	mergePartial
	mergeFirstRow
	mergeVersioned
	mergeAgg
	mergeAggPartial
)

type merger struct {
	kind    mergeKind
	targets row.ColumnSet
	// overwrite bypasses the merge engine and the table's delete behaviour (MergeOverwrite).
	overwrite bool
}

// MergeMode is PUT_KV's agg_mode (Java MergeMode): how a batch combines with stored rows.
type MergeMode int32

const (
	// MergeDefault runs the table's merge engine.
	MergeDefault MergeMode = 0
	// MergeOverwrite replaces the targeted columns of the stored row and always allows
	// deletes, whatever the merge engine; the Flink connector uses it to undo writes after a
	// failover. Unknown values mean MergeDefault, as in Java.
	MergeOverwrite MergeMode = 1
)

// WriteOptions are the request-level knobs of a PUT_KV.
type WriteOptions struct {
	// TargetColumns are the columns a partial update writes; empty means all columns.
	TargetColumns []int32
	Mode          MergeMode
}

// configure picks the merger for targetColumns (empty: all columns), validating partial
// updates as Java does: INVALID_TARGET_COLUMN unless the targets contain the primary key and
// every non-key column is nullable; first_row and versioned refuse partial updates. In
// MergeOverwrite mode the merge engine is bypassed: the row replaces the stored one (or its
// targeted columns), as Java's overwrite merger (a default merger allowing deletes) does.
func (c *compiled) configure(targetColumns []int32, mode MergeMode) (merger, error) {
	engine := c.Config.MergeEngine
	if mode == MergeOverwrite {
		engine = metadata.MergeEngineDefault
	}
	partial := len(targetColumns) > 0
	var targets row.ColumnSet
	if partial {
		cols := make([]int, len(targetColumns))
		all := len(targetColumns) >= len(c.types)
		for i, tc := range targetColumns {
			cols[i] = int(tc)
			if tc < 0 || int(tc) >= len(c.types) {
				all = false
			}
		}
		targets = row.NewColumnSet(cols...)
		if all {
			for i := range c.types {
				all = all && targets.Has(i)
			}
		}
		if engine == metadata.MergeEngineDefault && all {
			partial = false
		}
		for _, tc := range targetColumns {
			if tc < 0 || int(tc) >= len(c.types) {
				return merger{}, ferr.New(ferr.InvalidTargetColumn, "target column %d does not exist in a schema of %d columns", tc, len(c.types))
			}
		}
	}
	switch engine {
	case metadata.MergeEngineFirstRow:
		if partial {
			return merger{}, ferr.New(ferr.UnknownServerError, "Partial update is not supported for the first_row merge engine.")
		}
		return merger{kind: mergeFirstRow}, nil
	case metadata.MergeEngineVersioned:
		if partial {
			return merger{}, ferr.New(ferr.UnknownServerError, "Partial update is not supported for the versioned merge engine.")
		}
		return merger{kind: mergeVersioned}, nil
	case metadata.MergeEngineAggregation:
		if !partial {
			return merger{kind: mergeAgg}, nil
		}
		if err := row.CheckTargetColumns(c.types, c.pk, targets); err != nil {
			return merger{}, err
		}
		return merger{kind: mergeAggPartial, targets: targets}, nil
	}
	overwrite := mode == MergeOverwrite
	if !partial {
		return merger{kind: mergeDefault, overwrite: overwrite}, nil
	}
	if err := row.CheckTargetColumns(c.types, c.pk, targets); err != nil {
		return merger{}, err
	}
	return merger{kind: mergePartial, targets: targets, overwrite: overwrite}, nil
}

// stage computes the changelog of one PUT_KV bucket batch against the current state (Pebble
// plus the pre-write buffer) and appends it to the log as one batch carrying the KV batch's
// writer id and sequence, so that the log's idempotence check applies. The append is staged:
// written, not yet durable. On success the batch joins the queue, the pre-write buffer (so
// later Puts merge against it) and applyDurable's work list. It returns the log end
// offset after the write (for a duplicate batch: the end of the original). Nothing is staged
// when any record is rejected or the append fails. Caller holds mu.
func (pl *pipeline) stage(kv record.KvBatch, o WriteOptions, nowMs int64) (end int64, p Pending, err error) {
	t := pl.t
	if err := pl.writable(); err != nil {
		return 0, Pending{}, err
	}
	c := t.tbl
	sid := kv.SchemaID()
	if sid < 0 || sid > c.SchemaID {
		return 0, Pending{}, ferr.New(ferr.SchemaNotExist, "Invalid schema id: %d, latest schema id: %d", sid, c.SchemaID)
	}
	if err := c.autoInc.checkTargets(o.TargetColumns); err != nil {
		return 0, Pending{}, err
	}
	m, err := c.configure(o.TargetColumns, o.Mode)
	if err != nil {
		return 0, Pending{}, err
	}
	end, p, _, err = pl.stageWith(m, kv.WriterID(), kv.BatchSequence(), nowMs, false, func(b *stateBatch, w *writeScratch) error {
		it := kv.Records()
		for {
			key, val, ok := it.Next()
			if !ok {
				break
			}
			w.key = t.dataKey(w.key, key)
			var err error
			if val == nil {
				err = t.rows.processDelete(b, m, w)
			} else {
				err = t.rows.processUpsert(b, m, w, sid, val)
			}
			if err != nil {
				return err
			}
		}
		if err := it.Err(); err != nil {
			return ferr.New(ferr.CorruptRecordException, "%v", err)
		}
		return nil
	})
	return end, p, err
}

// writable refuses a write the tablet cannot take now. Caller holds mu.
func (pl *pipeline) writable() error {
	t := pl.t
	if t.failed != nil {
		return t.failed
	}
	// Refuse before the changelog append: while Pebble cannot flush (full disk) the apply
	// would stall inside Pebble once its memtables fill up; an offline bucket takes no writes.
	if err := t.WriteError(); err != nil {
		return err
	}
	if t.role == roleFollower || t.role == roleStandalone && t.log.ExternalHighWatermark() {
		// A replicated tablet writes only after BecomeLeader staged the uncommitted tail.
		return errNotLeader(t.bucket)
	}
	return nil
}

// stageWith is the part of stage shared by every source of writes (a client's PUT_KV batch,
// the key-only rows of a LOOKUP with insert_if_not_exists): process merges each record into
// the state seen through b with merger m (processUpsert or upsertDecoded, processDelete),
// adding its change records to w.cl; the changelog is then appended as one batch of the
// given writer id and sequence and published as stage describes; the Pending returned is the
// rest of the pipeline (durable.go). With skipEmpty, a process
// that produced no change record stages nothing and returns staged=false (a client's batch
// is appended even then: its sequence must advance). Caller holds mu and checked writable.
func (pl *pipeline) stageWith(m merger, writerID int64, batchSeq int32, nowMs int64, skipEmpty bool,
	process func(b *stateBatch, w *writeScratch) error) (end int64, p Pending, staged bool, err error) {
	t := pl.t
	c := t.tbl
	sb := pl.newStaged()
	b := &t.batch
	b.reset(t.store.db, t.prefix, t.hi, t.queue, sb, &t.missRate, &t.mem, t.store.flushedSeq.Load())
	b.rows, b.rowGen, b.live = t.store.rows, t.rowGen.Load(), &t.live
	defer b.release()
	w := &t.w
	w.cl.reset()
	if err := process(b, w); err != nil {
		w.cl.reset()
		pl.recycle(sb)
		return 0, Pending{}, false, err
	}
	if skipEmpty && w.cl.count() == 0 {
		pl.recycle(sb)
		return 0, Pending{}, false, nil
	}
	w.clBuf, err = w.cl.build(w.clBuf[:0], record.V0Header{SchemaID: c.SchemaID, WriterID: writerID, BatchSequence: batchSeq})
	if err != nil {
		pl.recycle(sb)
		return 0, Pending{}, false, err
	}
	res, logDurable, err := t.log.AppendStaged([]record.Batch{w.clBuf}, nowMs)
	if err != nil {
		pl.recycle(sb)
		return 0, Pending{}, false, err
	}
	end = res.LastOffset + 1
	if res.Duplicate {
		// Nothing new: wait for the original batch to be durable and applied.
		pl.recycle(sb)
	} else {
		sb.end = end
		t.queue = append(t.queue, sb)
	}
	return end, pl.pending(end, logDurable), true, nil
}

// current reads the current value of w.key (pre-write buffer, then Pebble) into w.old.
func (rw *rowWriter) current(b *stateBatch, w *writeScratch) (found bool, err error) {
	t := rw.t
	w.old, found, err = b.get(w.old[:0], w.key)
	if err != nil {
		return false, t.storageError("read", err)
	}
	return found, nil
}

// decodeOld decodes w.old into w.oldD, padded to the latest schema.
func (rw *rowWriter) decodeOld(w *writeScratch) error {
	t := rw.t
	id, r, err := row.SplitValue(w.old)
	if err != nil {
		return err
	}
	w.oldD, err = t.tbl.decodeRow(id, r, w.oldD)
	if err != nil {
		return ferr.New(ferr.KvStorageException, "stored value of %s: %v", t.bucket, err)
	}
	w.oldD = t.tbl.pad(w.oldD)
	return nil
}

// processUpsert merges a client's row (encoded under schema sid) into the state of w.key.
func (rw *rowWriter) processUpsert(b *stateBatch, m merger, w *writeScratch, sid int16, newRow []byte) error {
	t := rw.t
	c := t.tbl
	var err error
	w.newD, err = c.decodeRow(sid, newRow, w.newD)
	if err != nil {
		return ferr.New(ferr.CorruptRecordException, "kv record row: %v", err)
	}
	w.newD = c.pad(w.newD)
	if err := rw.checkKey(w); err != nil {
		return err
	}
	return rw.upsertDecoded(b, m, w, sid, newRow)
}

// upsertDecoded merges the row w.newD (of the latest schema, its primary key matching
// w.key) into the state of w.key. newRow is the same row as a client encoded it under schema
// sid, stored as is where no merge changes it; nil when the server built the row, which is
// then encoded under the latest schema.
func (rw *rowWriter) upsertDecoded(b *stateBatch, m merger, w *writeScratch, sid int16, newRow []byte) error {
	t := rw.t
	c := t.tbl
	verbatim := func() error {
		if newRow == nil {
			return rw.encodeAndSet(b, w, w.newD)
		}
		w.val = row.AppendValue(w.val[:0], sid, newRow)
		return b.Set(w.key, w.val, nil)
	}
	if c.Config.ChangelogImage == metadata.ChangelogWAL && m.kind == mergeDefault && c.autoInc.col < 0 {
		// WAL fast path: no read of the old value; every upsert is +U.
		if err := w.cl.add(record.UpdateAfter, w.newD); err != nil {
			return err
		}
		return verbatim()
	}
	found, err := rw.current(b, w)
	if err != nil {
		return err
	}
	if !found {
		if m.kind == mergePartial {
			merged, _ := row.PartialUpdate(w.mergedD, nil, w.newD, m.targets, c.pkSet, len(c.types))
			w.mergedD = merged
			if c.autoInc.col >= 0 {
				if err := rw.assignAutoInc(merged); err != nil {
					return err
				}
			}
			return rw.store1(b, w, record.Insert, merged)
		}
		if c.autoInc.col >= 0 {
			// The row the server inserts is the client's with the new id (Java applyInsert).
			if err := rw.assignAutoInc(w.newD); err != nil {
				return err
			}
			return rw.store1(b, w, record.Insert, w.newD)
		}
		if err := w.cl.add(record.Insert, w.newD); err != nil {
			return err
		}
		return verbatim()
	}
	if err := rw.decodeOld(w); err != nil {
		return err
	}
	switch m.kind {
	case mergeDefault:
		if err := rw.emitUpdate(w, w.newD); err != nil {
			return err
		}
		return verbatim()
	case mergeFirstRow:
		return nil
	case mergeVersioned:
		if compareVersion(&c.types[c.verCol], &w.oldD[c.verCol], &w.newD[c.verCol]) > 0 {
			return nil // older version: keep the stored row
		}
		if err := rw.emitUpdate(w, w.newD); err != nil {
			return err
		}
		return verbatim()
	case mergePartial:
		merged, keepOld := row.PartialUpdate(w.mergedD, w.oldD, w.newD, m.targets, c.pkSet, len(c.types))
		if keepOld {
			return nil
		}
		w.mergedD = merged
		return rw.storeUpdate(b, w, merged)
	case mergeAgg, mergeAggPartial:
		merged := w.mergedD[:0]
		for i := range c.types {
			if m.kind == mergeAggPartial && !m.targets.Has(i) {
				merged = append(merged, w.oldD[i])
				continue
			}
			d, err := c.aggs[i](w.oldD[i], w.newD[i])
			if err != nil {
				return err
			}
			merged = append(merged, d)
		}
		w.mergedD = merged
		return rw.storeUpdate(b, w, merged)
	}
	return fmt.Errorf("kvstore: unknown merger %d", m.kind)
}

func (rw *rowWriter) processDelete(b *stateBatch, m merger, w *writeScratch) error {
	t := rw.t
	c := t.tbl
	switch {
	case m.overwrite: // always allowed
	case c.Config.DeleteBehavior == metadata.DeleteIgnore:
		return nil
	case c.Config.DeleteBehavior == metadata.DeleteDisable:
		return ferr.New(ferr.DeletionDisabledException, "Delete operations are disabled for this table. The table.delete.behavior is set to 'disable'.")
	}
	found, err := rw.current(b, w)
	if err != nil || !found {
		return err // a delete of a missing key produces nothing
	}
	if err := rw.decodeOld(w); err != nil {
		return err
	}
	switch m.kind {
	case mergeFirstRow:
		return ferr.New(ferr.UnknownServerError, "DELETE is not supported for the first_row merge engine.")
	case mergeVersioned:
		return ferr.New(ferr.UnknownServerError, "DELETE is not supported for the versioned merge engine.")
	case mergePartial, mergeAggPartial:
		merged, deleteRow := row.PartialDelete(w.mergedD, w.oldD, m.targets, c.pkSet, len(c.types))
		if !deleteRow {
			w.mergedD = merged
			return rw.storeUpdate(b, w, merged)
		}
	}
	if err := w.cl.add(record.Delete, w.oldD); err != nil {
		return err
	}
	return b.Delete(w.key, nil)
}

// checkKey refuses a record whose key does not encode its row's primary key: stored under the
// wrong key, the row would be found by a lookup of another key, and recovery, which re-derives
// keys from changelog rows, would put it elsewhere. Every primary-key encoding a client can
// use is one of the three (row.PrimaryKeyEncoding: Hudi tables use the compacted one).
func (rw *rowWriter) checkKey(w *writeScratch) error {
	t := rw.t
	c := t.tbl
	if !c.compactedKeys && !c.icebergKeys && !c.paimonKeys {
		return nil
	}
	var err error
	w.rowKey, w.keyD, err = c.encodeKey(w.rowKey[:0], w.newD, w.keyD)
	if err != nil {
		return ferr.New(ferr.CorruptRecordException, "kv record row: %v", err)
	}
	if !bytes.Equal(w.rowKey, w.key[len(t.prefix):]) {
		return ferr.New(ferr.CorruptRecordException, "kv record key does not match the primary key of its row")
	}
	return nil
}

// emitUpdate adds the changelog of an update of w.oldD to r: -U/+U (FULL) or +U (WAL).
func (rw *rowWriter) emitUpdate(w *writeScratch, r []row.Datum) error {
	t := rw.t
	if t.tbl.Config.ChangelogImage != metadata.ChangelogWAL {
		if err := w.cl.add(record.UpdateBefore, w.oldD); err != nil {
			return err
		}
	}
	return w.cl.add(record.UpdateAfter, r)
}

// storeUpdate emits an update to the merged row r and stores it under the latest schema.
func (rw *rowWriter) storeUpdate(b *stateBatch, w *writeScratch, r []row.Datum) error {
	if err := rw.emitUpdate(w, r); err != nil {
		return err
	}
	return rw.encodeAndSet(b, w, r)
}

// store1 emits one change record for r and stores it under the latest schema.
func (rw *rowWriter) store1(b *stateBatch, w *writeScratch, ct record.ChangeType, r []row.Datum) error {
	if err := w.cl.add(ct, r); err != nil {
		return err
	}
	return rw.encodeAndSet(b, w, r)
}

func (rw *rowWriter) encodeAndSet(b *stateBatch, w *writeScratch, r []row.Datum) error {
	t := rw.t
	var err error
	w.val, err = t.tbl.encodeValue(w.val[:0], r)
	if err != nil {
		return ferr.New(ferr.CorruptRecordException, "merged row: %v", err)
	}
	return b.Set(w.key, w.val, nil)
}

// compareVersion orders two version column values; NULL is the smallest version.
func compareVersion(t *metadata.DataType, a, b *row.Datum) int {
	switch {
	case a.Null && b.Null:
		return 0
	case a.Null:
		return -1
	case b.Null:
		return 1
	}
	return compareDatum(t, a, b)
}
