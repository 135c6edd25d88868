package batchstats

import (
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/internal/row"
)

// fastMinMax computes c.Min and c.Max straight from the Arrow array for the common column
// types, without going through row.Datum; handled=false leaves the column to minMax. It
// keeps minMax's invariants (NaN: no bounds; zero bounds widened).
func fastMinMax(c *Column, col arrow.Array) (ok, handled bool) {
	switch c.Type.Root {
	case metadata.TinyInt, metadata.SmallInt, metadata.Int, metadata.BigInt, metadata.Date:
		var lo, hi int64
		switch a := col.(type) {
		case *array.Int8:
			lo, hi, ok = intRange(a.Int8Values(), col)
		case *array.Int16:
			lo, hi, ok = intRange(a.Int16Values(), col)
		case *array.Int32:
			lo, hi, ok = intRange(a.Int32Values(), col)
		case *array.Int64:
			lo, hi, ok = intRange(a.Int64Values(), col)
		case *array.Date32:
			lo, hi, ok = intRange(a.Date32Values(), col)
		default:
			return false, false
		}
		c.Min, c.Max = row.Datum{I: lo}, row.Datum{I: hi}
		return ok, true
	case metadata.Float, metadata.Double:
		var lo, hi float64
		switch a := col.(type) {
		case *array.Float32:
			lo, hi, ok = floatRange(a.Float32Values(), col)
		case *array.Float64:
			lo, hi, ok = floatRange(a.Float64Values(), col)
		default:
			return false, false
		}
		if lo == 0 {
			lo = -math.SmallestNonzeroFloat64
		}
		if hi == 0 {
			hi = math.SmallestNonzeroFloat64
		}
		c.Min, c.Max = row.Datum{F: lo}, row.Datum{F: hi}
		return ok, true
	case metadata.String, metadata.Char:
		a, isString := col.(*array.String)
		if !isString {
			return false, false
		}
		first := true
		var lo, hi string
		for i := 0; i < a.Len(); i++ {
			if a.IsNull(i) {
				continue
			}
			v := a.Value(i)
			if first {
				lo, hi, first = v, v, false
				continue
			}
			if v < lo {
				lo = v
			}
			if v > hi {
				hi = v
			}
		}
		c.Min, c.Max = row.Datum{B: []byte(lo)}, row.Datum{B: []byte(hi)} // copies
		return !first, true
	}
	return false, false
}

type integer interface {
	~int8 | ~int16 | ~int32 | ~int64
}

func intRange[T integer](vals []T, a arrow.Array) (lo, hi int64, ok bool) {
	first := true
	var l, h T
	nulls := a.NullN() > 0
	for i, v := range vals {
		if nulls && a.IsNull(i) {
			continue
		}
		if first {
			l, h, first = v, v, false
			continue
		}
		l, h = min(l, v), max(h, v)
	}
	return int64(l), int64(h), !first
}

func floatRange[T ~float32 | ~float64](vals []T, a arrow.Array) (lo, hi float64, ok bool) {
	first := true
	var l, h T
	nulls := a.NullN() > 0
	for i, v := range vals {
		if nulls && a.IsNull(i) {
			continue
		}
		if v != v { // NaN: no order to bound it by
			return 0, 0, false
		}
		if first {
			l, h, first = v, v, false
			continue
		}
		if v < l {
			l = v
		}
		if v > h {
			h = v
		}
	}
	return float64(l), float64(h), !first
}
