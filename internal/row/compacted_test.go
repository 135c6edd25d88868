package row

import (
	"bytes"
	"errors"
	"math"
	"testing"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/metadata"
)

// appendixATypes is the table of docs/encodings.md Appendix A: id INT NOT NULL, name STRING, age BIGINT.
var appendixATypes = []metadata.DataType{notNull(ty(metadata.Int)), ty(metadata.String), ty(metadata.BigInt)}

// javaKeyTypes/javaKeyVals/javaKeyHex: the Java reference key encoding of every key-capable
// type (Java test resource encoding/encoded_key.hex, reproduced as a vector in fluss-rust's
// compacted_key_encoder.rs test_all_data_types_java_compatible).
var javaKeyTypes = []metadata.DataType{
	ty(metadata.Boolean), ty(metadata.TinyInt), ty(metadata.SmallInt), ty(metadata.Int),
	ty(metadata.BigInt), ty(metadata.Float), ty(metadata.Double), ty(metadata.Date),
	ty(metadata.Time), withLen(metadata.Binary, 20), ty(metadata.Bytes), withLen(metadata.Char, 2),
	ty(metadata.String), decimalT(5, 2), decimalT(20, 0),
	notNull(withPrec(metadata.Timestamp, 1)), notNull(withPrec(metadata.Timestamp, 5)),
	notNull(withPrec(metadata.TimestampLTZ, 1)), notNull(withPrec(metadata.TimestampLTZ, 5)),
	arrayT(ty(metadata.Int)), arrayT(notNull(ty(metadata.Float))),
	arrayT(arrayT(ty(metadata.String))),
}

var javaKeyVals = []Datum{
	di(1), di(2), di(10), di(100), di(-6101065172474983726),
	df(float64(float32(13.2))), df(15.21), di(19655), di(34200000),
	ds("1234567890"), ds("20"), ds("1"), ds("hello"), di(9), {B: []byte{10}},
	dts(1698235273182, 0), dts(1698235273182, 0), dts(1698235273182, 0), dts(1698235273182, 0),
	darr(di(1), di(2), di(3), di(4), di(5), di(-11), dnull(), di(444), di(102234)),
	darr(df(float64(float32(0.1))), df(float64(float32(1.1))), df(-0.5), df(float64(float32(6.6))),
		df(math.MaxFloat32), df(float64(math.Float32frombits(1)))),
	darr(darr(ds("a"), dnull(), ds("c")), dnull(), darr(ds("hello"), ds("world"))),
}

const javaKeyHex = `
01 02 0a00 64 d295fcd8ceb1aaaaab01 33335341 ec51b81e856b2e40 c79901 c0b3a710
0a 31323334353637383930 02 3230 01 31 05 68656c6c6f 09 010a
de9fd7b5b631 de9fd7b5b63100 de9fd7b5b631 de9fd7b5b63100
30 09000000 40000000 01000000 02000000 03000000 04000000 05000000 f5ffffff 00000000
   bc010000 5a8f0100 00000000
20 06000000 00000000 cdcccc3d cdcc8c3f 000000bf 3333d340 ffff7f7f 01000000
58 03000000 02000000 2000000020000000 0000000000000000 1800000040000000
   03000000 02000000 6100000000000081 0000000000000000 6300000000000081
   02000000 00000000 68656c6c6f000085 776f726c64000085`

func TestCompactedAppendixA(t *testing.T) {
	vals := []Datum{di(1), ds("alice"), di(30)}
	want := unhex(t, "00 | 01 | 05 61 6c 69 63 65 | 1e")
	got, err := AppendCompactedRow(nil, appendixATypes, vals)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("AppendCompactedRow = %x, %v; want %x", got, err, want)
	}
	dec, err := DecodeCompactedRow(appendixATypes, want, nil)
	if err != nil || !datumsEqual(dec, vals) {
		t.Fatalf("DecodeCompactedRow = %v, %v", dec, err)
	}
}

// TestCompactedJavaVector checks the CompactedRow field encodings against the Java key vector:
// a CompactedRow is the same bytes behind a null bitset.
func TestCompactedJavaVector(t *testing.T) {
	body := unhex(t, javaKeyHex)
	want := append(make([]byte, (len(javaKeyTypes)+7)/8), body...)
	got, err := AppendCompactedRow(nil, javaKeyTypes, javaKeyVals)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("encoding differs from Java:\n got %x\nwant %x", got, want)
	}
	dec, err := DecodeCompactedRow(javaKeyTypes, want, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !datumsEqual(dec, javaKeyVals) {
		t.Fatalf("decoded %+v", dec)
	}
}

