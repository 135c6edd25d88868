package kvstore

import (
	"bytes"
	"fmt"
	"math"
	"math/big"
	"strconv"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/internal/row"
)

// Aggregate functions of the aggregation merge engine (Java rowmerger/aggregate/functions).
// An aggFunc folds the written value in into the accumulator acc (the stored value) and
// returns the new accumulator. Results may alias acc or in; B of concatenations and big
// decimals is freshly allocated.
type aggFunc func(acc, in row.Datum) (row.Datum, error)

// arrowLog tells whether the table's changelog is in the ARROW log format, whose writer
// refuses a DECIMAL wider than its column (see sumDecimalFits).
func newAggFunc(name string, t metadata.DataType, delimiter string, arrowLog bool) (aggFunc, error) {
	switch name {
	case metadata.AggLastValue:
		return func(_, in row.Datum) (row.Datum, error) { return in, nil }, nil
	case metadata.AggLastValueIgnoreNulls:
		return func(acc, in row.Datum) (row.Datum, error) {
			if in.Null {
				return acc, nil
			}
			return in, nil
		}, nil
	case metadata.AggFirstValue, metadata.AggFirstValueIgnoreNulls:
		// Java's two first-value functions share one rule: keep a non-NULL accumulator.
		return func(acc, in row.Datum) (row.Datum, error) {
			if !acc.Null {
				return acc, nil
			}
			return in, nil
		}, nil
	case metadata.AggSum:
		if arrowLog && t.Root == metadata.Decimal && t.Precision <= row.MaxCompactDecimalPrecision {
			return nullSkipping(func(a, b row.Datum) (row.Datum, error) {
				r, err := arith(t, a, b, false)
				if err == nil {
					err = sumDecimalFits(t, r)
				}
				return r, err
			}), nil
		}
		return nullSkipping(func(a, b row.Datum) (row.Datum, error) { return arith(t, a, b, false) }), nil
	case metadata.AggProduct:
		return nullSkipping(func(a, b row.Datum) (row.Datum, error) { return arith(t, a, b, true) }), nil
	case metadata.AggMax, metadata.AggMin:
		isMax := name == metadata.AggMax
		return nullSkipping(func(a, b row.Datum) (row.Datum, error) {
			c := compareDatum(&t, &a, &b)
			if (isMax && c < 0) || (!isMax && c > 0) {
				return b, nil
			}
			return a, nil
		}), nil
	case metadata.AggBoolAnd:
		return nullSkipping(func(a, b row.Datum) (row.Datum, error) {
			return row.Datum{I: boolInt(a.I != 0 && b.I != 0)}, nil
		}), nil
	case metadata.AggBoolOr:
		return nullSkipping(func(a, b row.Datum) (row.Datum, error) {
			return row.Datum{I: boolInt(a.I != 0 || b.I != 0)}, nil
		}), nil
	case metadata.AggListAgg, metadata.AggStringAgg:
		return nullSkipping(func(a, b row.Datum) (row.Datum, error) {
			out := make([]byte, 0, len(a.B)+len(delimiter)+len(b.B))
			out = append(append(append(out, a.B...), delimiter...), b.B...)
			return row.Datum{B: out}, nil
		}), nil
	case metadata.AggRBM32:
		return rbm32, nil
	case metadata.AggRBM64:
		return rbm64, nil
	}
	return nil, fmt.Errorf("unsupported aggregate function %q", name)
}

