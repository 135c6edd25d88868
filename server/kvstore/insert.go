package kvstore

import (
	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/row"
)

// InsertMissingStaged is the write half of LOOKUP with insert_if_not_exists (Java
// ReplicaManager.lookups): every key that has no row — neither in Pebble nor staged — gets a
// row holding just its primary-key columns, the other columns NULL, written as a partial update
// of the primary-key columns (so it is refused, INVALID_TARGET_COLUMN, when a non-key column is
// NOT NULL). It returns the write's Pending as PutStaged does — the zero Pending when nothing
// was staged — and the caller looks the keys up again once its Wait returns. Keys that exist are left alone,
// so concurrent inserts of one key produce a single +I.
//
// Only tables whose keys are the compacted encoding of the whole primary key can be served:
// the row is rebuilt from the key, and a partitioned table's key lacks the partition columns.
func (t *Tablet) InsertMissingStaged(keys [][]byte, nowMs int64) (Pending, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	c := t.tbl // SetTable replaces it under mu
	if len(c.PartitionKeys) > 0 || !c.compactedKeys {
		return Pending{}, ferr.New(ferr.InvalidTableException,
			"lookup with insert_if_not_exists is not supported for partitioned tables or lake key encodings by this server")
	}
	targets := make([]int32, len(c.pk))
	for i, p := range c.pk {
		targets[i] = int32(p)
	}
	// A tablet that takes no writes, or a table that cannot take key-only rows (a NOT NULL
	// non-key column), refuses only when a key is missing: a lookup of existing keys succeeds.
	var m merger
	refusal := t.pipe.writable()
	if refusal == nil {
		m, refusal = c.configure(targets, MergeDefault)
	}
	// The rows go to the merge as datums: nothing is encoded as a KV batch only to be parsed
	// and decoded again, and the key needs no check against the row it was built from.
	_, p, staged, err := t.pipe.stageWith(m, -1, -1, nowMs, true, func(b *stateBatch, w *writeScratch) error {
		for _, k := range keys {
			w.key = t.dataKey(w.key, k)
			found, err := t.rows.current(b, w)
			if err != nil {
				return err
			}
			if found {
				continue // includes a key repeated in the request: the first is staged in b
			}
			if refusal != nil {
				return refusal
			}
			if w.keyD, err = row.DecodeKey(c.keyTypes, k, w.keyD); err != nil {
				return ferr.New(ferr.CorruptMessage, "lookup key: %v", err)
			}
			w.newD = w.newD[:0]
			for range c.types {
				w.newD = append(w.newD, row.NullDatum)
			}
			for i, col := range c.keyCols {
				w.newD[col] = w.keyD[i]
			}
			if err := t.rows.upsertDecoded(b, m, w, c.SchemaID, nil); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil || !staged {
		return Pending{}, err
	}
	return p, nil
}
