package arrowlog

import (
	"math/rand/v2"

	"github.com/apache/arrow-go/v18/arrow/decimal128"

	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/internal/row"
)

func typ(r metadata.TypeRoot) metadata.DataType { return metadata.DataType{Root: r} }
func notNull(t metadata.DataType) metadata.DataType {
	t.NotNull = true
	return t
}
func prec(r metadata.TypeRoot, p int) metadata.DataType {
	return metadata.DataType{Root: r, Precision: p}
}
func arrayOf(e metadata.DataType) metadata.DataType {
	return metadata.DataType{Root: metadata.Array, Elem: &e}
}
func mapOf(k, v metadata.DataType) metadata.DataType {
	return metadata.DataType{Root: metadata.Map, Elem: &k, Value: &v}
}
func rowOf(fs ...metadata.Field) metadata.DataType {
	return metadata.DataType{Root: metadata.Row, Fields: fs}
}

// allCols covers every Fluss type, every precision bucket and nesting of all kinds.
var allCols = []metadata.Column{
	{Name: "b", Type: typ(metadata.Boolean)},
	{Name: "ti", Type: typ(metadata.TinyInt)},
	{Name: "si", Type: typ(metadata.SmallInt)},
	{Name: "i", Type: notNull(typ(metadata.Int))},
	{Name: "bi", Type: typ(metadata.BigInt)},
	{Name: "f", Type: typ(metadata.Float)},
	{Name: "d", Type: typ(metadata.Double)},
	{Name: "c", Type: metadata.DataType{Root: metadata.Char, Length: 3}},
	{Name: "s", Type: typ(metadata.String)},
	{Name: "bin", Type: metadata.DataType{Root: metadata.Binary, Length: 4}},
	{Name: "by", Type: typ(metadata.Bytes)},
	{Name: "dec", Type: metadata.DataType{Root: metadata.Decimal, Precision: 10, Scale: 2}},
	{Name: "dec38", Type: metadata.DataType{Root: metadata.Decimal, Precision: 38, Scale: 10}},
	{Name: "date", Type: typ(metadata.Date)},
	{Name: "t0", Type: prec(metadata.Time, 0)},
	{Name: "t3", Type: prec(metadata.Time, 3)},
	{Name: "t6", Type: prec(metadata.Time, 6)},
	{Name: "t9", Type: prec(metadata.Time, 9)},
	{Name: "ts0", Type: prec(metadata.Timestamp, 0)},
	{Name: "ts3", Type: prec(metadata.Timestamp, 3)},
	{Name: "ts6", Type: prec(metadata.Timestamp, 6)},
	{Name: "ts9", Type: prec(metadata.Timestamp, 9)},
	{Name: "ltz3", Type: prec(metadata.TimestampLTZ, 3)},
	{Name: "ltz9", Type: prec(metadata.TimestampLTZ, 9)},
	{Name: "arr", Type: arrayOf(typ(metadata.Int))},
	{Name: "arrs", Type: arrayOf(notNull(typ(metadata.String)))},
	{Name: "m", Type: mapOf(notNull(typ(metadata.String)), typ(metadata.BigInt))},
	{Name: "r", Type: rowOf(
		metadata.Field{Name: "x", Type: typ(metadata.Int)},
		metadata.Field{Name: "y", Type: typ(metadata.String)},
		metadata.Field{Name: "z", Type: arrayOf(typ(metadata.Double))},
	)},
	{Name: "nested", Type: arrayOf(rowOf(
		metadata.Field{Name: "k", Type: typ(metadata.String)},
		metadata.Field{Name: "v", Type: mapOf(notNull(typ(metadata.Int)), arrayOf(typ(metadata.Bytes)))},
	))},
}

// genValue returns a random value of t that survives the Fluss→Arrow→Fluss conversion
// exactly (e.g. TIME(0) values are whole seconds).
func genValue(rng *rand.Rand, t metadata.DataType, depth int) row.Datum {
	if !t.NotNull && rng.IntN(5) == 0 {
		return row.NullDatum
	}
	switch t.Root {
	case metadata.Boolean:
		return row.Datum{I: int64(rng.IntN(2))}
	case metadata.TinyInt:
		return row.Datum{I: int64(int8(rng.Uint32()))}
	case metadata.SmallInt:
		return row.Datum{I: int64(int16(rng.Uint32()))}
	case metadata.Int, metadata.Date:
		return row.Datum{I: int64(int32(rng.Uint32()))}
	case metadata.BigInt:
		return row.Datum{I: int64(rng.Uint64())}
	case metadata.Float:
		return row.Datum{F: float64(float32(rng.NormFloat64()))}
	case metadata.Double:
		return row.Datum{F: rng.NormFloat64() * 1e6}
	case metadata.Char:
		return row.Datum{B: []byte{'a' + byte(rng.IntN(26)), 'b', 'c'}}
	case metadata.String:
		n := rng.IntN(12)
		b := make([]byte, n)
		for i := range b {
			b[i] = 'a' + byte(rng.IntN(26))
		}
		if n == 3 {
			b = []byte("héé") // multi-byte UTF-8
		}
		return row.Datum{B: b}
	case metadata.Binary:
		b := make([]byte, t.Length)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return row.Datum{B: b}
	case metadata.Bytes:
		b := make([]byte, rng.IntN(9))
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return row.Datum{B: b}
	case metadata.Decimal:
		if t.Precision <= row.MaxCompactDecimalPrecision {
			return row.Datum{I: rng.Int64N(2e10) - 1e10}
		}
		n := decimal128.New(rng.Int64N(1<<40)-1<<39, rng.Uint64())
		return row.Datum{B: appendDecimalBytes(nil, n)}
	case metadata.Time:
		ms := rng.Int64N(86_400_000)
		if t.Precision == 0 {
			ms -= ms % 1000
		}
		return row.Datum{I: ms}
	case metadata.Timestamp, metadata.TimestampLTZ:
		ms := rng.Int64N(4e12) - 2e12 // includes pre-1970 instants
		var nanos int32
		switch {
		case t.Precision == 0:
			ms -= ms % 1000
		case t.Precision <= 3:
		case t.Precision <= 6:
			nanos = int32(rng.IntN(1000)) * 1000
		default:
			nanos = int32(rng.IntN(1_000_000))
		}
		return row.Datum{I: ms, Nanos: nanos}
	case metadata.Array:
		n := rng.IntN(4)
		if depth > 2 {
			n = 0
		}
		es := make([]row.Datum, n)
		for i := range es {
			es[i] = genValue(rng, *t.Elem, depth+1)
		}
		return row.Datum{Elems: es}
	case metadata.Map:
		n := rng.IntN(4)
		ks, vs := make([]row.Datum, n), make([]row.Datum, n)
		for i := range ks {
			ks[i] = genValue(rng, *t.Elem, depth+1)
			vs[i] = genValue(rng, *t.Value, depth+1)
		}
		return row.Datum{Elems: ks, Vals: vs}
	case metadata.Row:
		es := make([]row.Datum, len(t.Fields))
		for i, f := range t.Fields {
			es[i] = genValue(rng, f.Type, depth+1)
		}
		return row.Datum{Elems: es}
	}
	panic("unhandled type in test generator")
}

func genRows(seed uint64, cols []metadata.Column, n int) [][]row.Datum {
	rng := rand.New(rand.NewPCG(seed, 7))
	rows := make([][]row.Datum, n)
	for i := range rows {
		r := make([]row.Datum, len(cols))
		for j, c := range cols {
			r[j] = genValue(rng, c.Type, 0)
		}
		rows[i] = r
	}
	return rows
}
