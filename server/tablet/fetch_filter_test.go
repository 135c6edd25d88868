package tablet_test

import (
	"context"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/arrowlog"
	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/predicate"
	"github.com/stromdb/strom/internal/record"
	"github.com/stromdb/strom/internal/row"
	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
)

// idBatch is an ARROW batch (schema 1, one INT column "id") of the ids [from, from+n).
func idBatch(t *testing.T, from, n int) []byte {
	t.Helper()
	schema, err := arrowlog.ArrowSchema(intCol)
	if err != nil {
		t.Fatal(err)
	}
	rows := make([][]row.Datum, n)
	for i := range rows {
		rows[i] = []row.Datum{{I: int64(from + i)}}
	}
	rec, err := arrowlog.RowsToRecord(schema, intCol, rows, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	b, err := arrowlog.AppendBatch(nil, record.V0Header{SchemaID: 1, WriterID: -1, BatchSequence: -1}, rec, nil, arrowlog.CompressionZstd, 3)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func intLit(v int32) *flusspb.PbLiteralValue {
	return &flusspb.PbLiteralValue{LiteralType: proto.Int32(3), IsNull: proto.Bool(false), IntValue: proto.Int32(v)}
}

func filteredFetch(tablet *wire.ClientConn, tableID int64, p *flusspb.PbPredicate, schemaID *int32, maxBytes int32) (*flusspb.PbFetchLogRespForBucket, error) {
	tr := &flusspb.PbFetchLogReqForTable{TableId: proto.Int64(tableID), ProjectionPushdownEnabled: proto.Bool(false),
		FilterPredicate: p, FilterSchemaId: schemaID,
		BucketsReq: []*flusspb.PbFetchLogReqForBucket{{BucketId: proto.Int32(0), FetchOffset: proto.Int64(0), MaxFetchBytes: proto.Int32(maxBytes)}}}
	req := &flusspb.FetchLogRequest{FollowerServerId: proto.Int32(-1), MaxBytes: proto.Int32(math.MaxInt32), TablesReq: []*flusspb.PbFetchLogReqForTable{tr},
		MinBytes: proto.Int32(1), MaxWaitMs: proto.Int32(5000)}
	var resp flusspb.FetchLogResponse
	if err := tablet.Call(context.Background(), wire.FetchLog, req, &resp); err != nil {
		return nil, err
	}
	return resp.TablesResp[0].BucketsResp[0], nil
}

// offsetsOf lists the base offsets of the batches in records.
func offsetsOf(t *testing.T, records []byte) []int64 {
	t.Helper()
	var out []int64
	for b, err := range record.Iterate(records) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b.BaseOffset())
	}
	return out
}

func TestFetchLogFilterPrunesAndReportsFilteredEnd(t *testing.T) {
	coord, tablet := node(t)
	id := createLogTableFormat(t, coord, "filtered", "ARROW")
	var size int
	for b := range 10 {
		batch := idBatch(t, b*10, 10)
		size = len(batch)
		produce(t, tablet, id, batch)
	}
	one := proto.Int32(1)
	cases := []struct {
		name     string
		p        *flusspb.PbPredicate
		maxBytes int32
		batches  []int64
		end      int64 // filtered_end_offset, -1 = absent
	}{
		{"last batch matches", predicate.LeafPB(predicate.GreaterOrEqual, 0, intLit(95)), math.MaxInt32, []int64{90}, -1},
		{"trailing batches pruned", predicate.LeafPB(predicate.LessThan, 0, intLit(15)), math.MaxInt32, []int64{0, 10}, 100},
		{"leading and trailing pruned", predicate.CompoundPB(true, predicate.LeafPB(predicate.Equal, 0, intLit(55)), predicate.LeafPB(predicate.In, 0, intLit(71), intLit(-3))), math.MaxInt32, []int64{50, 70}, 100},
		{"nothing matches", predicate.LeafPB(predicate.IsNull, 0), math.MaxInt32, nil, 100},
		{"response full: no filtered end", predicate.LeafPB(predicate.LessThan, 0, intLit(15)), int32(size), []int64{0}, -1},
		{"unknown field: unfiltered", predicate.LeafPB(predicate.Equal, 7, intLit(1)), math.MaxInt32, []int64{0, 10, 20, 30, 40, 50, 60, 70, 80, 90}, -1},
	}
	for _, c := range cases {
		bo, err := filteredFetch(tablet, id, c.p, one, c.maxBytes)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if bo.GetErrorCode() != 0 || bo.Records == nil {
			t.Fatalf("%s: error %d %q, records nil: %v", c.name, bo.GetErrorCode(), bo.GetErrorMessage(), bo.Records == nil)
		}
		got := offsetsOf(t, bo.Records)
		if len(got) != len(c.batches) || (len(got) > 0 && (got[0] != c.batches[0] || got[len(got)-1] != c.batches[len(c.batches)-1])) {
			t.Errorf("%s: batches at %v, want %v", c.name, got, c.batches)
		}
		end := int64(-1)
		if bo.FilteredEndOffset != nil {
			end = bo.GetFilteredEndOffset()
		}
		if end != c.end {
			t.Errorf("%s: filtered_end_offset %d, want %d", c.name, end, c.end)
		}
		if bo.GetHighWatermark() != 100 {
			t.Errorf("%s: high watermark %d", c.name, bo.GetHighWatermark())
		}
	}
	// A predicate without filter_schema_id fails the request, as in Fluss.
	_, err := filteredFetch(tablet, id, predicate.LeafPB(predicate.IsNull, 0), nil, math.MaxInt32)
	var fe *ferr.Error
	if !errors.As(err, &fe) || fe.Code != ferr.UnknownServerError {
		t.Errorf("no filter_schema_id: %v", err)
	}
	// A malformed predicate (unknown function) reads unfiltered.
	bo, err := filteredFetch(tablet, id, predicate.LeafPB(99, 0, intLit(1)), one, math.MaxInt32)
	if err != nil || len(offsetsOf(t, bo.Records)) != 10 {
		t.Errorf("malformed predicate: %v", err)
	}
}

