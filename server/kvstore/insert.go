package kvstore

import (
	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/internal/record"
	"github.com/stromdb/strom/internal/row"
)

// InsertMissingStaged is the write half of LOOKUP with insert_if_not_exists (Java
// ReplicaManager.lookups): every key that has no row — neither in Pebble nor staged — gets a
// row holding just its primary-key columns, the other columns NULL, written as a partial update
// of the primary-key columns (so it is refused, INVALID_TARGET_COLUMN, when a non-key column is
// NOT NULL). It reports whether anything was staged and returns the durable wait as PutStaged
// does; the caller looks the keys up again once it returns. Keys that exist are left alone,
// so concurrent inserts of one key produce a single +I.
//
// Only tables whose keys are the compacted encoding of the whole primary key can be served:
// the row is rebuilt from the key, and a partitioned table's key lacks the partition columns.
func (t *Tablet) InsertMissingStaged(keys [][]byte, nowMs int64) (bool, func() error, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	c := t.tbl // SetTable replaces it under mu
	if len(c.PartitionKeys) > 0 || !c.compactedKeys {
		return false, nil, ferr.New(ferr.InvalidTableException,
			"lookup with insert_if_not_exists is not supported for partitioned tables or lake key encodings by this server")
	}
	var recs []record.KvRecord
	var keyD []row.Datum
	r := make([]row.Datum, len(c.types))
	var b stateBatch
	b.reset(t.store.db, t.prefix, t.hi, t.pre, &stagedBatch{writes: map[string][]byte{}}, &t.missRate)
	defer b.release()
	var dk, scratch []byte
	for _, k := range keys {
		dk = t.dataKey(dk, k)
		var found bool
		var err error
		if scratch, found, err = b.get(scratch[:0], dk); err != nil {
			return false, nil, t.storageError("read", err)
		} else if found {
			continue
		}
		if keyD, err = row.DecodeKey(c.keyTypes, k, keyD); err != nil {
			return false, nil, ferr.New(ferr.CorruptMessage, "lookup key: %v", err)
		}
		for i := range r {
			r[i] = row.NullDatum
		}
		for i, col := range c.keyCols {
			r[col] = keyD[i]
		}
		var rb []byte
		if c.Config.KvFormat == metadata.KvFormatIndexed {
			rb, err = row.AppendIndexedRow(nil, c.types, r)
		} else {
			rb, err = row.AppendCompactedRow(nil, c.types, r)
		}
		if err != nil {
			return false, nil, ferr.New(ferr.CorruptMessage, "lookup key: %v", err)
		}
		b.sb.writes[string(dk)] = rb // marks the key, so a key repeated in the request is inserted once
		recs = append(recs, record.KvRecord{Key: k, Row: rb})
	}
	if len(recs) == 0 {
		return false, nil, nil
	}
	kv, err := record.ParseKvBatch(record.AppendKvBatch(nil, record.KvHeader{SchemaID: c.SchemaID, WriterID: -1, BatchSequence: -1}, recs...))
	if err != nil {
		return false, nil, err
	}
	targets := make([]int32, len(c.pk))
	for i, p := range c.pk {
		targets[i] = int32(p)
	}
	_, durable, err := t.stage(kv, WriteOptions{TargetColumns: targets}, nowMs)
	if err != nil {
		return false, nil, err
	}
	return true, durable, nil
}
