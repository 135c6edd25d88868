package tablet_test

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/internal/record"
	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
	"github.com/stromdb/strom/server"
	"github.com/stromdb/strom/server/config"
)

// node starts a server and returns clients of its coordinator and tablet server.
func node(t *testing.T) (coord, tablet *wire.ClientConn) {
	t.Helper()
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	cfg.CoordinatorListeners = []config.Listener{{Name: "FLUSS", Host: "127.0.0.1", Port: 0}}
	cfg.TabletListeners = []config.Listener{{Name: "FLUSS", Host: "127.0.0.1", Port: 0}}
	n, err := server.Start(context.Background(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	ctx := context.Background()
	if coord, err = wire.Dial(ctx, n.Addr("coordinator"), wire.ClientConfig{ExpectServerType: 1}); err != nil {
		t.Fatal(err)
	}
	if tablet, err = wire.Dial(ctx, n.Addr("tablet-server"), wire.ClientConfig{ExpectServerType: 2}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { coord.Close(); tablet.Close() })
	return coord, tablet
}

// createLogTable creates fluss.<name> with one INT column in the INDEXED log format (so that
// rowBatch writes it) and returns its id.
func createLogTable(t testing.TB, coord *wire.ClientConn, name string) int64 {
	return createLogTableFormat(t, coord, name, "INDEXED")
}

// createLogTableFormat creates fluss.<name> with one INT column in the given log format.
func createLogTableFormat(t testing.TB, coord *wire.ClientConn, name, format string) int64 {
	t.Helper()
	ctx := context.Background()
	d := metadata.TableDescriptor{
		Schema:           metadata.Schema{Columns: []metadata.Column{{Name: "id", Type: metadata.DataType{Root: metadata.Int}}}},
		BucketCount:      1,
		Properties:       map[string]string{metadata.PropLogFormat: format},
		CustomProperties: map[string]string{},
	}
	d.Schema.AssignFieldIDs()
	path := &flusspb.PbTablePath{DatabaseName: proto.String("fluss"), TableName: proto.String(name)}
	if err := coord.Call(ctx, wire.CreateTable, &flusspb.CreateTableRequest{TablePath: path, TableJson: d.JSON(), IgnoreIfExists: proto.Bool(false)}, &flusspb.CreateTableResponse{}); err != nil {
		t.Fatal(err)
	}
	var info flusspb.GetTableInfoResponse
	if err := coord.Call(ctx, wire.GetTableInfo, &flusspb.GetTableInfoRequest{TablePath: path}, &info); err != nil {
		t.Fatal(err)
	}
	return info.GetTableId()
}

func produce(t testing.TB, tablet *wire.ClientConn, tableID int64, records []byte) *flusspb.PbProduceLogRespForBucket {
	t.Helper()
	var resp flusspb.ProduceLogResponse
	req := &flusspb.ProduceLogRequest{Acks: proto.Int32(-1), TableId: proto.Int64(tableID), TimeoutMs: proto.Int32(30000),
		BucketsReq: []*flusspb.PbProduceLogReqForBucket{{BucketId: proto.Int32(0), Records: records}}}
	if err := tablet.Call(context.Background(), wire.ProduceLog, req, &resp); err != nil {
		t.Fatal(err)
	}
	if len(resp.BucketsResp) != 1 || resp.BucketsResp[0].GetBucketId() != 0 {
		t.Fatalf("response buckets %v, want exactly bucket 0", resp.BucketsResp)
	}
	return resp.BucketsResp[0]
}

func latest(t testing.TB, tablet *wire.ClientConn, tableID int64) int64 {
	t.Helper()
	var resp flusspb.ListOffsetsResponse
	req := &flusspb.ListOffsetsRequest{FollowerServerId: proto.Int32(-1), OffsetType: proto.Int32(1), TableId: proto.Int64(tableID), BucketId: []int32{0}}
	if err := tablet.Call(context.Background(), wire.ListOffsets, req, &resp); err != nil {
		t.Fatal(err)
	}
	return resp.BucketsResp[0].GetOffset()
}

func rowBatch(n int32) []byte {
	// An INDEXED row-format batch: PRODUCE_LOG checks its framing and record count.
	var recs []byte
	for i := int32(0); i < n; i++ {
		recs = record.AppendRowLogRecord(recs, record.AppendOnly, []byte{0, byte(i)})
	}
	return record.AppendV0Batch(nil, record.V0Header{SchemaID: 1, AppendOnly: true, WriterID: -1, BatchSequence: -1, RecordCount: n}, recs)
}

func TestCorruptBatchIsRejectedAndNothingStored(t *testing.T) {
	coord, tablet := node(t)
	id := createLogTable(t, coord, "corrupt")

	good := rowBatch(3)
	if r := produce(t, tablet, id, good); r.GetErrorCode() != 0 || r.GetBaseOffset() != 0 {
		t.Fatalf("good batch: code %d base %d", r.GetErrorCode(), r.GetBaseOffset())
	}

	flipped := append(rowBatch(2), rowBatch(2)...)
	flipped[len(flipped)-1] ^= 0xff // the second batch's CRC no longer matches
	torn := rowBatch(2)
	torn = append(torn, rowBatch(2)[:20]...)
	for name, payload := range map[string][]byte{"crc": flipped, "torn tail": torn, "garbage": {1, 2, 3}} {
		r := produce(t, tablet, id, payload)
		if ferr.Code(r.GetErrorCode()) != ferr.CorruptRecordException {
			t.Errorf("%s: error code %d, want CORRUPT_RECORD_EXCEPTION", name, r.GetErrorCode())
		}
		if got := latest(t, tablet, id); got != 3 {
			t.Fatalf("%s: log end moved to %d: part of a rejected request was stored", name, got)
		}
	}
	if r := produce(t, tablet, id, rowBatch(1)); r.GetBaseOffset() != 3 {
		t.Fatalf("after rejections the next batch got base offset %d, want 3", r.GetBaseOffset())
	}
}

func TestFetchOutOfRangeAndUnknownBucket(t *testing.T) {
	coord, tablet := node(t)
	id := createLogTable(t, coord, "fetch_errors")
	produce(t, tablet, id, rowBatch(2))
	fetch := func(tableID int64, bucket int32, offset int64) *flusspb.PbFetchLogRespForBucket {
		var resp flusspb.FetchLogResponse
		req := &flusspb.FetchLogRequest{FollowerServerId: proto.Int32(-1), MaxBytes: proto.Int32(1 << 20),
			TablesReq: []*flusspb.PbFetchLogReqForTable{{TableId: proto.Int64(tableID), ProjectionPushdownEnabled: proto.Bool(false),
				BucketsReq: []*flusspb.PbFetchLogReqForBucket{{BucketId: proto.Int32(bucket), FetchOffset: proto.Int64(offset), MaxFetchBytes: proto.Int32(1 << 20)}}}}}
		if err := tablet.Call(context.Background(), wire.FetchLog, req, &resp); err != nil {
			t.Fatal(err)
		}
		return resp.TablesResp[0].BucketsResp[0]
	}
	produce(t, tablet, id, rowBatch(3))
	r := fetch(id, 0, -2)
	if r.GetErrorCode() != 0 || r.GetHighWatermark() != 5 || len(r.Records) != len(rowBatch(2))+len(rowBatch(3)) {
		t.Fatalf("fetch from earliest: code %d hw %d %d bytes", r.GetErrorCode(), r.GetHighWatermark(), len(r.Records))
	}
	var bases []int64
	for b, err := range record.Iterate(r.Records) {
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Validate(); err != nil {
			t.Fatalf("fetched batch at %d: %v", b.BaseOffset(), err)
		}
		bases = append(bases, b.BaseOffset())
	}
	if len(bases) != 2 || bases[0] != 0 || bases[1] != 2 {
		t.Fatalf("fetched batches at offsets %v, want [0 2]", bases)
	}
	if r := fetch(id, 0, 3); len(r.Records) != len(rowBatch(3)) {
		t.Fatalf("fetch from the middle of a batch returned %d bytes, want the whole batch", len(r.Records))
	}
	if r := fetch(id, 0, 5); r.GetErrorCode() != 0 || r.Records == nil || len(r.Records) != 0 {
		t.Fatalf("fetch at the high watermark must be empty but present: code %d records %v", r.GetErrorCode(), r.Records)
	}
	if r := fetch(id, 0, 99); ferr.Code(r.GetErrorCode()) != ferr.LogOffsetOutOfRangeException {
		t.Fatalf("fetch past the end: code %d", r.GetErrorCode())
	}
	if r := fetch(id, 7, 0); ferr.Code(r.GetErrorCode()) != ferr.UnknownTableOrBucketException {
		t.Fatalf("unknown bucket: code %d", r.GetErrorCode())
	}
	if r := fetch(id+100, 0, 0); ferr.Code(r.GetErrorCode()) != ferr.UnknownTableOrBucketException {
		t.Fatalf("unknown table: code %d", r.GetErrorCode())
	}
}

func TestInvalidAcksFailsTheRequest(t *testing.T) {
	coord, tablet := node(t)
	id := createLogTable(t, coord, "acks")
	req := &flusspb.ProduceLogRequest{Acks: proto.Int32(2), TableId: proto.Int64(id), TimeoutMs: proto.Int32(1000)}
	err := tablet.Call(context.Background(), wire.ProduceLog, req, &flusspb.ProduceLogResponse{})
	if ferr.CodeOf(err) != ferr.InvalidRequiredAcks {
		t.Fatalf("acks=2: %v, want INVALID_REQUIRED_ACKS", err)
	}
}
