package fluss

import (
	"encoding/hex"
	"fmt"
	"math"
	"math/big"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/internal/row"
)

// goType is everything the client knows about the Go side of one Fluss type root: how a Go
// value becomes a datum, how a datum becomes the Go value a Row holds (see Row), and how a
// partition value is spelled. goTypes holds one per root; which entry serves which root
// is listed, with the row and Arrow entries of the same root, in internal/typetable/table.go,
// from which gotypes_gen.go is generated.
type goType struct {
	// toDatum converts a non-nil, non-pointer Go value v (rv is reflect.ValueOf(v)).
	toDatum func(t metadata.DataType, v any, rv reflect.Value) (row.Datum, error)
	// fromDatum converts a non-null datum.
	fromDatum func(t metadata.DataType, d *row.Datum) any
	// partitionValue formats a non-null partition-key value as Java's PartitionUtils does;
	// nil for roots that cannot be partition keys.
	partitionValue func(t metadata.DataType, d *row.Datum) (string, error)
}

// goTypes is indexed by TypeRoot. It is filled by init because the nested types' entries
// call back into toDatum and fromDatum, which read it.
var goTypes [metadata.LastTypeRoot + 1]goType

func init() { goTypes = goTypeTable() }

// The entries of goTypeTable (gotypes_gen.go) that serve one root each; shared ones
// (stringType, bytesType, timestampType) follow.

var booleanGoType = goType{
	toDatum: func(t metadata.DataType, v any, _ reflect.Value) (row.Datum, error) {
		b, ok := v.(bool)
		if !ok {
			return badValue(t, v)
		}
		if b {
			return row.Datum{I: 1}, nil
		}
		return row.Datum{}, nil
	},
	fromDatum: func(_ metadata.DataType, d *row.Datum) any { return d.I != 0 },
	partitionValue: func(_ metadata.DataType, d *row.Datum) (string, error) {
		return strconv.FormatBool(d.I != 0), nil
	},
}

var tinyIntGoType = integerType(8, func(d *row.Datum) any { return int8(d.I) })

var smallIntGoType = integerType(16, func(d *row.Datum) any { return int16(d.I) })

var intGoType = integerType(32, func(d *row.Datum) any { return int32(d.I) })

var bigIntGoType = integerType(64, func(d *row.Datum) any { return d.I })

var floatGoType = floatType(32, func(d *row.Datum) any { return float32(d.F) })

var doubleGoType = floatType(64, func(d *row.Datum) any { return d.F })

var decimalGoType = goType{
	toDatum: decimalToDatum,
	fromDatum: func(t metadata.DataType, d *row.Datum) any {
		if t.Precision <= row.MaxCompactDecimalPrecision {
			return Decimal{Unscaled: big.NewInt(d.I), Scale: t.Scale}
		}
		return Decimal{Unscaled: fromTwosComplement(d.B), Scale: t.Scale}
	},
}

var dateGoType = goType{
	toDatum: func(t metadata.DataType, v any, _ reflect.Value) (row.Datum, error) {
		switch x := v.(type) {
		case time.Time:
			y, m, dd := x.Date()
			return row.Datum{I: time.Date(y, m, dd, 0, 0, 0, 0, time.UTC).Unix() / 86400}, nil
		case int32:
			return row.Datum{I: int64(x)}, nil
		}
		return badValue(t, v)
	},
	fromDatum: func(_ metadata.DataType, d *row.Datum) any { return time.Unix(d.I*86400, 0).UTC() },
	partitionValue: func(_ metadata.DataType, d *row.Datum) (string, error) {
		return time.Unix(d.I*86400, 0).UTC().Format("2006-01-02"), nil
	},
}

var timeGoType = goType{
	toDatum: func(t metadata.DataType, v any, _ reflect.Value) (row.Datum, error) {
		switch x := v.(type) {
		case time.Duration:
			return row.Datum{I: x.Milliseconds()}, nil
		case int32:
			return row.Datum{I: int64(x)}, nil
		}
		return badValue(t, v)
	},
	fromDatum: func(_ metadata.DataType, d *row.Datum) any { return time.Duration(d.I) * time.Millisecond },
	partitionValue: func(_ metadata.DataType, d *row.Datum) (string, error) {
		ms := d.I
		return fmt.Sprintf("%02d-%02d-%02d_%03d", ms/3600000, ms/60000%60, ms/1000%60, ms%1000), nil
	},
}

