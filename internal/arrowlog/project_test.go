package arrowlog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/internal/record"
	"github.com/stromdb/strom/internal/row"
)

func pick(rows [][]row.Datum, cols []int) [][]row.Datum {
	out := make([][]row.Datum, len(rows))
	for i, r := range rows {
		for _, c := range cols {
			out[i] = append(out[i], r[c])
		}
	}
	return out
}

func pickCols(cols []metadata.Column, idx []int) []metadata.Column {
	var out []metadata.Column
	for _, i := range idx {
		out = append(out, cols[i])
	}
	return out
}

// toV1 rewrites a V0 batch as V1 with a statistics block of the given bytes.
func toV1(b record.Batch, stats []byte) record.Batch {
	out := append([]byte(nil), b[:record.HeaderSizeV0]...)
	out[12] = record.MagicV1
	out = binary.LittleEndian.AppendUint32(out, uint32(len(stats)))
	out = append(out, stats...)
	out = append(out, b[record.HeaderSizeV0:]...)
	binary.LittleEndian.PutUint32(out[8:], uint32(len(out)-record.LogOverhead))
	binary.LittleEndian.PutUint32(out[21:], record.Checksum(out[25:]))
	return record.Batch(out)
}

func TestProjectEachColumnAndCombos(t *testing.T) {
	schema, _ := ArrowSchema(allCols)
	const n = 37
	rows := genRows(99, allCols, n)
	cts := make([]byte, n)
	for i := range cts {
		cts[i] = byte(1 + i%4)
	}
	var projections [][]int
	for i := range allCols {
		projections = append(projections, []int{i})
	}
	all := make([]int, len(allCols))
	for i := range all {
		all[i] = i
	}
	projections = append(projections, []int{0, 3, 26}, []int{24, 27, 28}, []int{8, 12, 25}, all)

	for _, c := range compressions {
		for _, changelog := range []bool{false, true} {
			rec, err := RowsToRecord(schema, allCols, rows, nil)
			if err != nil {
				t.Fatal(err)
			}
			var ct []byte
			if changelog {
				ct = cts
			}
			v0, err := AppendBatch(nil, record.V0Header{SchemaID: 2, WriterID: 5, BatchSequence: 8}, rec, ct, c, 0)
			rec.Release()
			if err != nil {
				t.Fatal(err)
			}
			v0[0] = 0x2a // base offset 42, as stored
			binary.LittleEndian.PutUint64(v0[13:], 1234)
			for _, batch := range []record.Batch{v0, toV1(v0, []byte("0123456789"))} {
				for _, proj := range projections {
					name := fmt.Sprintf("%v/changelog=%v/magic=%d/%v", c, changelog, batch.Magic(), proj)
					t.Run(name, func(t *testing.T) {
						p, err := NewProjection(schema, proj)
						if err != nil {
							t.Fatal(err)
						}
						out, err := p.AppendBatch([]byte("prefix"), batch)
						if err != nil {
							t.Fatal(err)
						}
						if string(out[:6]) != "prefix" {
							t.Fatal("dst prefix clobbered")
						}
						pb, rest, ok := record.Split(out[6:])
						if !ok || len(rest) != 0 {
							t.Fatalf("projected batch framing broken (ok=%v rest=%d)", ok, len(rest))
						}
						if err := pb.Validate(); err != nil {
							t.Fatal(err)
						}
						if pb.Magic() != batch.Magic() || pb.BaseOffset() != 42 || pb.CommitTimestamp() != 1234 ||
							pb.WriterID() != 5 || pb.BatchSequence() != 8 || pb.RecordCount() != n ||
							pb.SchemaID() != 2 || pb.AppendOnly() != batch.AppendOnly() || pb.RecordsOffset() != pb.HeaderSize() {
							t.Fatalf("header not preserved")
						}
						pcols := pickCols(allCols, proj)
						ps, _ := ArrowSchema(pcols)
						mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
						defer mem.AssertSize(t, 0)
						gotCT, got, err := Decode(ps, pb.AppendOnly(), int(pb.RecordCount()), pb.Records(), mem)
						if err != nil {
							t.Fatal(err)
						}
						defer got.Release()
						if string(gotCT) != string(ct) {
							t.Fatalf("change types %v want %v", gotCT, ct)
						}
						back, err := RecordToRows(got, pcols)
						if err != nil {
							t.Fatal(err)
						}
						assertRows(t, back, pick(rows, proj))
						if len(proj) == len(allCols) && batch.Magic() == record.MagicV0 && len(pb) != len(batch) {
							t.Fatalf("full projection of V0 changed size %d -> %d", len(batch), len(pb))
						}
					})
				}
			}
		}
	}
}

func TestProjectEmptyBatchPassesThrough(t *testing.T) {
	schema, _ := ArrowSchema(appendixCols)
	empty := readHex(t, "batch_v0_empty.hex")
	p, err := NewProjection(schema, []int{1})
	if err != nil {
		t.Fatal(err)
	}
	out, err := p.AppendBatch(nil, empty)
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != string(empty) {
		t.Fatal("empty batch changed")
	}
}

func TestProjectAppendixBatch(t *testing.T) {
	schema, _ := ArrowSchema(appendixCols)
	p, _ := NewProjection(schema, []int{0, 2})
	out, err := p.AppendBatch(nil, readHex(t, "batch_v0_appendonly.hex"))
	if err != nil {
		t.Fatal(err)
	}
	pb := record.Batch(out)
	// id and age only: 2 nodes, 4 buffers.
	m, err := parseMessage(pb.Records())
	if err != nil {
		t.Fatal(err)
	}
	if m.nNodes != 2 || m.nBuffers != 4 || m.codec != fbNoCodec || m.size != len(pb.Records()) {
		t.Fatalf("nodes=%d buffers=%d codec=%d size=%d/%d", m.nNodes, m.nBuffers, m.codec, m.size, len(pb.Records()))
	}
	ps, _ := ArrowSchema(pickCols(appendixCols, []int{0, 2}))
	_, rec, err := Decode(ps, true, 2, pb.Records(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	rows, _ := RecordToRows(rec, pickCols(appendixCols, []int{0, 2}))
	assertRows(t, rows, pick(appendixRows, []int{0, 2}))
}

func TestProjectionInvalid(t *testing.T) {
	schema, _ := ArrowSchema(appendixCols)
	for _, proj := range [][]int{nil, {}, {1, 0}, {1, 1}, {3}, {-1}, {0, 1, 2, 3}} {
		_, err := NewProjection(schema, proj)
		var fe *ferr.Error
		if !errors.As(err, &fe) || fe.Code != ferr.InvalidColumnProjection {
			t.Errorf("%v: got %v, want INVALID_COLUMN_PROJECTION", proj, err)
		}
	}
}

func TestProjectRejectsCorrupt(t *testing.T) {
	schema, _ := ArrowSchema(appendixCols)
	p, _ := NewProjection(schema, []int{1})
	good := readHex(t, "batch_v0_appendonly.hex")
	bad := append([]byte(nil), good...)
	bad[100] ^= 1 // inside the CRC-covered Arrow metadata
	if _, err := p.AppendBatch(nil, bad); ferr.CodeOf(err) != ferr.CorruptRecordException {
		t.Errorf("CRC-corrupt batch: %v", err)
	}
	// A schema with more columns than the batch holds.
	wide, _ := ArrowSchema(allCols)
	pw, _ := NewProjection(wide, []int{0})
	if _, err := pw.AppendBatch(nil, good); ferr.CodeOf(err) != ferr.CorruptRecordException {
		t.Errorf("schema/batch mismatch: %v", err)
	}
}
