package fluss

import (
	"fmt"

	"github.com/stromdb/strom/internal/predicate"
	"github.com/stromdb/strom/proto/flusspb"
)

// Predicate is a filter on a table's top-level columns that a scan pushes down to the
// server (Fluss 1.0's FETCH_LOG filter_predicate). Build one with Equal, LessThan, …, And
// and Or, and pass it to TableScan.Filter.
//
// The server skips whole log batches that cannot hold a matching row; the rows of the
// batches it sends are all returned, matching or not, so a caller that needs only matching
// rows checks them itself (as Fluss's clients do). Values are Go values of the column's
// type, as for writes; nil is NULL (a comparison with NULL matches no row).
type Predicate struct {
	op       predicate.Op
	column   string
	values   []any
	compound int // 0: leaf, 1: AND, 2: OR
	children []Predicate
}

func leafOf(op predicate.Op, column string, values ...any) Predicate {
	return Predicate{op: op, column: column, values: values}
}

// Equal matches rows whose column equals v.
func Equal(column string, v any) Predicate { return leafOf(predicate.Equal, column, v) }

// NotEqual matches rows whose column is not NULL and differs from v.
func NotEqual(column string, v any) Predicate { return leafOf(predicate.NotEqual, column, v) }

// LessThan matches rows whose column is less than v.
func LessThan(column string, v any) Predicate { return leafOf(predicate.LessThan, column, v) }

// LessOrEqual matches rows whose column is at most v.
func LessOrEqual(column string, v any) Predicate { return leafOf(predicate.LessOrEqual, column, v) }

// GreaterThan matches rows whose column is greater than v.
func GreaterThan(column string, v any) Predicate { return leafOf(predicate.GreaterThan, column, v) }

// GreaterOrEqual matches rows whose column is at least v.
func GreaterOrEqual(column string, v any) Predicate {
	return leafOf(predicate.GreaterOrEqual, column, v)
}

// IsNull matches rows whose column is NULL.
func IsNull(column string) Predicate { return leafOf(predicate.IsNull, column) }

// IsNotNull matches rows whose column is not NULL.
func IsNotNull(column string) Predicate { return leafOf(predicate.IsNotNull, column) }

// StartsWith matches rows whose string column starts with prefix.
func StartsWith(column, prefix string) Predicate {
	return leafOf(predicate.StartsWith, column, prefix)
}

// Contains matches rows whose string column contains s.
func Contains(column, s string) Predicate { return leafOf(predicate.Contains, column, s) }

// EndsWith matches rows whose string column ends with suffix.
func EndsWith(column, suffix string) Predicate { return leafOf(predicate.EndsWith, column, suffix) }

// In matches rows whose column equals one of values (at least one).
func In(column string, values ...any) Predicate { return leafOf(predicate.In, column, values...) }

// NotIn matches rows whose column equals none of values (at least one).
func NotIn(column string, values ...any) Predicate {
	return leafOf(predicate.NotIn, column, values...)
}

// And matches rows that every one of ps matches.
func And(ps ...Predicate) Predicate { return Predicate{compound: 1, children: ps} }

// Or matches rows that any one of ps matches.
func Or(ps ...Predicate) Predicate { return Predicate{compound: 2, children: ps} }

// Filter pushes p down to the server: the scanners skip log batches that cannot hold a row p
// matches. It applies to ARROW log tables; for other formats the server sends every batch.
func (s *TableScan) Filter(p Predicate) *TableScan {
	s.filter = &p
	return s
}

// filterPB resolves the scan's filter against the table's schema: its PbPredicate and the
// schema id it refers to (nil when there is no filter).
func (s *TableScan) filterPB() (*flusspb.PbPredicate, error) {
	if s.filter == nil {
		return nil, nil
	}
	return s.filter.pb(s.t)
}

func (p Predicate) pb(t *Table) (*flusspb.PbPredicate, error) {
	if p.compound != 0 {
		if len(p.children) == 0 {
			return nil, fmt.Errorf("fluss: filter: AND/OR of no predicates")
		}
		kids := make([]*flusspb.PbPredicate, len(p.children))
		for i, c := range p.children {
			k, err := c.pb(t)
			if err != nil {
				return nil, err
			}
			kids[i] = k
		}
		return predicate.CompoundPB(p.compound == 2, kids...), nil
	}
	schema := t.info.desc.Schema
	col := schema.Column(p.column)
	if col == nil {
		return nil, fmt.Errorf("fluss: filter: table %s has no column %q", t.info.Path, p.column)
	}
	if (p.op == predicate.In || p.op == predicate.NotIn) && len(p.values) == 0 {
		return nil, fmt.Errorf("fluss: filter: %s on %q needs values", p.op, p.column)
	}
	lits := make([]*flusspb.PbLiteralValue, len(p.values))
	for i, v := range p.values {
		t := col.Type
		t.NotNull = false // a NULL literal is valid for any column
		d, err := toDatum(t, v)
		if err != nil {
			return nil, fmt.Errorf("fluss: filter on %q: %w", p.column, err)
		}
		if lits[i], err = predicate.LiteralPB(t, d); err != nil {
			return nil, fmt.Errorf("fluss: filter on %q: %w", p.column, err)
		}
	}
	return predicate.LeafPB(p.op, col.ID, lits...), nil
}