var arrayGoType = goType{
	toDatum: func(t metadata.DataType, v any, rv reflect.Value) (row.Datum, error) {
		if rv.Kind() != reflect.Slice && rv.Kind() != reflect.Array {
			return badValue(t, v)
		}
		out := row.Datum{Elems: make([]row.Datum, rv.Len())}
		for i := range out.Elems {
			d, err := toDatum(*t.Elem, rv.Index(i).Interface())
			if err != nil {
				return row.Datum{}, fmt.Errorf("element %d: %w", i, err)
			}
			out.Elems[i] = d
		}
		return out, nil
	},
	fromDatum: func(t metadata.DataType, d *row.Datum) any {
		out := make([]any, len(d.Elems))
		for i := range d.Elems {
			out[i] = fromDatum(*t.Elem, &d.Elems[i])
		}
		return out
	},
}

var mapGoType = goType{
	toDatum: func(t metadata.DataType, v any, rv reflect.Value) (row.Datum, error) {
		if rv.Kind() != reflect.Map {
			return badValue(t, v)
		}
		out := row.Datum{}
		it := rv.MapRange()
		for it.Next() {
			k, err := toDatum(*t.Elem, it.Key().Interface())
			if err != nil {
				return row.Datum{}, fmt.Errorf("map key: %w", err)
			}
			val, err := toDatum(*t.Value, it.Value().Interface())
			if err != nil {
				return row.Datum{}, fmt.Errorf("map value: %w", err)
			}
			out.Elems, out.Vals = append(out.Elems, k), append(out.Vals, val)
		}
		return out, nil
	},
	fromDatum: func(t metadata.DataType, d *row.Datum) any {
		out := make(map[any]any, len(d.Elems))
		for i := range d.Elems {
			k := fromDatum(*t.Elem, &d.Elems[i])
			if b, ok := k.([]byte); ok {
				k = string(b)
			}
			out[k] = fromDatum(*t.Value, &d.Vals[i])
		}
		return out
	},
}

var rowGoType = goType{
	toDatum: func(t metadata.DataType, v any, rv reflect.Value) (row.Datum, error) {
		if rv.Kind() != reflect.Slice || rv.Len() != len(t.Fields) {
			return badValue(t, v)
		}
		out := row.Datum{Elems: make([]row.Datum, len(t.Fields))}
		for i, f := range t.Fields {
			d, err := toDatum(f.Type, rv.Index(i).Interface())
			if err != nil {
				return row.Datum{}, fmt.Errorf("field %s: %w", f.Name, err)
			}
			out.Elems[i] = d
		}
		return out, nil
	},
	fromDatum: func(t metadata.DataType, d *row.Datum) any {
		out := make(Row, len(d.Elems))
		for i := range d.Elems {
			out[i] = fromDatum(t.Fields[i].Type, &d.Elems[i])
		}
		return out
	},
}

// goTypeOf returns the entry of t's root, or nil for roots the client does not know.
func goTypeOf(t metadata.DataType) *goType {
	if int(t.Root) >= len(goTypes) || goTypes[t.Root].toDatum == nil {
		return nil
	}
	return &goTypes[t.Root]
}

// integerType serves TINYINT .. BIGINT: any Go integer that fits the type's bits.
func integerType(bits uint, from func(*row.Datum) any) goType {
	return goType{
		toDatum: func(t metadata.DataType, v any, rv reflect.Value) (row.Datum, error) {
			n, ok := asInt(rv)
			if !ok {
				return badValue(t, v)
			}
			if bits < 64 && (n < -(1<<(bits-1)) || n >= 1<<(bits-1)) {
				return row.Datum{}, fmt.Errorf("%d out of range for %s", n, t)
			}
			return row.Datum{I: n}, nil
		},
		fromDatum: func(_ metadata.DataType, d *row.Datum) any { return from(d) },
		partitionValue: func(_ metadata.DataType, d *row.Datum) (string, error) {
			return strconv.FormatInt(d.I, 10), nil
		},
	}
}

// floatType serves FLOAT and DOUBLE: either Go float, or any Go integer.
func floatType(bits int, from func(*row.Datum) any) goType {
	return goType{
		toDatum: func(t metadata.DataType, v any, rv reflect.Value) (row.Datum, error) {
			switch x := v.(type) {
			case float32:
				return row.Datum{F: float64(x)}, nil
			case float64:
				return row.Datum{F: x}, nil
			}
			if n, ok := asInt(rv); ok {
				return row.Datum{F: float64(n)}, nil
			}
			return badValue(t, v)
		},
		fromDatum: func(_ metadata.DataType, d *row.Datum) any { return from(d) },
		partitionValue: func(_ metadata.DataType, d *row.Datum) (string, error) {
			f := d.F
			switch {
			case math.IsNaN(f):
				return "NaN", nil
			case math.IsInf(f, 1):
				return "Inf", nil
			case math.IsInf(f, -1):
				return "-Inf", nil
			}
			s := strconv.FormatFloat(f, 'f', -1, bits)
			if !strings.Contains(s, ".") {
				s += ".0"
			}
			return strings.ReplaceAll(s, ".", "_"), nil
		},
	}
}