// allTypes is a schema with every type, nullable, for round trips.
var allTypes = []metadata.DataType{
	ty(metadata.Boolean), ty(metadata.TinyInt), ty(metadata.SmallInt), ty(metadata.Int),
	ty(metadata.BigInt), ty(metadata.Float), ty(metadata.Double), withLen(metadata.Char, 8),
	ty(metadata.String), withLen(metadata.Binary, 4), ty(metadata.Bytes), decimalT(10, 2),
	decimalT(38, 10), ty(metadata.Date), ty(metadata.Time), withPrec(metadata.Timestamp, 3),
	withPrec(metadata.Timestamp, 9), withPrec(metadata.TimestampLTZ, 0),
	withPrec(metadata.TimestampLTZ, 6), arrayT(ty(metadata.String)),
	mapT(notNull(ty(metadata.Int)), ty(metadata.String)),
	rowT(ty(metadata.Int), ty(metadata.String), arrayT(withPrec(metadata.Timestamp, 9))),
	arrayT(rowT(ty(metadata.BigInt), decimalT(30, 2))),
	arrayT(decimalT(30, 0)), arrayT(withPrec(metadata.TimestampLTZ, 6)),
	arrayT(mapT(ty(metadata.String), arrayT(ty(metadata.Double)))),
	arrayT(ty(metadata.Boolean)), arrayT(ty(metadata.SmallInt)), arrayT(ty(metadata.TinyInt)),
	arrayT(ty(metadata.Bytes)), arrayT(decimalT(18, 3)), arrayT(withPrec(metadata.Timestamp, 2)),
	arrayT(ty(metadata.Date)),
}

func allValues() []Datum {
	return []Datum{
		di(1), di(-128), di(-32768), di(math.MinInt32), di(math.MinInt64), df(float64(float32(-1.5))),
		df(math.Inf(-1)), ds("héllo"), ds("a string longer than seven bytes"), {B: []byte{1, 2}},
		{B: []byte{0, 0, 0xff}}, di(-12345), {B: []byte{0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}},
		di(-719528), di(86399999), dts(-1, 0), dts(1698235273182, 999999), dts(0, 0),
		dts(math.MaxInt64, 1000),
		darr(ds("x"), dnull(), ds("longer than 7 bytes!")),
		{Elems: []Datum{di(1), di(2)}, Vals: []Datum{ds("one"), dnull()}},
		darr(di(7), dnull(), darr(dts(5, 6), dnull())),
		darr(darr(di(1), Datum{B: []byte{0x01, 0x00}}), dnull(), darr(dnull(), dnull())),
		darr(Datum{B: []byte{0xff}}, dnull(), Datum{B: bytes.Repeat([]byte{0x7f}, 16)}),
		darr(dts(-5, 999), dnull()),
		darr(Datum{Elems: []Datum{ds("k")}, Vals: []Datum{darr(df(1), dnull(), df(math.NaN()))}}, darr()),
		darr(di(1), di(0), dnull()), darr(di(-2), di(3)), darr(di(-1)),
		darr(Datum{B: []byte{}}, Datum{B: bytes.Repeat([]byte{9}, 9)}), darr(di(1 << 60)),
		darr(di(-3)), darr(di(19000), dnull()),
	}
}

func TestCompactedRoundTrip(t *testing.T) {
	vals := allValues()
	enc, err := AppendCompactedRow([]byte("prefix"), allTypes, vals)
	if err != nil {
		t.Fatal(err)
	}
	if string(enc[:6]) != "prefix" {
		t.Fatal("prefix clobbered")
	}
	dec, err := DecodeCompactedRow(allTypes, enc[6:], nil)
	if err != nil {
		t.Fatal(err)
	}
	if !datumsEqual(dec, vals) {
		for i := range vals {
			if !datumEqual(dec[i], vals[i]) {
				t.Errorf("field %d: got %+v want %+v", i, dec[i], vals[i])
			}
		}
	}
	// Every field NULL.
	nulls := make([]Datum, len(allTypes))
	for i := range nulls {
		nulls[i] = NullDatum
	}
	enc, err = AppendCompactedRow(nil, allTypes, nulls)
	if err != nil || len(enc) != (len(allTypes)+7)/8 {
		t.Fatalf("all-null row = %x, %v", enc, err)
	}
	// Decoding into a reused slice gives the same result.
	enc2, _ := AppendCompactedRow(nil, allTypes, vals)
	dec2, err := DecodeCompactedRow(allTypes, enc2, dec)
	if err != nil || !datumsEqual(dec2, vals) {
		t.Fatalf("reused decode: %v", err)
	}
}

