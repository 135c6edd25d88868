package arrowlog

import (
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/internal/record"
)

// benchCols is a typical log table: a few scalars and a string.
var benchCols = []metadata.Column{
	{Name: "id", Type: notNull(typ(metadata.BigInt))},
	{Name: "name", Type: typ(metadata.String)},
	{Name: "score", Type: typ(metadata.Double)},
	{Name: "ts", Type: prec(metadata.TimestampLTZ, 3)},
	{Name: "tags", Type: arrayOf(typ(metadata.String))},
}

func BenchmarkRowsToRecord1000(b *testing.B) {
	schema, _ := ArrowSchema(benchCols)
	rows := genRows(1, benchCols, 1000)
	rb, err := NewRowBuilder(schema, benchCols, memory.DefaultAllocator)
	if err != nil {
		b.Fatal(err)
	}
	defer rb.Release()
	b.ReportAllocs()
	for b.Loop() {
		for _, r := range rows {
			if err := rb.Append(r); err != nil {
				b.Fatal(err)
			}
		}
		rb.NewRecord().Release()
	}
}

func BenchmarkEncode1000(b *testing.B) {
	schema, _ := ArrowSchema(benchCols)
	rec, err := RowsToRecord(schema, benchCols, genRows(1, benchCols, 1000), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer rec.Release()
	for _, c := range compressions {
		b.Run(c.String(), func(b *testing.B) {
			var dst []byte
			b.ReportAllocs()
			for b.Loop() {
				dst, err = Encode(dst[:0], rec, nil, c, 0)
				if err != nil {
					b.Fatal(err)
				}
			}
			b.SetBytes(int64(len(dst)))
		})
	}
}

func BenchmarkDecode1000(b *testing.B) {
	schema, _ := ArrowSchema(benchCols)
	rec, err := RowsToRecord(schema, benchCols, genRows(1, benchCols, 1000), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer rec.Release()
	for _, c := range compressions {
		msg, err := Encode(nil, rec, nil, c, 0)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(c.String(), func(b *testing.B) {
			b.SetBytes(int64(len(msg)))
			b.ReportAllocs()
			for b.Loop() {
				_, r, err := Decode(schema, true, 1000, msg, memory.DefaultAllocator)
				if err != nil {
					b.Fatal(err)
				}
				r.Release()
			}
		})
	}
}

func BenchmarkProject1000(b *testing.B) {
	schema, _ := ArrowSchema(benchCols)
	rec, err := RowsToRecord(schema, benchCols, genRows(1, benchCols, 1000), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer rec.Release()
	p, _ := NewProjection(schema, []int{0, 3})
	for _, c := range compressions {
		batch, err := AppendBatch(nil, record.V0Header{SchemaID: 1, WriterID: -1, BatchSequence: -1}, rec, nil, c, 0)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprint(c), func(b *testing.B) {
			var dst []byte
			b.SetBytes(int64(len(batch)))
			b.ReportAllocs()
			for b.Loop() {
				dst, err = p.AppendBatch(dst[:0], batch)
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
