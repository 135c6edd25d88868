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
	switch t.Root {
	case Char, Binary:
		return t.Length == u.Length
	case Decimal:
		return t.Precision == u.Precision && t.Scale == u.Scale
	case Time, Timestamp, TimestampLTZ:
		return t.Precision == u.Precision
	case Array:
		return ptrTypeEqual(t.Elem, u.Elem)
	case Map:
		return ptrTypeEqual(t.Elem, u.Elem) && ptrTypeEqual(t.Value, u.Value)
	case Row:
		if len(t.Fields) != len(u.Fields) {
			return false
		}
		for i := range t.Fields {
			a, b := &t.Fields[i], &u.Fields[i]
			if a.Name != b.Name || a.Description != b.Description || !a.Type.Equal(b.Type) {
				return false
			}
		}
	}
	return true
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
	switch t.Root {
	case Boolean:
		sb.WriteString("BOOLEAN")
	case TinyInt:
		sb.WriteString("TINYINT")
	case SmallInt:
		sb.WriteString("SMALLINT")
	case Int:
		sb.WriteString("INT")
	case BigInt:
		sb.WriteString("BIGINT")
	case Float:
		sb.WriteString("FLOAT")
	case Double:
		sb.WriteString("DOUBLE")
	case String:
		sb.WriteString("STRING")
	case Bytes:
		sb.WriteString("BYTES")
	case Date:
		sb.WriteString("DATE")
	case Char:
		writeParam(sb, "CHAR(", t.Length)
	case Binary:
		writeParam(sb, "BINARY(", t.Length)
	case Decimal:
		sb.WriteString("DECIMAL(")
		sb.WriteString(strconv.Itoa(t.Precision))
		sb.WriteString(", ")
		sb.WriteString(strconv.Itoa(t.Scale))
		sb.WriteByte(')')
	case Time:
		writeParam(sb, "TIME(", t.Precision)
	case Timestamp:
		writeParam(sb, "TIMESTAMP(", t.Precision)
	case TimestampLTZ:
		writeParam(sb, "TIMESTAMP_LTZ(", t.Precision)
	case Array:
		sb.WriteString("ARRAY<")
		appendPtrType(sb, t.Elem)
		sb.WriteByte('>')
	case Map:
		sb.WriteString("MAP<")
		appendPtrType(sb, t.Elem)
		sb.WriteString(", ")
		appendPtrType(sb, t.Value)
		sb.WriteByte('>')
	case Row:
		sb.WriteString("ROW<")
		for i := range t.Fields {
			if i > 0 {
				sb.WriteString(", ")
			}
			f := &t.Fields[i]
			sb.WriteByte('`')
			sb.WriteString(strings.ReplaceAll(f.Name, "`", "``"))
			sb.WriteString("` ")
			f.Type.appendString(sb)
		}
		sb.WriteByte('>')
	default:
		sb.WriteString(t.Root.String())
	}
	if t.NotNull {
		sb.WriteString(" NOT NULL")
	}
}

func writeParam(sb *strings.Builder, prefix string, n int) {
	sb.WriteString(prefix)
	sb.WriteString(strconv.Itoa(n))
	sb.WriteByte(')')
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
	switch t.Root {
	case Char, Binary:
		if t.Length < MinLength {
			return t.Root.String() + " length must be at least 1, got " + strconv.Itoa(t.Length)
		}
	case Decimal:
		if t.Precision < MinDecimalPrecision || t.Precision > MaxDecimalPrecision {
			return "DECIMAL precision must be between 1 and 38 (both inclusive), got " + strconv.Itoa(t.Precision)
		}
		if t.Scale < 0 || t.Scale > t.Precision {
			return "DECIMAL scale must be between 0 and the precision " + strconv.Itoa(t.Precision) +
				" (both inclusive), got " + strconv.Itoa(t.Scale)
		}
	case Time, Timestamp, TimestampLTZ:
		if t.Precision < 0 || t.Precision > MaxTimePrecision {
			return t.Root.String() + " precision must be between 0 and 9 (both inclusive), got " + strconv.Itoa(t.Precision)
		}
	case Array:
		if t.Elem == nil {
			return "ARRAY without element type"
		}
	case Map:
		if t.Elem == nil || t.Value == nil {
			return "MAP without key or value type"
		}
	case Row:
		seen := make(map[string]struct{}, len(t.Fields))
		for i := range t.Fields {
			if _, dup := seen[t.Fields[i].Name]; dup {
				return "ROW field names must be unique, found duplicate " + strconv.Quote(t.Fields[i].Name)
			}
			seen[t.Fields[i].Name] = struct{}{}
		}
	default:
		if !t.Root.Valid() {
			return "unknown type root " + t.Root.String()
		}
	}
	return ""
}

// Validate reports an error when t or any nested type has an unknown root or parameters Fluss
// rejects (DECIMAL precision 1..38 and scale 0..precision, time precisions 0..9, lengths ≥ 1,
// unique ROW field names).
func (t DataType) Validate() error {
	if msg := t.checkParams(); msg != "" {
		return errors.New(msg)
	}
	switch t.Root {
	case Array:
		return t.Elem.Validate()
	case Map:
		if err := t.Elem.Validate(); err != nil {
			return err
		}
		return t.Value.Validate()
	case Row:
		for i := range t.Fields {
			if err := t.Fields[i].Type.Validate(); err != nil {
				return err
			}
		}
	}
	return nil
}
