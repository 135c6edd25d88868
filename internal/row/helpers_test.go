package row

import (
	"encoding/hex"
	"math"
	"strings"
	"testing"

	"github.com/stromdb/strom/internal/metadata"
)

// Type constructors for tests.
func ty(root metadata.TypeRoot) metadata.DataType { return metadata.DataType{Root: root} }

func notNull(t metadata.DataType) metadata.DataType { t.NotNull = true; return t }

func withPrec(root metadata.TypeRoot, p int) metadata.DataType {
	return metadata.DataType{Root: root, Precision: p}
}

func decimalT(p, s int) metadata.DataType {
	return metadata.DataType{Root: metadata.Decimal, Precision: p, Scale: s}
}

func withLen(root metadata.TypeRoot, n int) metadata.DataType {
	return metadata.DataType{Root: root, Length: n}
}

func arrayT(elem metadata.DataType) metadata.DataType {
	return metadata.DataType{Root: metadata.Array, Elem: &elem}
}

func mapT(k, v metadata.DataType) metadata.DataType {
	return metadata.DataType{Root: metadata.Map, Elem: &k, Value: &v}
}

func rowT(fields ...metadata.DataType) metadata.DataType {
	t := metadata.DataType{Root: metadata.Row}
	for i, f := range fields {
		t.Fields = append(t.Fields, metadata.Field{Name: string(rune('a' + i)), Type: f, ID: int32(i)})
	}
	return t
}

// Datum constructors for tests.
func di(v int64) Datum             { return Datum{I: v} }
func df(v float64) Datum           { return Datum{F: v} }
func ds(s string) Datum            { return Datum{B: []byte(s)} }
func dts(ms int64, ns int32) Datum { return Datum{I: ms, Nanos: ns} }
func darr(e ...Datum) Datum        { return Datum{Elems: e} }
func dnull() Datum                 { return NullDatum }

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	s = strings.NewReplacer(" ", "", "\n", "", "\t", "", "|", "").Replace(s)
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatalf("bad hex %q: %v", s, err)
	}
	return b
}

// datumEqual compares decoded values: nil and empty slices are equal and floats compare by
// bits, except that any NaN equals any NaN (arrays canonicalise NaN as Java does).
func datumEqual(a, b Datum) bool {
	if a.Null || b.Null {
		return a.Null == b.Null
	}
	bothNaN := math.IsNaN(a.F) && math.IsNaN(b.F)
	if a.I != b.I || a.Nanos != b.Nanos || !bothNaN && math.Float64bits(a.F) != math.Float64bits(b.F) {
		return false
	}
	if string(a.B) != string(b.B) {
		return false
	}
	return datumsEqual(a.Elems, b.Elems) && datumsEqual(a.Vals, b.Vals)
}

func datumsEqual(a, b []Datum) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !datumEqual(a[i], b[i]) {
			return false
		}
	}
	return true
}
