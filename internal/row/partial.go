package row

import (
	"math/bits"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/metadata"
)

// Partial updates (docs/primary-keys.md §2.5, Java PartialUpdater). The functions here are pure: they
// combine decoded rows and never re-encode. Merged rows share B/Elems/Vals with their inputs.

// ColumnSet is a set of column indexes.
type ColumnSet struct{ words []uint64 }

// NewColumnSet returns the set of cols; negative indexes are ignored.
func NewColumnSet(cols ...int) ColumnSet {
	var s ColumnSet
	for _, c := range cols {
		if c < 0 {
			continue
		}
		for len(s.words) <= c>>6 {
			s.words = append(s.words, 0)
		}
		s.words[c>>6] |= 1 << (uint(c) & 63)
	}
	return s
}

// Has reports whether column i is in s.
func (s ColumnSet) Has(i int) bool {
	return i >= 0 && i>>6 < len(s.words) && s.words[i>>6]&(1<<(uint(i)&63)) != 0
}

// Equal reports whether s and o hold the same columns.
func (s ColumnSet) Equal(o ColumnSet) bool {
	a, b := s.words, o.words
	if len(a) < len(b) {
		a, b = b, a
	}
	for i := range a {
		var w uint64
		if i < len(b) {
			w = b[i]
		}
		if a[i] != w {
			return false
		}
	}
	return true
}

// CheckTargetColumns validates a partial update's target columns against the latest schema's
// column types, as Java's PartialUpdater.sanityCheck: the targets must include every primary
// key column, and every non-primary-key column must be nullable. Failures carry
// INVALID_TARGET_COLUMN. Callers treat targets covering every column as a full update and do
// not call this.
func CheckTargetColumns(types []metadata.DataType, pk []int, targets ColumnSet) error {
	pkSet := NewColumnSet(pk...)
	for _, c := range pk {
		if !targets.Has(c) {
			return ferr.New(ferr.InvalidTargetColumn,
				"the target write columns must contain the primary key column %d", c)
		}
	}
	for i := range types {
		if !pkSet.Has(i) && types[i].NotNull {
			return ferr.New(ferr.InvalidTargetColumn,
				"partial update requires all columns except primary key to be nullable, but column %d is NOT NULL", i)
		}
	}
	for i := range targets.words {
		for w := targets.words[i]; w != 0; w &= w - 1 {
			c := i<<6 | bits.TrailingZeros64(w)
			if c >= len(types) {
				return ferr.New(ferr.InvalidTargetColumn, "target column %d does not exist", c)
			}
		}
	}
	return nil
}

// PartialUpdate merges an upsert of the target columns into the current row (Java
// PartialUpdater.updateRow). old is the current row (nil when the key is absent; it may come
// from an older schema with fewer fields), partial is the written row, numFields the column
// count of the latest schema. Column i of the result is partial[i] when i is a target, else
// old[i], else NULL. When the targets are exactly the primary-key columns and old exists,
// nothing changes: PartialUpdate returns old itself and keepOld=true (a no-op: no changelog).
// The merged row is built in dst (reused).
func PartialUpdate(dst, old, partial []Datum, targets, pk ColumnSet, numFields int) (merged []Datum, keepOld bool) {
	if old != nil && targets.Equal(pk) {
		return old, true
	}
	dst = prepare(dst, numFields)
	for i := range dst {
		switch {
		case targets.Has(i):
			dst[i] = fieldOrNull(partial, i)
		default:
			dst[i] = fieldOrNull(old, i)
		}
	}
	return dst, false
}

// PartialDelete applies a delete with target columns to the current row old (Java
// PartialUpdater.deleteRow). When every non-target column of old is NULL the whole row is
// deleted: deleteRow=true. Otherwise the result is old with its targeted non-primary-key
// columns set to NULL (padded with NULLs to numFields), to be emitted as an update.
func PartialDelete(dst, old []Datum, targets, pk ColumnSet, numFields int) (merged []Datum, deleteRow bool) {
	allNull := true
	for i := range old {
		if !targets.Has(i) && !old[i].Null {
			allNull = false
			break
		}
	}
	if allNull {
		return dst[:0], true
	}
	dst = prepare(dst, numFields)
	for i := range dst {
		if !pk.Has(i) && targets.Has(i) {
			dst[i] = NullDatum
		} else {
			dst[i] = fieldOrNull(old, i)
		}
	}
	return dst, false
}

func fieldOrNull(r []Datum, i int) Datum {
	if i < len(r) {
		return r[i]
	}
	return NullDatum
}
