package fluss

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/arrowlog"
	"github.com/stromdb/strom/internal/record"
	"github.com/stromdb/strom/internal/row"
	"github.com/stromdb/strom/proto/flusspb"
)

// When the server points to a remote segment instead of sending records, the scanner reads
// the segment file (unprojected) and applies its projection itself, from the fetch offset.
func TestRemoteLogSegmentRead(t *testing.T) {
	cfg, err := Config{ScannerFetchMaxBytesForBucket: 64}.withDefaults() // tiny: forces one-batch reads
	if err != nil {
		t.Fatal(err)
	}
	info := newTableInfo(TablePath{"d", "t"}, 7, 1, TableDescriptor{
		Schema:      NewSchema([]Column{NewColumn("id", Int()), NewColumn("name", String()), NewColumn("v", BigInt())}),
		BucketCount: 1,
	}.internal(), 0, 0)
	tbl, err := newTable(&Connection{cfg: cfg}, info)
	if err != nil {
		t.Fatal(err)
	}
	// A segment of three batches of five rows, offsets 100..114.
	var segment []byte
	for b := range 3 {
		rb, err := arrowlog.NewRowBuilder(tbl.arrowSchema, tbl.cols, nil)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 5 {
			id := int64(b*5 + i)
			if err := rb.Append([]row.Datum{{I: id}, {B: []byte("n")}, {I: id * 10}}); err != nil {
				t.Fatal(err)
			}
		}
		rec := rb.NewRecord()
		batch, err := arrowlog.AppendBatch(nil, record.V0Header{SchemaID: 1, WriterID: -1, BatchSequence: -1}, rec, nil, arrowlog.CompressionNone, 0)
		rec.Release()
		rb.Release()
		if err != nil {
			t.Fatal(err)
		}
		if err := record.FinishV0Batch(batch, record.V0Header{SchemaID: 1, AppendOnly: true, WriterID: -1, BatchSequence: -1, RecordCount: 5}); err != nil {
			t.Fatal(err)
		}
		record.Batch(batch).SetBaseOffset(100 + int64(b)*5)
		segment = append(segment, batch...)
	}
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "seg-1"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "seg-1", "00000000000000000100.log"), segment, 0o644); err != nil {
		t.Fatal(err)
	}
	secondBatch := int32(record.NextBatchSize(segment))

	sc, err := tbl.NewScan().Project(2, 0).CreateLogScanner() // pushed down for local fetches
	if err != nil {
		t.Fatal(err)
	}
	if !sc.f.pushdown {
		t.Fatal("projection not pushed down; the test needs the unprojected remote path")
	}
	answer := func(dirURI string, pos int32) *flusspb.PbFetchLogRespForBucket {
		return &flusspb.PbFetchLogRespForBucket{BucketId: proto.Int32(0), RemoteLogFetchInfo: &flusspb.PbRemoteLogFetchInfo{
			RemoteLogTabletDir: proto.String(dirURI), FirstStartPos: proto.Int32(pos),
			RemoteLogSegments: []*flusspb.PbRemoteLogSegment{{
				RemoteLogSegmentId: proto.String("seg-1"), RemoteLogStartOffset: proto.Int64(100),
				RemoteLogEndOffset: proto.Int64(114), SegmentSizeInBytes: proto.Int32(int32(len(segment))),
			}},
		}}
	}
	tb := NewTableBucket(7, 0)
	// Offset 107 is in the second batch: the server gives that batch's position.
	batches, err := sc.f.decodeBucket(t.Context(), tb, answer("file:"+dir, secondBatch), 107)
	if err != nil {
		t.Fatal(err)
	}
	if len(batches) != 1 || batches[0].BaseOffset != 107 || batches[0].LastOffset != 109 {
		t.Fatalf("batches %+v", batches)
	}
	rec := batches[0].Record
	if rec.NumCols() != 2 || rec.ColumnName(0) != "v" || rec.ColumnName(1) != "id" {
		t.Fatalf("projection not applied: %v", rec.Schema())
	}
	rows, err := arrowlog.RecordToRows(rec, sc.f.outCols)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range rows {
		if id := int64(107 + i - 100); r[1].I != id || r[0].I != id*10 {
			t.Fatalf("row %d = %+v", i, r)
		}
	}
	rec.Release()

	// A plain path works too; schemes the client cannot read are refused.
	if _, err := sc.f.decodeBucket(t.Context(), tb, answer(dir, 0), 100); err != nil {
		t.Fatalf("plain path: %v", err)
	}
	if _, err := sc.f.decodeBucket(t.Context(), tb, answer("oss://bucket/remote", 0), 100); !errors.Is(err, ErrRemoteLogNotSupported) {
		t.Fatalf("oss segment: %v", err)
	}
	bad := answer(dir, 0)
	bad.RemoteLogFetchInfo.RemoteLogSegments[0].RemoteLogSegmentId = proto.String("../seg-1")
	if _, err := sc.f.decodeBucket(t.Context(), tb, bad, 100); err == nil {
		t.Fatal("a segment id with a path separator was accepted")
	}
}
