package predicate

import (
	"bytes"
	"math"
	"math/big"

	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/internal/row"
)

// Compare orders two non-NULL values of type t (row.Datum representation): -1, 0 or 1, and
// ok=false when they are not ordered (a NaN, a type without an order here).
func Compare(t metadata.DataType, a, b row.Datum) (int, bool) {
	switch t.Root {
	case metadata.Boolean, metadata.TinyInt, metadata.SmallInt, metadata.Int, metadata.BigInt,
		metadata.Date, metadata.Time:
		return cmpInt(a.I, b.I), true
	case metadata.Float, metadata.Double:
		if math.IsNaN(a.F) || math.IsNaN(b.F) {
			return 0, false
		}
		switch {
		case a.F < b.F:
			return -1, true
		case a.F > b.F:
			return 1, true
		}
		return 0, true
	case metadata.Char, metadata.String, metadata.Binary, metadata.Bytes:
		return bytes.Compare(a.B, b.B), true
	case metadata.Decimal:
		if t.Precision <= row.MaxCompactDecimalPrecision {
			return cmpInt(a.I, b.I), true
		}
		return signedBig(a.B).Cmp(signedBig(b.B)), true
	case metadata.Timestamp, metadata.TimestampLTZ:
		if r := cmpInt(a.I, b.I); r != 0 {
			return r, true
		}
		return cmpInt(int64(a.Nanos), int64(b.Nanos)), true
	}
	return 0, false
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

// signedBig reads a big-endian two's complement integer (Java's BigInteger.toByteArray).
func signedBig(b []byte) *big.Int {
	x := new(big.Int).SetBytes(b)
	if len(b) > 0 && b[0]&0x80 != 0 {
		x.Sub(x, new(big.Int).Lsh(big.NewInt(1), uint(8*len(b))))
	}
	return x
}

// family groups type roots whose values share one representation and one order, so that a
// predicate written against one schema can be checked against statistics of a column whose
// type was widened in another (INT to BIGINT, FLOAT to DOUBLE, CHAR to STRING).
func family(r metadata.TypeRoot) int {
	switch r {
	case metadata.TinyInt, metadata.SmallInt, metadata.Int, metadata.BigInt:
		return 1
	case metadata.Float, metadata.Double:
		return 2
	case metadata.Char, metadata.String:
		return 3
	case metadata.Binary, metadata.Bytes:
		return 4
	}
	return 100 + int(r)
}

// sameOrder reports whether statistics of a column of type stat can be compared with
// literals of type pred. Decimals must agree on scale (unscaled values are compared) and on
// representation; timestamps on nothing more than the root (values carry full precision).
func sameOrder(pred, stat metadata.DataType) bool {
	if family(pred.Root) != family(stat.Root) {
		return false
	}
	if pred.Root == metadata.Decimal {
		compact := func(t metadata.DataType) bool { return t.Precision <= row.MaxCompactDecimalPrecision }
		return pred.Scale == stat.Scale && compact(pred) == compact(stat)
	}
	return true
}

// exactEquality reports whether compare's 0 means "equal" to every client. CHAR values may
// be compared with trailing-blank semantics by some engines, so "every value is v" is not
// relied on for them.
func exactEquality(r metadata.TypeRoot) bool { return r != metadata.Char }

func isString(r metadata.TypeRoot) bool { return r == metadata.Char || r == metadata.String }
