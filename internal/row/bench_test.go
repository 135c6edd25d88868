package row

import (
	"testing"

	"github.com/stromdb/strom/internal/metadata"
)

// benchTypes is a typical 8-column PK-table row.
var benchTypes = []metadata.DataType{
	notNull(ty(metadata.BigInt)), ty(metadata.String), ty(metadata.Int), ty(metadata.Double),
	ty(metadata.Boolean), withPrec(metadata.TimestampLTZ, 3), decimalT(10, 2), ty(metadata.String),
}

var benchVals = []Datum{
	di(1234567), ds("user-name-0042"), di(37), df(1234.5), di(1), di(1698235273182), di(19999),
	dnull(),
}

func BenchmarkAppendCompactedRow(b *testing.B) {
	buf := make([]byte, 0, 128)
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if buf, err = AppendCompactedRow(buf[:0], benchTypes, benchVals); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(int64(len(buf)))
}

func BenchmarkDecodeCompactedRow(b *testing.B) {
	enc, _ := AppendCompactedRow(nil, benchTypes, benchVals)
	dst := make([]Datum, 0, len(benchTypes))
	b.SetBytes(int64(len(enc)))
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if dst, err = DecodeCompactedRow(benchTypes, enc, dst); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCompactedReader(b *testing.B) {
	enc, _ := AppendCompactedRow(nil, benchTypes, benchVals)
	var r CompactedReader
	var d Datum
	b.SetBytes(int64(len(enc)))
	b.ReportAllocs()
	for b.Loop() {
		if err := r.Reset(benchTypes, enc); err != nil {
			b.Fatal(err)
		}
		for r.More() {
			if err := r.Next(&d); err != nil {
				b.Fatal(err)
			}
		}
	}
}

func BenchmarkAppendIndexedRow(b *testing.B) {
	buf := make([]byte, 0, 128)
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if buf, err = AppendIndexedRow(buf[:0], benchTypes, benchVals); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(int64(len(buf)))
}

func BenchmarkDecodeIndexedRow(b *testing.B) {
	enc, _ := AppendIndexedRow(nil, benchTypes, benchVals)
	dst := make([]Datum, 0, len(benchTypes))
	b.SetBytes(int64(len(enc)))
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if dst, err = DecodeIndexedRow(benchTypes, enc, dst); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncodeKeyAndBucket(b *testing.B) {
	key := make([]byte, 0, 16)
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if key, err = EncodeKey(key[:0], benchTypes[:1], benchVals[:1]); err != nil {
			b.Fatal(err)
		}
		if _, err = BucketFluss(key, 16); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAppendCompactedNested(b *testing.B) {
	vals := allValues()
	buf := make([]byte, 0, 1024)
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if buf, err = AppendCompactedRow(buf[:0], allTypes, vals); err != nil {
			b.Fatal(err)
		}
	}
}
