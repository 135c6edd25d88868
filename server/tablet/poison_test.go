package tablet_test

import (
	"math"
	"testing"

	"github.com/stromdb/strom/internal/arrowlog"
	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/internal/record"
	"github.com/stromdb/strom/internal/row"
)

var intCol = []metadata.Column{{Name: "id", Type: metadata.DataType{Root: metadata.Int}}}

// arrowRecords returns the records section of an append-only ARROW batch of n INT rows.
func arrowRecords(t *testing.T, n int) []byte {
	t.Helper()
	schema, err := arrowlog.ArrowSchema(intCol)
	if err != nil {
		t.Fatal(err)
	}
	rows := make([][]row.Datum, n)
	for i := range rows {
		rows[i] = []row.Datum{{I: int64(i)}}
	}
	rec, err := arrowlog.RowsToRecord(schema, intCol, rows, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	recs, err := arrowlog.Encode(nil, rec, nil, arrowlog.CompressionNone, 0)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// arrowBatch wraps records in a V0 batch whose header claims count records, with a valid CRC.
func arrowBatch(schemaID int16, count int32, records []byte) []byte {
	return record.AppendV0Batch(nil, record.V0Header{SchemaID: schemaID, AppendOnly: true, WriterID: -1, BatchSequence: -1, RecordCount: count}, records)
}

// TestPoisonBatchesAreRefused reproduces finding 7 of issue 11: batches whose CRC is valid
// but whose body does not back the header, or whose schema id is unknown, must be refused
// whole and leave the high watermark where it was.
func TestPoisonBatchesAreRefused(t *testing.T) {
	coord, tablet := node(t)
	id := createLogTableFormat(t, coord, "poison_arrow", "ARROW")
	good := arrowRecords(t, 3)
	if r := produce(t, tablet, id, arrowBatch(1, 3, good)); r.GetErrorCode() != 0 || r.GetBaseOffset() != 0 {
		t.Fatalf("valid arrow batch: code %d %s", r.GetErrorCode(), r.GetErrorMessage())
	}
	garbage := make([]byte, len(good))
	for i := range garbage {
		garbage[i] = byte(i*7 + 1)
	}
	truncatedBody := append([]byte(nil), good[:len(good)-8]...)
	cases := []struct {
		name    string
		payload []byte
		code    ferr.Code
	}{
		{"header claims 2^31-1 records", arrowBatch(1, math.MaxInt32, good), ferr.CorruptRecordException},
		{"header claims more rows than the body", arrowBatch(1, 4, good), ferr.CorruptRecordException},
		{"garbage body with a valid CRC", arrowBatch(1, 3, garbage), ferr.CorruptRecordException},
		{"body cut short", arrowBatch(1, 3, truncatedBody), ferr.CorruptRecordException},
		{"valid batch after a poisoned one", append(arrowBatch(1, 3, good), arrowBatch(1, math.MaxInt32, good)...), ferr.CorruptRecordException},
		{"unknown schema id", arrowBatch(7, 3, good), ferr.SchemaNotExist},
		{"row-format body in an ARROW table", rowBatch(3), ferr.CorruptRecordException},
	}
	for _, c := range cases {
		r := produce(t, tablet, id, c.payload)
		if ferr.Code(r.GetErrorCode()) != c.code {
			t.Errorf("%s: code %d (%s), want %s", c.name, r.GetErrorCode(), r.GetErrorMessage(), c.code)
		}
		if hw := latest(t, tablet, id); hw != 3 {
			t.Fatalf("%s: high watermark moved to %d", c.name, hw)
		}
	}

	rowID := createLogTable(t, coord, "poison_rows")
	lying := record.AppendV0Batch(nil, record.V0Header{SchemaID: 1, AppendOnly: true, WriterID: -1, BatchSequence: -1, RecordCount: math.MaxInt32},
		record.AppendRowLogRecord(nil, record.AppendOnly, []byte{0, 1}))
	if r := produce(t, tablet, rowID, lying); ferr.Code(r.GetErrorCode()) != ferr.CorruptRecordException {
		t.Errorf("indexed batch claiming 2^31-1 records: code %d", r.GetErrorCode())
	}
	if r := produce(t, tablet, rowID, arrowBatch(9, 1, record.AppendRowLogRecord(nil, record.AppendOnly, []byte{0, 1}))); ferr.Code(r.GetErrorCode()) != ferr.SchemaNotExist {
		t.Errorf("indexed batch with unknown schema: code %d", r.GetErrorCode())
	}
	if hw := latest(t, tablet, rowID); hw != 0 {
		t.Fatalf("indexed table: high watermark %d after refused batches", hw)
	}
}
