// Package predicate holds the row filters that Fluss 1.0 clients push down with a FETCH_LOG
// (PbPredicate), decoded against a schema, and decides from per-column statistics whether a
// log batch may hold a matching row.
//
// Invariant: MayMatch returns false only when no row described by the statistics can satisfy
// the predicate under any client's evaluation of it. Everything it cannot prove — a type it
// does not order, a NaN, a NULL literal, a column whose statistics are unknown, a type that
// changed between schemas — answers true. Pruning on a false answer is therefore always safe:
// clients filter the rows they receive again.
package predicate

import (
	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/internal/row"
)

// Op is a leaf function; the values are Fluss's PbLeafFunction codes.
type Op int32

// The 13 leaf functions of Fluss 1.0.
const (
	Equal Op = iota
	NotEqual
	LessThan
	LessOrEqual
	GreaterThan
	GreaterOrEqual
	IsNull
	IsNotNull
	StartsWith
	Contains
	EndsWith
	In
	NotIn
)

var opNames = [...]string{"=", "<>", "<", "<=", ">", ">=", "IS NULL", "IS NOT NULL", "STARTS WITH", "CONTAINS", "ENDS WITH", "IN", "NOT IN"}

func (o Op) String() string {
	if o >= 0 && int(o) < len(opNames) {
		return opNames[o]
	}
	return "?"
}

// ColumnStats describes one column of a batch. NullCount < 0 means unknown. When HasMinMax
// is false, Min and Max are unknown (nothing but the null count can prune); when true they
// bound every non-NULL value of the column, in the order compare defines for Type.
type ColumnStats struct {
	Type      metadata.DataType
	NullCount int64
	HasMinMax bool
	Min, Max  row.Datum
}

// Stats is what a predicate is evaluated over: one batch's row count and its columns,
// looked up by the field id of the predicate's schema. Column returns ok=false for a column
// it knows nothing about (so the predicate may match).
type Stats interface {
	RowCount() int64
	Column(fieldID int32) (ColumnStats, bool)
}

// Predicate is a decoded filter.
type Predicate interface {
	// MayMatch reports whether a batch with statistics s may hold a row that satisfies the
	// predicate (see the package invariant).
	MayMatch(s Stats) bool
	String() string
}

// Leaf compares one column (by field id) with literals.
type Leaf struct {
	Op       Op
	FieldID  int32
	Name     string            // column name, for messages
	Type     metadata.DataType // the column's type in the predicate's schema
	Literals []row.Datum       // in Type's representation (row.Datum)
}

// And holds when every child holds.
type And []Predicate

// Or holds when any child holds.
type Or []Predicate

// MayMatch: a batch may match a conjunction only if it may match every conjunct.
func (a And) MayMatch(s Stats) bool {
	for _, p := range a {
		if !p.MayMatch(s) {
			return false
		}
	}
	return true
}

// MayMatch: a batch may match a disjunction if it may match any disjunct.
func (o Or) MayMatch(s Stats) bool {
	for _, p := range o {
		if p.MayMatch(s) {
			return true
		}
	}
	return len(o) == 0 // Fluss builds no empty OR; be safe with one
}

func (a And) String() string { return join("AND", a) }
func (o Or) String() string  { return join("OR", o) }

func join(op string, ps []Predicate) string {
	s := "("
	for i, p := range ps {
		if i > 0 {
			s += " " + op + " "
		}
		s += p.String()
	}
	return s + ")"
}

func (l *Leaf) String() string {
	return l.Name + " " + l.Op.String()
}

// MayMatch evaluates the leaf over the column's statistics.
func (l *Leaf) MayMatch(s Stats) bool {
	c, ok := s.Column(l.FieldID)
	if !ok {
		return true
	}
	rows := s.RowCount()
	nonNull := int64(-1) // unknown
	if c.NullCount >= 0 && rows >= 0 {
		nonNull = rows - c.NullCount
	}
	switch l.Op {
	case IsNull:
		return c.NullCount != 0
	case IsNotNull:
		return nonNull != 0
	}
	// Every other function needs a non-NULL value in the column.
	if nonNull == 0 {
		return false
	}
	if !c.HasMinMax || !sameOrder(l.Type, c.Type) {
		return true
	}
	for _, lit := range l.Literals {
		if lit.Null {
			return true // SQL says no row matches; a client may say otherwise: keep
		}
	}
	switch l.Op {
	case Equal:
		return l.within(c, l.lit())
	case NotEqual:
		return !l.only(c, l.lit())
	case LessThan:
		return l.cmpKnown(c.Min, l.lit(), func(r int) bool { return r < 0 })
	case LessOrEqual:
		return l.cmpKnown(c.Min, l.lit(), func(r int) bool { return r <= 0 })
	case GreaterThan:
		return l.cmpKnown(c.Max, l.lit(), func(r int) bool { return r > 0 })
	case GreaterOrEqual:
		return l.cmpKnown(c.Max, l.lit(), func(r int) bool { return r >= 0 })
	case In:
		for _, v := range l.Literals {
			if l.within(c, v) {
				return true
			}
		}
		return false
	case NotIn:
		for _, v := range l.Literals {
			if l.only(c, v) {
				return false
			}
		}
		return true
	case StartsWith:
		if !isString(l.Type.Root) {
			return true
		}
		return mayHavePrefix(c.Min.B, c.Max.B, l.lit().B)
	}
	return true // CONTAINS, ENDS WITH: only the null count prunes them
}

// lit is the single literal of a binary function. Decode guarantees there is one.
func (l *Leaf) lit() row.Datum { return l.Literals[0] }

// cmpKnown reports want(compare(a, b)), or true when the two are not comparable.
func (l *Leaf) cmpKnown(a, b row.Datum, want func(int) bool) bool {
	r, ok := Compare(l.Type, a, b)
	return !ok || want(r)
}

// within reports whether v may lie in [Min, Max].
func (l *Leaf) within(c ColumnStats, v row.Datum) bool {
	lo, ok1 := Compare(l.Type, c.Min, v)
	hi, ok2 := Compare(l.Type, v, c.Max)
	return !ok1 || !ok2 || (lo <= 0 && hi <= 0)
}

// only reports whether every non-NULL value provably equals v (Min = Max = v).
func (l *Leaf) only(c ColumnStats, v row.Datum) bool {
	lo, ok1 := Compare(l.Type, c.Min, v)
	hi, ok2 := Compare(l.Type, c.Max, v)
	return ok1 && ok2 && lo == 0 && hi == 0 && exactEquality(l.Type.Root)
}

// mayHavePrefix reports whether some string s with min <= s <= max (byte order) starts
// with p. The strings with prefix p are exactly those in [p, p·0xff…); if max < p all are
// above the range, and if min > p without starting with p, min is above every one of them.
func mayHavePrefix(min, max, p []byte) bool {
	if string(max) < string(p) {
		return false
	}
	if string(min) <= string(p) {
		return true
	}
	return len(min) >= len(p) && string(min[:len(p)]) == string(p)
}