// nullSkipping wraps f so that a NULL on either side yields the other side, as every
// value-combining Java aggregator does.
func nullSkipping(f func(a, b row.Datum) (row.Datum, error)) aggFunc {
	return func(acc, in row.Datum) (row.Datum, error) {
		if acc.Null {
			return in, nil
		}
		if in.Null {
			return acc, nil
		}
		return f(acc, in)
	}
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// arith adds or multiplies two non-NULL numeric values with Java's overflow behaviour
// (FieldSumAgg, FieldProductAgg, DecimalUtils.add): integers wrap at their width, FLOAT is
// computed in single precision, and a DECIMAL result that does not fit the column's precision
// becomes NULL — except the sum of two DECIMALs of precision ≤ 18, which Java adds as unscaled
// longs (Math.addExact) without checking the precision: the wider sum is kept, and only an
// int64 overflow (then the BigDecimal path, whose precision check fails) gives NULL.
func arith(t metadata.DataType, a, b row.Datum, mul bool) (row.Datum, error) {
	if t.Root == metadata.Decimal && !mul && t.Precision <= row.MaxCompactDecimalPrecision {
		v := a.I + b.I
		if (a.I >= 0) == (b.I >= 0) && (v >= 0) != (a.I >= 0) {
			return row.NullDatum, nil // addExact overflowed
		}
		return row.Datum{I: v}, nil
	}
	switch t.Root {
	case metadata.TinyInt, metadata.SmallInt, metadata.Int, metadata.BigInt:
		v := a.I + b.I
		if mul {
			v = a.I * b.I
		}
		switch t.Root {
		case metadata.TinyInt:
			v = int64(int8(v))
		case metadata.SmallInt:
			v = int64(int16(v))
		case metadata.Int:
			v = int64(int32(v))
		}
		return row.Datum{I: v}, nil
	case metadata.Float:
		x, y := float32(a.F), float32(b.F)
		if mul {
			return row.Datum{F: float64(x * y)}, nil
		}
		return row.Datum{F: float64(x + y)}, nil
	case metadata.Double:
		if mul {
			return row.Datum{F: a.F * b.F}, nil
		}
		return row.Datum{F: a.F + b.F}, nil
	case metadata.Decimal:
		x, y := decimalBig(&t, &a), decimalBig(&t, &b)
		var r big.Int
		if mul {
			r.Mul(x, y)
			rescaleHalfUp(&r, t.Scale)
		} else {
			r.Add(x, y)
		}
		return decimalDatum(&t, &r), nil
	}
	return row.Datum{}, ferr.New(ferr.UnknownServerError, "type %s not supported by sum/product", t)
}

// sumDecimalFits refuses a sum of DECIMALs of precision ≤ 18 wider than its column for a
// table whose changelog is ARROW: Java keeps the wider sum (arith), and then its Arrow writer
// (DecimalVector.setSafe) throws, so the PUT_KV fails with UNKNOWN_SERVER_ERROR and nothing of
// the batch is stored. COMPACTED and INDEXED changelogs write the unscaled value unchecked, in
// Java as here.
func sumDecimalFits(t metadata.DataType, r row.Datum) error {
	if r.Null {
		return nil
	}
	digits := len(strconv.FormatInt(r.I, 10))
	if r.I < 0 {
		digits--
	}
	if digits > t.Precision {
		return ferr.New(ferr.UnknownServerError, "BigDecimal precision cannot be greater than that in the Arrow vector: %d > %d", digits, t.Precision)
	}
	return nil
}

func decimalBig(t *metadata.DataType, d *row.Datum) *big.Int {
	if t.Precision <= row.MaxCompactDecimalPrecision {
		return big.NewInt(d.I)
	}
	return twosToBig(d.B)
}

// decimalDatum converts an unscaled value to a Datum, NULL when it exceeds the precision.
func decimalDatum(t *metadata.DataType, v *big.Int) row.Datum {
	limit := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(t.Precision)), nil)
	if new(big.Int).Abs(v).Cmp(limit) >= 0 {
		return row.NullDatum
	}
	if t.Precision <= row.MaxCompactDecimalPrecision {
		return row.Datum{I: v.Int64()}
	}
	return row.Datum{B: bigToTwos(v)}
}

// rescaleHalfUp divides v by 10^scale rounding half away from zero (BigDecimal.setScale with
// HALF_UP), turning the product of two values of scale s back into scale s.
func rescaleHalfUp(v *big.Int, scale int) {
	if scale <= 0 {
		return
	}
	div := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale)), nil)
	q, m := new(big.Int).QuoRem(v, div, new(big.Int))
	m.Abs(m).Mul(m, big.NewInt(2))
	if m.Cmp(div) >= 0 {
		if v.Sign() < 0 {
			q.Sub(q, big.NewInt(1))
		} else {
			q.Add(q, big.NewInt(1))
		}
	}
	v.Set(q)
}

// twosToBig decodes big-endian two's complement bytes.
func twosToBig(b []byte) *big.Int {
	v := new(big.Int).SetBytes(b)
	if len(b) > 0 && b[0]&0x80 != 0 {
		v.Sub(v, new(big.Int).Lsh(big.NewInt(1), uint(8*len(b))))
	}
	return v
}

// bigToTwos encodes v as minimal big-endian two's complement (Java BigInteger.toByteArray).
func bigToTwos(v *big.Int) []byte {
	if v.Sign() >= 0 {
		b := v.Bytes()
		if len(b) == 0 || b[0]&0x80 != 0 {
			b = append([]byte{0}, b...)
		}
		return b
	}
	n := (v.BitLen()+8)/8 + 1
	m := new(big.Int).Add(v, new(big.Int).Lsh(big.NewInt(1), uint(8*n)))
	b := m.Bytes()
	for len(b) < n {
		b = append([]byte{0xff}, b...)
	}
	for len(b) > 1 && b[0] == 0xff && b[1]&0x80 != 0 {
		b = b[1:]
	}
	return b
}

// compareDatum orders two non-NULL values of type t as Java's InternalRowUtils.compare.
func compareDatum(t *metadata.DataType, a, b *row.Datum) int {
	switch t.Root {
	case metadata.Float, metadata.Double:
		return compareFloat(a.F, b.F)
	case metadata.Char, metadata.String, metadata.Binary, metadata.Bytes:
		return bytes.Compare(a.B, b.B)
	case metadata.Decimal:
		if t.Precision <= row.MaxCompactDecimalPrecision {
			return cmpInt(a.I, b.I)
		}
		return twosToBig(a.B).Cmp(twosToBig(b.B))
	case metadata.Timestamp, metadata.TimestampLTZ:
		if c := cmpInt(a.I, b.I); c != 0 {
			return c
		}
		return cmpInt(int64(a.Nanos), int64(b.Nanos))
	}
	return cmpInt(a.I, b.I)
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// compareFloat is Java's Double.compare: -0.0 < 0.0 and NaN above everything.
func compareFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	an, bn := math.IsNaN(a), math.IsNaN(b)
	switch {
	case an && bn:
		return 0
	case an:
		return 1
	case bn:
		return -1
	}
	sa, sb := math.Signbit(a), math.Signbit(b)
	switch {
	case sa && !sb:
		return -1
	case !sa && sb:
		return 1
	}
	return 0
}
