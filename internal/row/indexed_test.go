package row

import (
	"bytes"
	"errors"
	"testing"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/metadata"
)

func TestIndexedAppendixA(t *testing.T) {
	vals := []Datum{di(1), ds("alice"), di(30)}
	want := unhex(t, "00 | 05000000 | 01000000 | 616c696365 | 1e00000000000000")
	got, err := AppendIndexedRow(nil, appendixATypes, vals)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("AppendIndexedRow = %x, %v; want %x", got, err, want)
	}
	dec, err := DecodeIndexedRow(appendixATypes, want, nil)
	if err != nil || !datumsEqual(dec, vals) {
		t.Fatalf("DecodeIndexedRow = %v, %v", dec, err)
	}
}

// TestIndexedHandVectors are rows built by following IndexedRowWriter byte by byte.
func TestIndexedHandVectors(t *testing.T) {
	cases := []struct {
		name  string
		types []metadata.DataType
		vals  []Datum
		want  string
		back  []Datum // decoded form when it differs from vals
	}{
		{"null variable field takes no slot; slots fill in order",
			[]metadata.DataType{ty(metadata.String), ty(metadata.Bytes), ty(metadata.Int)},
			[]Datum{dnull(), ds("b"), di(7)},
			"01 | 01000000 00000000 | 62 07000000", nil},
		{"char and binary are padded to their length",
			[]metadata.DataType{withLen(metadata.Char, 3), withLen(metadata.Binary, 2), ty(metadata.SmallInt)},
			[]Datum{ds("a"), {B: []byte{1}}, di(-2)},
			"00 | 610000 | 0100 | feff", nil},
		{"precise timestamp 12 bytes, compact 8; big decimal is variable",
			[]metadata.DataType{withPrec(metadata.TimestampLTZ, 6), withPrec(metadata.Timestamp, 3), decimalT(20, 0), decimalT(10, 0)},
			[]Datum{dts(-1, 7), dts(2, 0), {B: []byte{0x00, 0x80}}, di(-3)},
			"00 | 02000000 | ffffffffffffffff 07000000 | 0200000000000000 | 0080 | fdffffffffffffff", nil},
		{"nested row is an IndexedRow",
			[]metadata.DataType{rowT(ty(metadata.Int), ty(metadata.String))},
			[]Datum{darr(di(5), ds("x"))},
			"00 | 0a000000 | 00 01000000 05000000 78", nil},
		{"row inside an array uses the indexed format",
			[]metadata.DataType{arrayT(rowT(ty(metadata.Int)))},
			[]Datum{darr(darr(di(9)))},
			"00 | 18000000 | 01000000 00000000 0500000010000000 00 09000000 000000", nil},
		{"binary data ending in zero loses it (Java strips padding)",
			[]metadata.DataType{withLen(metadata.Binary, 3)},
			[]Datum{{B: []byte{1, 0}}},
			"00 | 010000", []Datum{{B: []byte{1}}}},
		{"floats and doubles raw",
			[]metadata.DataType{ty(metadata.Float), ty(metadata.Double), ty(metadata.Boolean), ty(metadata.Date)},
			[]Datum{df(1), df(-2), di(1), di(-1)},
			"00 | 0000803f | 00000000000000c0 | 01 | ffffffff", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			want := unhex(t, c.want)
			got, err := AppendIndexedRow(nil, c.types, c.vals)
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("got %x, %v\nwant %x", got, err, want)
			}
			dec, err := DecodeIndexedRow(c.types, want, nil)
			back := c.back
			if back == nil {
				back = c.vals
			}
			if err != nil || !datumsEqual(dec, back) {
				t.Fatalf("decoded %+v, %v", dec, err)
			}
		})
	}
}

func TestIndexedRoundTrip(t *testing.T) {
	vals := allValues()
	// CHAR(8) and BINARY(4) values must fit and not end in zero for a lossless trip.
	enc, err := AppendIndexedRow(nil, allTypes, vals)
	if err != nil {
		t.Fatal(err)
	}
	dec, err := DecodeIndexedRow(allTypes, enc, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range vals {
		if !datumEqual(dec[i], vals[i]) {
			t.Errorf("field %d: got %+v want %+v", i, dec[i], vals[i])
		}
	}
	dec2, err := DecodeIndexedRow(allTypes, enc, dec)
	if err != nil || !datumsEqual(dec2, vals) {
		t.Fatalf("reused decode: %v", err)
	}
	nulls := make([]Datum, len(allTypes))
	for i := range nulls {
		nulls[i] = NullDatum
	}
	enc, err = AppendIndexedRow(nil, allTypes, nulls)
	if err != nil {
		t.Fatal(err)
	}
	if dec, err = DecodeIndexedRow(allTypes, enc, nil); err != nil || !datumsEqual(dec, nulls) {
		t.Fatalf("all-null: %v", err)
	}
}

func TestIndexedErrors(t *testing.T) {
	if _, err := AppendIndexedRow(nil, []metadata.DataType{withLen(metadata.Char, 1)}, []Datum{ds("ab")}); !errors.Is(err, ErrInvalidValue) {
		t.Errorf("CHAR overflow: %v", err)
	}
	if _, err := AppendIndexedRow(nil, []metadata.DataType{notNull(ty(metadata.String))}, []Datum{dnull()}); !errors.Is(err, ErrInvalidValue) {
		t.Errorf("NULL in NOT NULL: %v", err)
	}
	cases := []struct {
		name  string
		types []metadata.DataType
		hex   string
	}{
		{"short header", []metadata.DataType{ty(metadata.String)}, "00 0100"},
		{"length past end", []metadata.DataType{ty(metadata.String)}, "00 05000000 6161"},
		{"negative length", []metadata.DataType{ty(metadata.String)}, "00 ffffffff"},
		{"fixed past end", []metadata.DataType{ty(metadata.BigInt)}, "00 01"},
		{"trailing", []metadata.DataType{ty(metadata.TinyInt)}, "00 01 02"},
		{"empty decimal", []metadata.DataType{decimalT(20, 0)}, "00 00000000"},
		{"bad nanos", []metadata.DataType{withPrec(metadata.Timestamp, 6)}, "00 0000000000000000 ffffffff"},
		{"bad nested", []metadata.DataType{arrayT(ty(metadata.Int))}, "00 02000000 0100"},
	}
	for _, c := range cases {
		if _, err := DecodeIndexedRow(c.types, unhex(t, c.hex), nil); ferr.CodeOf(err) != ferr.CorruptRecordException {
			t.Errorf("%s: err = %v", c.name, err)
		}
	}
}