// toV1 rewrites a V0 batch as a V1 batch carrying the statistics block stats.
func toV1(t *testing.T, v0 []byte, stats []byte) []byte {
	t.Helper()
	out := append([]byte{}, v0[:record.HeaderSizeV0]...)
	out = binary.LittleEndian.AppendUint32(out, uint32(len(stats)))
	out = append(out, stats...)
	out = append(out, v0[record.HeaderSizeV0:]...)
	out[12] = record.MagicV1
	binary.LittleEndian.PutUint32(out[8:], uint32(len(out)-12))
	binary.LittleEndian.PutUint32(out[21:], crc32.Checksum(out[25:], crc32.MakeTable(crc32.Castagnoli)))
	if err := record.Batch(out).Validate(); err != nil {
		t.Fatal(err)
	}
	return out
}

// A V1 batch (a Java writer with table.statistics.columns) is pruned by the statistics
// Strom computes, not by the block the writer attached.
func TestFetchLogFilterPrunesV1Batches(t *testing.T) {
	coord, tablet := node(t)
	id := createLogTableFormat(t, coord, "filtered_v1", "ARROW")
	stats, err := record.AppendStatistics(nil, []int16{0}, []int32{0}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for b := range 3 {
		if r := produce(t, tablet, id, toV1(t, idBatch(t, b*10, 10), stats)); r.GetErrorCode() != 0 {
			t.Fatalf("produce V1: %d %s", r.GetErrorCode(), r.GetErrorMessage())
		}
	}
	bo, err := filteredFetch(tablet, id, predicate.LeafPB(predicate.Equal, 0, intLit(15)), proto.Int32(1), math.MaxInt32)
	if err != nil {
		t.Fatal(err)
	}
	got := offsetsOf(t, bo.Records)
	if len(got) != 1 || got[0] != 10 || bo.GetFilteredEndOffset() != 30 {
		t.Fatalf("batches %v, filtered end %d", got, bo.GetFilteredEndOffset())
	}
	for b := range record.Iterate(bo.Records) {
		if b.Magic() != record.MagicV1 || len(b.Statistics()) != len(stats) {
			t.Errorf("served batch: magic %d, %d statistics bytes", b.Magic(), len(b.Statistics()))
		}
	}
}

// Statistics are recorded beside the segment on append, survive a restart, and a sidecar
// that is missing or stale is rebuilt from the batches without changing any answer.
func TestFetchLogFilterStatisticsSidecar(t *testing.T) {
	r := &restartable{t: t, dir: t.TempDir(), logs: io.Discard}
	r.start()
	id := createLogTableFormat(t, r.coord, "filtered_sidecar", "ARROW")
	for b := range 10 {
		produce(t, r.tablet, id, idBatch(t, b*10, 10))
	}
	sidecars := func() []string {
		var out []string
		_ = filepath.WalkDir(r.dir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && strings.HasSuffix(p, ".batchstats") {
				out = append(out, p)
			}
			return nil
		})
		return out
	}
	files := sidecars()
	if len(files) != 1 {
		t.Fatalf("sidecars after append: %v", files)
	}
	if fi, err := os.Stat(files[0]); err != nil || fi.Size() == 0 {
		t.Fatalf("sidecar: %v %v", fi, err)
	}
	check := func(when string) {
		t.Helper()
		bo, err := filteredFetch(r.tablet, id, predicate.LeafPB(predicate.Equal, 0, intLit(42)), proto.Int32(1), math.MaxInt32)
		if err != nil {
			t.Fatal(err)
		}
		if got := offsetsOf(t, bo.Records); len(got) != 1 || got[0] != 40 || bo.GetFilteredEndOffset() != 100 {
			t.Fatalf("%s: batches %v, filtered end %d", when, got, bo.GetFilteredEndOffset())
		}
	}
	check("before restart")
	r.stop()
	r.start()
	check("after restart")
	r.stop()
	if err := os.Remove(files[0]); err != nil {
		t.Fatal(err)
	}
	r.start()
	check("sidecar removed")
	if len(sidecars()) != 1 {
		t.Error("sidecar not rebuilt")
	}
	r.stop()
	if err := os.WriteFile(files[0], []byte{0xff, 0xff, 0xff}, 0o644); err != nil { // garbage
		t.Fatal(err)
	}
	r.start()
	check("sidecar garbage")
	r.stop()
	// The garbage was cut and the rebuilt statistics appended after it are read back.
	if fi, err := os.Stat(files[0]); err != nil || fi.Size() < 10 {
		t.Fatalf("sidecar after rebuild: %v %v", fi, err)
	}
	r.start()
	check("after rebuild")
	r.stop()
}
