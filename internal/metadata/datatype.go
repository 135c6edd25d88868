package metadata

import (
	"errors"
	"strconv"
	"strings"
)

// Parameter limits of the parameterised types, as enforced by Fluss's type constructors.
const (
	MinDecimalPrecision = 1
	MaxDecimalPrecision = 38
	MaxTimePrecision    = 9 // TIME, TIMESTAMP and TIMESTAMP_LTZ precisions are 0..9
	MinLength           = 1 // CHAR and BINARY lengths are at least 1

	// Defaults used when a type is built without explicit parameters.
	DefaultDecimalPrecision   = 10
	DefaultTimePrecision      = 0
	DefaultTimestampPrecision = 6
)

// String returns the Fluss DataTypeRoot name of r (e.g. INTEGER, TIMESTAMP_WITHOUT_TIME_ZONE),
// the form used in the JSON "type" field.
func (r TypeRoot) String() string {
	if r.Valid() {
		return typeRootNames[r]
	}
	return "TypeRoot(" + strconv.Itoa(int(r)) + ")"
}

// Valid reports whether r is one of the defined type roots.
func (r TypeRoot) Valid() bool { return r >= Boolean && r <= LastTypeRoot }

// TypeRoots returns every type root, in order.
func TypeRoots() []TypeRoot {
	out := make([]TypeRoot, 0, LastTypeRoot)
	for r := Boolean; r <= LastTypeRoot; r++ {
		out = append(out, r)
	}
	return out
}

// typeRootByName maps JSON "type" values back to roots.
var typeRootByName = func() map[string]TypeRoot {
	m := make(map[string]TypeRoot, len(typeRootNames))
	for r := Boolean; r <= LastTypeRoot; r++ {
		m[typeRootNames[r]] = r
	}
	return m
}()

// IsNested reports whether t is ARRAY, MAP or ROW — the types that may not be key columns.
func (t DataType) IsNested() bool {
	return t.Root == Array || t.Root == Map || t.Root == Row
}

// Nullable returns a copy of t with the given nullability; nested types are not changed.
func (t DataType) Nullable(nullable bool) DataType {
	t.NotNull = !nullable
	return t
}

// Equal reports whether t and u are the same type, including nullability, parameters, nested
// types, field names and descriptions. Field ids are ignored.
func (t DataType) Equal(u DataType) bool {
	if t.Root != u.Root || t.NotNull != u.NotNull {
		return false
	}
	return !t.Root.Valid() || t.Root.def().params.equal(&t, &u)
}

func ptrTypeEqual(a, b *DataType) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Equal(*b)
}

// String renders t in Fluss's SQL-like summary form, as Java's DataType.toString does:
// "INT NOT NULL", "DECIMAL(10, 2)", "TIMESTAMP_LTZ(6)", "ARRAY<STRING>", "MAP<INT, STRING>",
// "ROW<`a` INT, `b` STRING>".
func (t DataType) String() string {
	var sb strings.Builder
	t.appendString(&sb)
	return sb.String()
}

func (t DataType) appendString(sb *strings.Builder) {
	if t.Root.Valid() {
		def := t.Root.def()
		sb.WriteString(def.sql[0])
		def.params.appendSQL(sb, &t)
	} else {
		sb.WriteString(t.Root.String())
	}
	if t.NotNull {
		sb.WriteString(" NOT NULL")
	}
}

func appendPtrType(sb *strings.Builder, t *DataType) {
	if t == nil {
		sb.WriteString("?")
		return
	}
	t.appendString(sb)
}

// checkParams reports the first parameter of t (not of its children) that Fluss's type
// constructors reject, or "" when t is well-formed at this level.
func (t DataType) checkParams() string {
	if !t.Root.Valid() {
		return "unknown type root " + t.Root.String()
	}
	return t.Root.def().params.check(&t)
}

// Validate reports an error when t or any nested type has an unknown root or parameters Fluss
// rejects (DECIMAL precision 1..38 and scale 0..precision, time precisions 0..9, lengths ≥ 1,
// unique ROW field names).
func (t DataType) Validate() error {
	if msg := t.checkParams(); msg != "" {
		return errors.New(msg)
	}
	return t.Root.def().params.validateChildren(&t)
}
