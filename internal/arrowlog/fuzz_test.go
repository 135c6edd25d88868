package arrowlog

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/internal/record"
)

func fuzzSeeds(f *testing.F) {
	for _, n := range []string{"ipc_uncompressed.hex", "ipc_zstd.hex", "ipc_lz4.hex"} {
		f.Add(uint8(0), true, uint16(2), readHex(f, n))
	}
	f.Add(uint8(0), false, uint16(2), readHex(f, "batch_v0_changelog.hex")[record.HeaderSizeV0:])
	schema, _ := ArrowSchema(allCols)
	rec, err := RowsToRecord(schema, allCols, genRows(3, allCols, 4), nil)
	if err != nil {
		f.Fatal(err)
	}
	defer rec.Release()
	for _, c := range compressions {
		msg, err := Encode(nil, rec, nil, c, 0)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(uint8(1), true, uint16(4), msg)
	}
}

func fuzzSchema(which uint8) (*arrow.Schema, []metadata.Column) {
	cols := appendixCols
	if which%2 == 1 {
		cols = allCols
	}
	s, _ := ArrowSchema(cols)
	return s, cols
}

// FuzzDecode feeds arbitrary records sections to Decode: it must never panic, must report
// failures as CORRUPT_RECORD_EXCEPTION, must not leak allocator memory, and whatever it
// accepts must be readable as rows.
func FuzzDecode(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, which uint8, appendOnly bool, count uint16, data []byte) {
		schema, cols := fuzzSchema(which)
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		_, rec, err := Decode(schema, appendOnly, int(count), data, mem)
		if err != nil {
			if ferr.CodeOf(err) != ferr.CorruptRecordException {
				t.Fatalf("error without CORRUPT_RECORD_EXCEPTION: %v", err)
			}
			mem.AssertSize(t, 0)
			return
		}
		if _, err := RecordToRows(rec, cols); err != nil {
			t.Fatalf("accepted record not readable: %v", err)
		}
		// Re-encoding an accepted record must work and decode to the same row count.
		msg, err := Encode(nil, rec, nil, CompressionLZ4Frame, 0)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		_, rec2, err := Decode(schema, true, int(rec.NumRows()), msg, mem)
		if err != nil {
			t.Fatalf("re-decode: %v", err)
		}
		rec2.Release()
		rec.Release()
		mem.AssertSize(t, 0)
	})
}

// FuzzProject projects arbitrary batches: no panics, only coded errors, and accepted output
// is a valid batch.
func FuzzProject(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, which uint8, appendOnly bool, count uint16, data []byte) {
		schema, _ := fuzzSchema(which)
		hdr := record.V0Header{SchemaID: 1, AppendOnly: appendOnly, RecordCount: int32(count)}
		batch := record.AppendV0Batch(nil, hdr, data)
		p, err := NewProjection(schema, []int{int(which/2) % schema.NumFields()})
		if err != nil {
			t.Fatal(err)
		}
		out, err := p.AppendBatch(nil, batch)
		if err != nil {
			if ferr.CodeOf(err) != ferr.CorruptRecordException {
				t.Fatalf("error without CORRUPT_RECORD_EXCEPTION: %v", err)
			}
			return
		}
		if err := record.Batch(out).Validate(); err != nil {
			t.Fatalf("projected batch invalid: %v", err)
		}
	})
}

// FuzzValidateBatch: PRODUCE_LOG's check of a batch body never panics, refuses with
// CORRUPT_RECORD_EXCEPTION, and whatever it accepts decodes with exactly the header's
// record count.
func FuzzValidateBatch(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, which uint8, appendOnly bool, count uint16, data []byte) {
		schema, _ := fuzzSchema(which)
		b := record.Batch(record.AppendV0Batch(nil, record.V0Header{SchemaID: 1, AppendOnly: appendOnly, WriterID: -1, BatchSequence: -1, RecordCount: int32(count)}, data))
		if err := ValidateBatch(schema, b); err != nil {
			if ferr.CodeOf(err) != ferr.CorruptRecordException {
				t.Fatalf("error without CORRUPT_RECORD_EXCEPTION: %v", err)
			}
			return
		}
		_, rec, err := Decode(schema, appendOnly, int(count), data, nil)
		if err != nil {
			t.Fatalf("validated body does not decode: %v", err)
		}
		if rec.NumRows() != int64(count) {
			t.Fatalf("validated body has %d rows, header %d", rec.NumRows(), count)
		}
		rec.Release()
	})
}