// textToDatum accepts a string or []byte for CHAR, STRING, BINARY and BYTES.
func textToDatum(t metadata.DataType, v any, _ reflect.Value) (row.Datum, error) {
	switch x := v.(type) {
	case string:
		return row.Datum{B: []byte(x)}, nil
	case []byte:
		return row.Datum{B: x}, nil
	}
	return badValue(t, v)
}

// stringType serves CHAR and STRING (Go string).
var stringType = goType{
	toDatum:   textToDatum,
	fromDatum: func(_ metadata.DataType, d *row.Datum) any { return string(d.B) },
	partitionValue: func(_ metadata.DataType, d *row.Datum) (string, error) {
		return string(d.B), nil
	},
}

// bytesType serves BINARY and BYTES (Go []byte, copied out of the decoded buffer).
var bytesType = goType{
	toDatum:   textToDatum,
	fromDatum: func(_ metadata.DataType, d *row.Datum) any { return append([]byte{}, d.B...) },
	partitionValue: func(_ metadata.DataType, d *row.Datum) (string, error) {
		return hex.EncodeToString(d.B), nil
	},
}

// timestampType serves TIMESTAMP and TIMESTAMP_LTZ (Go time.Time; read back in UTC).
var timestampType = goType{
	toDatum: func(t metadata.DataType, v any, _ reflect.Value) (row.Datum, error) {
		x, ok := v.(time.Time)
		if !ok {
			return badValue(t, v)
		}
		ms := x.UnixMilli()
		return row.Datum{I: ms, Nanos: int32(x.Sub(time.UnixMilli(ms)).Nanoseconds())}, nil
	},
	fromDatum: func(_ metadata.DataType, d *row.Datum) any {
		return time.UnixMilli(d.I).Add(time.Duration(d.Nanos)).UTC()
	},
	partitionValue: func(_ metadata.DataType, d *row.Datum) (string, error) {
		ts := time.UnixMilli(d.I).Add(time.Duration(d.Nanos)).UTC()
		frac := strings.TrimRight(fmt.Sprintf("%09d", ts.Nanosecond()), "0")
		return ts.Format("2006-01-02-15-04-05") + "_" + frac, nil
	},
}

// decimalToDatum accepts a Decimal, a decimal string, an unscaled *big.Int at the column's
// scale, or any Go integer.
func decimalToDatum(t metadata.DataType, v any, rv reflect.Value) (row.Datum, error) {
	var d Decimal
	switch x := v.(type) {
	case Decimal:
		d = x
	case string:
		var err error
		if d, err = ParseDecimal(x); err != nil {
			return row.Datum{}, err
		}
	case *big.Int:
		d = Decimal{Unscaled: x, Scale: t.Scale}
	default:
		n, ok := asInt(rv)
		if !ok {
			return badValue(t, v)
		}
		d = Decimal{Unscaled: big.NewInt(n), Scale: 0}
	}
	u, err := d.rescale(t.Scale)
	if err != nil {
		return row.Datum{}, err
	}
	if len(u.Text(10)) > t.Precision+boolInt(u.Sign() < 0) {
		return row.Datum{}, fmt.Errorf("decimal %s exceeds precision %d", d, t.Precision)
	}
	if t.Precision <= row.MaxCompactDecimalPrecision {
		return row.Datum{I: u.Int64()}, nil
	}
	return row.Datum{B: twosComplement(u)}, nil
}

func badValue(t metadata.DataType, v any) (row.Datum, error) {
	return row.Datum{}, fmt.Errorf("cannot use %T as %s", v, t)
}

// toDatum converts one Go value to a datum of type t.
func toDatum(t metadata.DataType, v any) (row.Datum, error) {
	if v == nil {
		if t.NotNull {
			return row.Datum{}, fmt.Errorf("NULL for a NOT NULL %s", t)
		}
		return row.NullDatum, nil
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Pointer {
		if rv.IsNil() {
			return toDatum(t, nil)
		}
		if _, isBig := v.(*big.Int); !isBig {
			return toDatum(t, rv.Elem().Interface())
		}
	}
	gt := goTypeOf(t)
	if gt == nil {
		return badValue(t, v)
	}
	return gt.toDatum(t, v, rv)
}

// fromDatum converts one datum to its Go value (see Row).
func fromDatum(t metadata.DataType, d *row.Datum) any {
	gt := goTypeOf(t)
	if d.Null || gt == nil {
		return nil
	}
	return gt.fromDatum(t, d)
}

// partitionValueString formats one partition value as Java's PartitionUtils does.
func partitionValueString(t metadata.DataType, d *row.Datum) (string, error) {
	gt := goTypeOf(t)
	if gt == nil || gt.partitionValue == nil {
		return "", fmt.Errorf("type %s cannot be a partition key", t)
	}
	return gt.partitionValue(t, d)
}