// TestCompactedHandVectors are rows built by following CompactedRowWriter byte by byte.
func TestCompactedHandVectors(t *testing.T) {
	cases := []struct {
		name  string
		types []metadata.DataType
		vals  []Datum
		want  string
	}{
		{"nulls set bits and take no bytes",
			[]metadata.DataType{ty(metadata.Int), ty(metadata.String), ty(metadata.Int), ty(metadata.Int),
				ty(metadata.Int), ty(metadata.Int), ty(metadata.Int), ty(metadata.Int), ty(metadata.Int)},
			[]Datum{dnull(), ds("a"), dnull(), di(1), di(2), di(3), di(4), di(5), dnull()},
			"05 01 | 01 61 01 02 03 04 05"},
		{"negative int is five bytes, smallint fixed LE",
			[]metadata.DataType{ty(metadata.Int), ty(metadata.SmallInt), ty(metadata.TinyInt), ty(metadata.Boolean)},
			[]Datum{di(-1), di(-2), di(-3), di(1)},
			"00 ffffffff0f feff fd 01"},
		{"decimal compact and not, precise timestamp",
			[]metadata.DataType{decimalT(18, 0), decimalT(19, 0), decimalT(19, 0), withPrec(metadata.TimestampLTZ, 6)},
			// Non-minimal input bytes are normalised like BigInteger.toByteArray: 255 = 00 ff, -1 = ff.
			[]Datum{di(-1), {B: []byte{0, 0, 0xff}}, {B: []byte{0xff, 0xff}}, dts(1, 500)},
			"00 ffffffffffffffffff01 02 00ff 01 ff 01 f403"},
		{"nested row keeps its own bitset",
			[]metadata.DataType{rowT(ty(metadata.Int), ty(metadata.String))},
			[]Datum{darr(dnull(), ds("xy"))},
			"00 04 01 02 7879"},
		{"map of int to string",
			[]metadata.DataType{mapT(notNull(ty(metadata.Int)), ty(metadata.String))},
			[]Datum{{Elems: []Datum{di(1)}, Vals: []Datum{ds("a")}}},
			// map = keysize 16 | keys: n=1, nulls, int 1, pad | values: n=1, nulls, inline "a"
			"00 24 10000000 01000000 00000000 01000000 00000000 01000000 00000000 6100000000000081"},
		{"array of precise timestamps and big decimals",
			[]metadata.DataType{arrayT(withPrec(metadata.Timestamp, 9)), arrayT(decimalT(20, 0))},
			[]Datum{darr(dts(2, 3)), darr(Datum{B: []byte{0x0a}})},
			"00 18 01000000 00000000 0300000010000000 0200000000000000" +
				" 20 01000000 00000000 0100000010000000 0a000000000000000000000000000000"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			want := unhex(t, c.want)
			got, err := AppendCompactedRow(nil, c.types, c.vals)
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("got %x, %v\nwant %x", got, err, want)
			}
			if _, err := DecodeCompactedRow(c.types, want, nil); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestCompactedEncodeErrors(t *testing.T) {
	cases := []struct {
		name  string
		types []metadata.DataType
		vals  []Datum
	}{
		{"null in not null", []metadata.DataType{notNull(ty(metadata.Int))}, []Datum{dnull()}},
		{"count mismatch", []metadata.DataType{ty(metadata.Int)}, nil},
		{"int range", []metadata.DataType{ty(metadata.Int)}, []Datum{di(1 << 40)}},
		{"tinyint range", []metadata.DataType{ty(metadata.TinyInt)}, []Datum{di(128)}},
		{"smallint range", []metadata.DataType{ty(metadata.SmallInt)}, []Datum{di(-40000)}},
		{"nanos range", []metadata.DataType{withPrec(metadata.Timestamp, 9)}, []Datum{dts(0, 1000000)}},
		{"map mismatch", []metadata.DataType{mapT(ty(metadata.Int), ty(metadata.Int))}, []Datum{{Elems: []Datum{di(1)}}}},
		{"bad root", []metadata.DataType{{Root: 99}}, []Datum{di(1)}},
		{"nested bad", []metadata.DataType{arrayT(ty(metadata.TinyInt))}, []Datum{darr(di(999))}},
		{"array decimal too long", []metadata.DataType{arrayT(decimalT(38, 0))}, []Datum{darr(Datum{B: bytes.Repeat([]byte{1}, 17)})}},
	}
	for _, c := range cases {
		dst := []byte("keep")
		got, err := AppendCompactedRow(dst, c.types, c.vals)
		if !errors.Is(err, ErrInvalidValue) {
			t.Errorf("%s: err = %v, want ErrInvalidValue", c.name, err)
		}
		if string(got) != "keep" {
			t.Errorf("%s: dst = %q after error", c.name, got)
		}
	}
}

func TestCompactedDecodeErrors(t *testing.T) {
	cases := []struct {
		name  string
		types []metadata.DataType
		hex   string
	}{
		{"short bitset", []metadata.DataType{ty(metadata.Int)}, ""},
		{"truncated varint", []metadata.DataType{ty(metadata.Int)}, "00 80"},
		{"trailing bytes", []metadata.DataType{ty(metadata.Int)}, "00 01 02"},
		{"string too long", []metadata.DataType{ty(metadata.String)}, "00 05 61"},
		{"negative length", []metadata.DataType{ty(metadata.String)}, "00 ffffffff0f"},
		{"empty decimal", []metadata.DataType{decimalT(20, 0)}, "00 00"},
		{"bad nanos", []metadata.DataType{withPrec(metadata.Timestamp, 9)}, "00 00 c0843d"},
		{"array count too big", []metadata.DataType{arrayT(ty(metadata.Int))}, "00 08 ffffff7f00000000"},
		{"array negative count", []metadata.DataType{arrayT(ty(metadata.Int))}, "00 08 ffffffff00000000"},
		{"array slot outside", []metadata.DataType{arrayT(ty(metadata.String))}, "00 10 01000000 00000000 0800000010000000"},
		{"array inline too long", []metadata.DataType{arrayT(ty(metadata.String))}, "00 10 01000000 00000000 00000000000000ff"},
		{"map key size outside", []metadata.DataType{mapT(ty(metadata.Int), ty(metadata.Int))}, "00 04 ff000000"},
		{"map count mismatch", []metadata.DataType{mapT(ty(metadata.Int), ty(metadata.Int))},
			"00 14 08000000 00000000 00000000 01000000 00000000 00000000 00000000"},
		{"long varint overflow", []metadata.DataType{ty(metadata.BigInt)}, "00 ffffffffffffffffffff01"},
	}
	for _, c := range cases {
		_, err := DecodeCompactedRow(c.types, unhex(t, c.hex), nil)
		if ferr.CodeOf(err) != ferr.CorruptRecordException {
			t.Errorf("%s: err = %v, want CORRUPT_RECORD_EXCEPTION", c.name, err)
		}
	}
}

// TestCompactedNotNullIgnoresBit mirrors Java: a NOT NULL field is read even if its bit is set.
func TestCompactedNotNullIgnoresBit(t *testing.T) {
	types := []metadata.DataType{notNull(ty(metadata.Int)), ty(metadata.Int)}
	dec, err := DecodeCompactedRow(types, unhex(t, "01 05 06"), nil)
	if err != nil || dec[0].Null || dec[0].I != 5 || dec[1].I != 6 {
		t.Fatalf("got %+v, %v", dec, err)
	}
}

func TestCompactedReader(t *testing.T) {
	vals := allValues()
	enc, err := AppendCompactedRow(nil, allTypes, vals)
	if err != nil {
		t.Fatal(err)
	}
	var r CompactedReader
	if err := r.Reset(allTypes, enc); err != nil {
		t.Fatal(err)
	}
	var d Datum
	for r.More() {
		i := r.Field()
		if err := r.Next(&d); err != nil {
			t.Fatal(err)
		}
		if !datumEqual(d, vals[i]) {
			t.Errorf("field %d: %+v", i, d)
		}
	}
	if err := r.Done(); err != nil {
		t.Fatal(err)
	}
	if err := r.Next(&d); err == nil {
		t.Fatal("read past end")
	}
	// Raw splicing: copying every raw field into a new row reproduces the row.
	if err := r.Reset(allTypes, enc); err != nil {
		t.Fatal(err)
	}
	out := make([]byte, (len(allTypes)+7)/8)
	for r.More() {
		i := r.Field()
		null, raw, err := r.NextRaw()
		if err != nil {
			t.Fatal(err)
		}
		if null {
			bitSet(out, i)
		}
		out = append(out, raw...)
	}
	if !bytes.Equal(out, enc) {
		t.Fatal("raw fields do not reassemble the row")
	}
	if err := r.Reset(allTypes, nil); err == nil {
		t.Fatal("Reset accepted a short row")
	}
}
