package arrowlog

import (
	"bytes"
	"encoding/hex"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/stromdb/strom/internal/record"
	"github.com/stromdb/strom/internal/row"
)

// The appendix rows: (1,'alice',30), (2,NULL,NULL).
var appendixRows = [][]row.Datum{
	{i64(1), str("alice"), i64(30)},
	{i64(2), null, null},
}

func TestAppendixEncodeUncompressed(t *testing.T) {
	schema, err := ArrowSchema(appendixCols)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := RowsToRecord(schema, appendixCols, appendixRows, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	got, err := Encode(nil, rec, nil, CompressionNone, 0)
	if err != nil {
		t.Fatal(err)
	}
	if want := readHex(t, "ipc_uncompressed.hex"); !bytes.Equal(got, want) {
		t.Fatalf("IPC message mismatch\n got %s\nwant %s", hex.Dump(got), hex.Dump(want))
	}

	hdr := record.V0Header{SchemaID: 1, WriterID: record.NoWriterID, BatchSequence: record.NoBatchSequence}
	batch, err := AppendBatch(nil, hdr, rec, nil, CompressionNone, 0)
	if err != nil {
		t.Fatal(err)
	}
	if want := readHex(t, "batch_v0_appendonly.hex"); !bytes.Equal(batch, want) {
		t.Fatalf("batch mismatch\n got %s\nwant %s", hex.Dump(batch), hex.Dump(want))
	}
}

func TestAppendixChangelogBatch(t *testing.T) {
	want := readHex(t, "batch_v0_changelog.hex")
	b := record.Batch(want)
	if err := b.Validate(); err != nil {
		t.Fatal(err)
	}
	schema, _ := ArrowSchema(appendixCols)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	cts, rec, err := Decode(schema, b.AppendOnly(), int(b.RecordCount()), b.Records(), mem)
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	if !bytes.Equal(cts, []byte{ChangeInsert, ChangeDelete}) {
		t.Fatalf("change types %v", cts)
	}
	rows, err := RecordToRows(rec, appendixCols)
	if err != nil {
		t.Fatal(err)
	}
	wantRows := [][]row.Datum{
		{i64(1), str("alice"), i64(30)},
		{i64(1), str("bob"), i64(30)},
	}
	assertRows(t, rows, wantRows)

	// Re-encoding the decoded rows reproduces the batch byte for byte.
	rec2, err := RowsToRecord(schema, appendixCols, rows, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rec2.Release()
	hdr := record.V0Header{SchemaID: 1, WriterID: record.NoWriterID, BatchSequence: record.NoBatchSequence}
	got, err := AppendBatch(nil, hdr, rec2, cts, CompressionNone, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("changelog batch mismatch\n got %s\nwant %s", hex.Dump(got), hex.Dump(want))
	}
}

func TestAppendixEmptyBatch(t *testing.T) {
	schema, _ := ArrowSchema(appendixCols)
	rec, err := RowsToRecord(schema, appendixCols, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	hdr := record.V0Header{SchemaID: 1, WriterID: 7, BatchSequence: 3}
	got, err := AppendBatch(nil, hdr, rec, []byte{}, CompressionZstd, 0)
	if err != nil {
		t.Fatal(err)
	}
	if want := readHex(t, "batch_v0_empty.hex"); !bytes.Equal(got, want) {
		t.Fatalf("empty batch mismatch\n got %s\nwant %s", hex.Dump(got), hex.Dump(want))
	}
	cts, rec2, err := Decode(schema, false, 0, record.Batch(got).Records(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rec2.Release()
	if len(cts) != 0 || rec2.NumRows() != 0 || rec2.NumCols() != 3 {
		t.Fatalf("empty decode: %v %d rows %d cols", cts, rec2.NumRows(), rec2.NumCols())
	}
}

// TestAppendixCompressedDecode decodes the arrow-go ZSTD and LZ4_FRAME messages and checks
// that our metadata builder reproduces their flatbuffers exactly.
func TestAppendixCompressedDecode(t *testing.T) {
	schema, _ := ArrowSchema(appendixCols)
	for _, name := range []string{"ipc_uncompressed.hex", "ipc_zstd.hex", "ipc_lz4.hex"} {
		t.Run(name, func(t *testing.T) {
			msg := readHex(t, name)
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			cts, rec, err := Decode(schema, true, 2, msg, mem)
			if err != nil {
				t.Fatal(err)
			}
			defer rec.Release()
			if cts != nil {
				t.Fatalf("append-only batch returned change types %v", cts)
			}
			rows, err := RecordToRows(rec, appendixCols)
			if err != nil {
				t.Fatal(err)
			}
			assertRows(t, rows, appendixRows)

			m, err := parseMessage(msg)
			if err != nil {
				t.Fatal(err)
			}
			var nodes []fieldNode
			var bufs []bufferSpec
			for i := 0; i < m.nNodes; i++ {
				nodes = append(nodes, m.node(i))
			}
			for i := 0; i < m.nBuffers; i++ {
				bufs = append(bufs, m.buffer(i))
			}
			s := projPool.Get().(*projScratch)
			defer projPool.Put(s)
			meta := buildRecordBatchMeta(s.fb, m.rows, nodes, bufs, m.codec, int64(len(m.body)))
			rebuilt := appendMessage(nil, meta, m.body)
			if !bytes.Equal(rebuilt, msg[:m.size]) {
				t.Fatalf("rebuilt message differs\n got %s\nwant %s", hex.Dump(rebuilt), hex.Dump(msg))
			}
		})
	}
}
