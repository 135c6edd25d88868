package fluss

import (
	"fmt"
	"math"
	"math/big"
	"reflect"
	"time"

	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/internal/row"
)

// Row is one table row as Go values, one per column in schema order (or per projected column
// when read through a projection). NULL is nil. The Go types are:
//
//	BOOLEAN                   bool
//	TINYINT/SMALLINT/INT/BIGINT int8/int16/int32/int64 (any Go integer is accepted on input
//	                          when it fits)
//	FLOAT/DOUBLE              float32/float64 (either is accepted on input)
//	CHAR/STRING               string ([]byte accepted on input)
//	BINARY/BYTES              []byte (string accepted on input)
//	DECIMAL                   Decimal (string such as "12.30", int64 or *big.Int unscaled are
//	                          accepted on input)
//	DATE                      time.Time at midnight UTC (the date of the value's wall clock on
//	                          input; int32 days since epoch accepted)
//	TIME                      time.Duration since midnight (millisecond precision)
//	TIMESTAMP                 time.Time in UTC whose wall clock is the stored value (a
//	                          time.Time's UTC wall clock on input)
//	TIMESTAMP_LTZ             time.Time (the instant)
//	ARRAY                     []any (any slice accepted on input)
//	MAP                       map[any]any (any map accepted on input; BINARY keys are read
//	                          as string)
//	ROW                       Row
type Row []any

// Decimal is a DECIMAL value: Unscaled × 10^-Scale.
type Decimal struct {
	Unscaled *big.Int
	Scale    int
}

// NewDecimal returns unscaled × 10^-scale.
func NewDecimal(unscaled int64, scale int) Decimal {
	return Decimal{Unscaled: big.NewInt(unscaled), Scale: scale}
}

// ParseDecimal parses a decimal string such as "-12.345".
func ParseDecimal(s string) (Decimal, error) {
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		return Decimal{}, fmt.Errorf("fluss: invalid decimal %q", s)
	}
	scale := 0
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == '.' {
			scale = len(s) - 1 - i
			break
		}
	}
	u := new(big.Int).Mul(r.Num(), new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale)), nil))
	u.Quo(u, r.Denom())
	return Decimal{Unscaled: u, Scale: scale}, nil
}

// String formats the decimal with exactly Scale fractional digits.
func (d Decimal) String() string {
	if d.Unscaled == nil {
		return "0"
	}
	r := new(big.Rat).SetFrac(d.Unscaled, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(d.Scale)), nil))
	return r.FloatString(d.Scale)
}

// rescale returns the unscaled value at scale, failing if digits would be lost.
func (d Decimal) rescale(scale int) (*big.Int, error) {
	u := d.Unscaled
	if u == nil {
		u = new(big.Int)
	}
	switch {
	case scale == d.Scale:
		return u, nil
	case scale > d.Scale:
		return new(big.Int).Mul(u, pow10(scale-d.Scale)), nil
	}
	q, m := new(big.Int).QuoRem(u, pow10(d.Scale-scale), new(big.Int))
	if m.Sign() != 0 {
		return nil, fmt.Errorf("decimal %s does not fit scale %d", d, scale)
	}
	return q, nil
}

func pow10(n int) *big.Int { return new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(n)), nil) }

