package kvstore

import (
	"math"
	"math/big"
	"testing"

	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/internal/row"
)

func TestArith(t *testing.T) {
	dt := func(r metadata.TypeRoot) metadata.DataType { return metadata.DataType{Root: r} }
	dec := func(p, s int) metadata.DataType {
		return metadata.DataType{Root: metadata.Decimal, Precision: p, Scale: s}
	}
	cases := []struct {
		name string
		t    metadata.DataType
		a, b row.Datum
		mul  bool
		want row.Datum
	}{
		{"tinyint wraps", dt(metadata.TinyInt), row.Datum{I: 127}, row.Datum{I: 1}, false, row.Datum{I: -128}},
		{"int wraps", dt(metadata.Int), row.Datum{I: math.MaxInt32}, row.Datum{I: 1}, false, row.Datum{I: math.MinInt32}},
		{"smallint product wraps", dt(metadata.SmallInt), row.Datum{I: 300}, row.Datum{I: 300}, true, row.Datum{I: int64(int16(90000 & 0xffff))}},
		{"float single precision", dt(metadata.Float), row.Datum{F: float64(float32(0.1))}, row.Datum{F: float64(float32(0.2))}, false, row.Datum{F: float64(float32(0.1) + float32(0.2))}},
		{"decimal(5,2) sum", dec(5, 2), row.Datum{I: 12345}, row.Datum{I: 5}, false, row.Datum{I: 12350}},
		{"decimal(5,2) sum keeps the wider result", dec(5, 2), row.Datum{I: 99999}, row.Datum{I: 1}, false, row.Datum{I: 100000}},
		{"decimal(18,2) sum past int64 is NULL", dec(18, 2), row.Datum{I: math.MaxInt64 - 1}, row.Datum{I: 2}, false, row.NullDatum},
		{"decimal(18,2) negative sum past int64 is NULL", dec(18, 2), row.Datum{I: math.MinInt64 + 1}, row.Datum{I: -2}, false, row.NullDatum},
		{"decimal(5,2) product overflow is NULL", dec(5, 2), row.Datum{I: 99999}, row.Datum{I: 200}, true, row.NullDatum},
		{"decimal(20,0) sum overflow is NULL", dec(20, 0), row.Datum{B: []byte{0x56, 0xbc, 0x75, 0xe2, 0xd6, 0x31, 0x00, 0x00, 0x00}}, row.Datum{B: []byte{0x56, 0xbc, 0x75, 0xe2, 0xd6, 0x31, 0x00, 0x00, 0x00}}, false, row.NullDatum},
		{"decimal(10,2) product rounds half up", dec(10, 2), row.Datum{I: 150}, row.Datum{I: 101}, true, row.Datum{I: 152}}, // 1.50*1.01=1.515 -> 1.52
		{"decimal(10,2) negative product", dec(10, 2), row.Datum{I: -150}, row.Datum{I: 101}, true, row.Datum{I: -152}},
		{"decimal(20,0) big sum", dec(20, 0), row.Datum{B: []byte{0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}}, row.Datum{B: []byte{0x01}}, false,
			row.Datum{B: []byte{0x00, 0x80, 0, 0, 0, 0, 0, 0, 0}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := arith(tc.t, tc.a, tc.b, tc.mul)
			if err != nil {
				t.Fatal(err)
			}
			if got.Null != tc.want.Null || got.I != tc.want.I || got.F != tc.want.F || string(got.B) != string(tc.want.B) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestTwosComplement(t *testing.T) {
	for _, v := range []int64{0, 1, -1, 127, 128, -128, -129, 255, 256, -32768, math.MaxInt64, math.MinInt64} {
		b := bigToTwos(big.NewInt(v))
		if want := big.NewInt(v).Bytes(); v > 0 && len(b) > len(want)+1 {
			t.Fatalf("%d: not minimal: % x", v, b)
		}
		if got := twosToBig(b); got.Int64() != v {
			t.Fatalf("%d -> % x -> %d", v, b, got)
		}
	}
	if b := bigToTwos(big.NewInt(-129)); len(b) != 2 || b[0] != 0xff || b[1] != 0x7f {
		t.Fatalf("-129 = % x, want ff 7f", b)
	}
}

func TestCompareFloatJavaOrder(t *testing.T) {
	nan := math.NaN()
	if compareFloat(math.Copysign(0, -1), 0) >= 0 || compareFloat(nan, math.Inf(1)) <= 0 || compareFloat(nan, nan) != 0 {
		t.Fatal("Java Double.compare order violated")
	}
}
