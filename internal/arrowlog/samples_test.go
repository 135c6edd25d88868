package arrowlog

import (
	"bytes"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/internal/record"
	"github.com/stromdb/strom/internal/row"
	"github.com/stromdb/strom/internal/typetable"
)

// Random values of every sample type of every root of the type table come back unchanged
// through the row formats (a CompactedRow, an IndexedRow and, for the types that may be key
// columns, a key) and through an Arrow log batch. A new root is covered once its entry lists
// samples, which the generator requires, and genValue can make its values (it panics on a
// root it does not know).
func TestSamplesRoundTrip(t *testing.T) {
	for _, r := range metadata.TypeRoots() {
		for _, s := range typetable.Roots[r-1].Samples {
			typ, err := metadata.ParseSQLType(s.Type)
			if err != nil {
				t.Fatalf("%s: %v", s.Type, err)
			}
			t.Run(s.Type, func(t *testing.T) { sampleRoundTrip(t, typ) })
		}
	}
}

func sampleRoundTrip(t *testing.T, typ metadata.DataType) {
	cols := []metadata.Column{{Name: "a", Type: typ.Nullable(false)}, {Name: "b", Type: typ.Nullable(true)}}
	types := []metadata.DataType{cols[0].Type, cols[1].Type}
	rows := genRows(uint64(typ.Root), cols, 64)

	var buf []byte
	for _, vals := range rows {
		var err error
		if buf, err = row.AppendCompactedRow(buf[:0], types, vals); err != nil {
			t.Fatalf("compacted %v: %v", vals, err)
		}
		got, err := row.DecodeCompactedRow(types, buf, nil)
		if err != nil {
			t.Fatalf("compacted %v: decode: %v", vals, err)
		}
		assertRows(t, [][]row.Datum{got}, [][]row.Datum{vals})

		// CHAR and BINARY lose trailing zero bytes in an IndexedRow, as in Java: compare the
		// bytes of a second encoding, which the padding makes equal.
		if buf, err = row.AppendIndexedRow(buf[:0], types, vals); err != nil {
			t.Fatalf("indexed %v: %v", vals, err)
		}
		got, err = row.DecodeIndexedRow(types, buf, nil)
		if err != nil {
			t.Fatalf("indexed %v: decode: %v", vals, err)
		}
		again, err := row.AppendIndexedRow(nil, types, got)
		if err != nil || !bytes.Equal(again, buf) {
			t.Fatalf("indexed %v reads back as %v (%v)", vals, got, err)
		}

		if !typ.IsNested() {
			key := vals[:1]
			if buf, err = row.EncodeKey(buf[:0], types[:1], key); err != nil {
				t.Fatalf("key %v: %v", key, err)
			}
			got, err := row.DecodeKey(types[:1], buf, nil)
			if err != nil {
				t.Fatalf("key %v: decode: %v", key, err)
			}
			assertRows(t, [][]row.Datum{got}, [][]row.Datum{key})
		}
	}

	schema, err := ArrowSchema(cols)
	if err != nil {
		t.Fatalf("Arrow schema: %v", err)
	}
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rec, err := RowsToRecord(schema, cols, rows, mem)
	if err != nil {
		t.Fatal(err)
	}
	batch, err := AppendBatch(nil, record.V0Header{}, rec, nil, CompressionNone, 0)
	rec.Release()
	if err != nil {
		t.Fatal(err)
	}
	b := record.Batch(batch)
	_, decoded, err := Decode(schema, b.AppendOnly(), int(b.RecordCount()), b.Records(), mem)
	if err != nil {
		t.Fatal(err)
	}
	defer decoded.Release()
	back, err := RecordToRows(decoded, cols)
	if err != nil {
		t.Fatal(err)
	}
	assertRows(t, back, rows)
}