// toDatums converts a Row to datums for the given columns.
func toDatums(cols []metadata.Column, r Row, dst []row.Datum) ([]row.Datum, error) {
	if len(r) != len(cols) {
		return nil, fmt.Errorf("fluss: row has %d values, the table has %d columns", len(r), len(cols))
	}
	dst = dst[:0]
	for i, c := range cols {
		d, err := toDatum(c.Type, r[i])
		if err != nil {
			return nil, fmt.Errorf("fluss: column %s: %w", c.Name, err)
		}
		dst = append(dst, d)
	}
	return dst, nil
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
	bad := func() (row.Datum, error) { return row.Datum{}, fmt.Errorf("cannot use %T as %s", v, t) }
	switch t.Root {
	case metadata.Boolean:
		b, ok := v.(bool)
		if !ok {
			return bad()
		}
		if b {
			return row.Datum{I: 1}, nil
		}
		return row.Datum{}, nil
	case metadata.TinyInt, metadata.SmallInt, metadata.Int, metadata.BigInt:
		n, ok := asInt(rv)
		if !ok {
			return bad()
		}
		bits := map[metadata.TypeRoot]uint{metadata.TinyInt: 8, metadata.SmallInt: 16, metadata.Int: 32, metadata.BigInt: 64}[t.Root]
		if bits < 64 && (n < -(1<<(bits-1)) || n >= 1<<(bits-1)) {
			return row.Datum{}, fmt.Errorf("%d out of range for %s", n, t)
		}
		return row.Datum{I: n}, nil
	case metadata.Float, metadata.Double:
		switch x := v.(type) {
		case float32:
			return row.Datum{F: float64(x)}, nil
		case float64:
			return row.Datum{F: x}, nil
		}
		if n, ok := asInt(rv); ok {
			return row.Datum{F: float64(n)}, nil
		}
		return bad()
	case metadata.Char, metadata.String, metadata.Binary, metadata.Bytes:
		switch x := v.(type) {
		case string:
			return row.Datum{B: []byte(x)}, nil
		case []byte:
			return row.Datum{B: x}, nil
		}
		return bad()
	case metadata.Decimal:
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
				return bad()
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
	case metadata.Date:
		switch x := v.(type) {
		case time.Time:
			y, m, dd := x.Date()
			return row.Datum{I: time.Date(y, m, dd, 0, 0, 0, 0, time.UTC).Unix() / 86400}, nil
		case int32:
			return row.Datum{I: int64(x)}, nil
		}
		return bad()
	case metadata.Time:
		switch x := v.(type) {
		case time.Duration:
			return row.Datum{I: x.Milliseconds()}, nil
		case int32:
			return row.Datum{I: int64(x)}, nil
		}
		return bad()
	case metadata.Timestamp, metadata.TimestampLTZ:
		x, ok := v.(time.Time)
		if !ok {
			return bad()
		}
		ms := x.UnixMilli()
		return row.Datum{I: ms, Nanos: int32(x.Sub(time.UnixMilli(ms)).Nanoseconds())}, nil
	case metadata.Array:
		if rv.Kind() != reflect.Slice && rv.Kind() != reflect.Array {
			return bad()
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
	case metadata.Map:
		if rv.Kind() != reflect.Map {
			return bad()
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
	case metadata.Row:
		if rv.Kind() != reflect.Slice || rv.Len() != len(t.Fields) {
			return bad()
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
	}
	return bad()
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func asInt(rv reflect.Value) (int64, bool) {
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return rv.Int(), true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		u := rv.Uint()
		if u > math.MaxInt64 {
			return 0, false
		}
		return int64(u), true
	}
	return 0, false
}

// twosComplement returns the minimal big-endian two's complement bytes of u (Java
// BigInteger.toByteArray).
func twosComplement(u *big.Int) []byte {
	if u.Sign() >= 0 {
		b := u.Bytes()
		if len(b) == 0 || b[0]&0x80 != 0 {
			b = append([]byte{0}, b...)
		}
		return b
	}
	// -u - 1, bytes inverted.
	n := len(new(big.Int).Neg(u).Bytes()) + 1
	mod := new(big.Int).Lsh(big.NewInt(1), uint(n*8))
	b := new(big.Int).Add(mod, u).Bytes()
	for len(b) < n {
		b = append([]byte{0xff}, b...)
	}
	for len(b) > 1 && b[0] == 0xff && b[1]&0x80 != 0 {
		b = b[1:]
	}
	return b
}

func fromTwosComplement(b []byte) *big.Int {
	u := new(big.Int).SetBytes(b)
	if len(b) > 0 && b[0]&0x80 != 0 {
		u.Sub(u, new(big.Int).Lsh(big.NewInt(1), uint(len(b)*8)))
	}
	return u
}

// fromDatums converts decoded datums to a Row, copying byte values.
func fromDatums(cols []metadata.Column, ds []row.Datum) Row {
	out := make(Row, len(ds))
	for i := range ds {
		out[i] = fromDatum(cols[i].Type, &ds[i])
	}
	return out
}

// fromDatum converts one datum to its Go value (see Row).
func fromDatum(t metadata.DataType, d *row.Datum) any {
	if d.Null {
		return nil
	}
	switch t.Root {
	case metadata.Boolean:
		return d.I != 0
	case metadata.TinyInt:
		return int8(d.I)
	case metadata.SmallInt:
		return int16(d.I)
	case metadata.Int:
		return int32(d.I)
	case metadata.BigInt:
		return d.I
	case metadata.Float:
		return float32(d.F)
	case metadata.Double:
		return d.F
	case metadata.Char, metadata.String:
		return string(d.B)
	case metadata.Binary, metadata.Bytes:
		return append([]byte{}, d.B...)
	case metadata.Decimal:
		if t.Precision <= row.MaxCompactDecimalPrecision {
			return Decimal{Unscaled: big.NewInt(d.I), Scale: t.Scale}
		}
		return Decimal{Unscaled: fromTwosComplement(d.B), Scale: t.Scale}
	case metadata.Date:
		return time.Unix(d.I*86400, 0).UTC()
	case metadata.Time:
		return time.Duration(d.I) * time.Millisecond
	case metadata.Timestamp, metadata.TimestampLTZ:
		return time.UnixMilli(d.I).Add(time.Duration(d.Nanos)).UTC()
	case metadata.Array:
		out := make([]any, len(d.Elems))
		for i := range d.Elems {
			out[i] = fromDatum(*t.Elem, &d.Elems[i])
		}
		return out
	case metadata.Map:
		out := make(map[any]any, len(d.Elems))
		for i := range d.Elems {
			k := fromDatum(*t.Elem, &d.Elems[i])
			if b, ok := k.([]byte); ok {
				k = string(b)
			}
			out[k] = fromDatum(*t.Value, &d.Vals[i])
		}
		return out
	case metadata.Row:
		out := make(Row, len(d.Elems))
		for i := range d.Elems {
			out[i] = fromDatum(t.Fields[i].Type, &d.Elems[i])
		}
		return out
	}
	return nil
}
