package fluss

import (
	"fmt"
	"math"
	"math/big"
	"reflect"
	"slices"

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
	dst = slices.Grow(dst[:0], len(cols))[:len(cols)]
	for i, c := range cols {
		if fastDatum(c.Type.Root, r[i], &dst[i]) {
			continue
		}
		d, err := toDatum(c.Type, r[i])
		if err != nil {
			return nil, fmt.Errorf("fluss: column %s: %w", c.Name, err)
		}
		dst[i] = d
	}
	return dst, nil
}

// fastDatum converts the commonest pairings of Go value and column type in place, the same
// way toDatum does, without its reflection and per-type dispatch (which made up a third of
// the writer's CPU per row); it reports false for everything else.
func fastDatum(root metadata.TypeRoot, v any, d *row.Datum) bool {
	switch x := v.(type) {
	case int64:
		if root == metadata.BigInt {
			*d = row.Datum{I: x}
			return true
		}
	case int32:
		if root == metadata.Int || root == metadata.BigInt {
			*d = row.Datum{I: int64(x)}
			return true
		}
	case float64:
		if root == metadata.Double {
			*d = row.Datum{F: x}
			return true
		}
	case string:
		if root == metadata.String || root == metadata.Bytes {
			*d = row.Datum{B: []byte(x)}
			return true
		}
	case []byte:
		if root == metadata.String || root == metadata.Bytes {
			*d = row.Datum{B: x}
			return true
		}
	}
	return false
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
