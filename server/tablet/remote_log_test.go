package tablet_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/internal/record"
	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
	"github.com/stromdb/strom/server"
	"github.com/stromdb/strom/server/config"
)

// FETCH_LOG below the local log start of a tiered bucket answers with remote_log_fetch_info
// as Fluss does — no records, the remote segments from the one holding the offset, the byte
// position in the first — and does not wait for min_bytes; LIST_OFFSETS earliest is the
// remote log start.
func TestFetchBelowLocalStartAnswersRemoteLogFetchInfo(t *testing.T) {
	dir := t.TempDir()
	cfg := config.Default()
	cfg.DataDir = filepath.Join(dir, "data")
	cfg.CoordinatorListeners = []config.Listener{{Name: "FLUSS", Host: "127.0.0.1", Port: 0}}
	cfg.TabletListeners = []config.Listener{{Name: "FLUSS", Host: "127.0.0.1", Port: 0}}
	for k, v := range map[string]string{"remote.data.dir": filepath.Join(dir, "remote"), "log.segment.file-size": "1kb",
		"remote.log.task-interval-duration": "50ms"} {
		if err := cfg.Set(k, v); err != nil {
			t.Fatal(err)
		}
	}
	n, err := server.Start(context.Background(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	ctx := context.Background()
	coord, err := wire.Dial(ctx, n.Addr("coordinator"), wire.ClientConfig{ExpectServerType: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer coord.Close()
	tablet, err := wire.Dial(ctx, n.Addr("tablet-server"), wire.ClientConfig{ExpectServerType: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer tablet.Close()

	d := metadata.TableDescriptor{
		Schema:      metadata.Schema{Columns: []metadata.Column{{Name: "id", Type: metadata.DataType{Root: metadata.Int}}}},
		BucketCount: 1, CustomProperties: map[string]string{},
		Properties: map[string]string{metadata.PropLogFormat: "INDEXED", metadata.PropLogTieredLocalSegments: "1"},
	}
	d.Schema.AssignFieldIDs()
	path := &flusspb.PbTablePath{DatabaseName: proto.String("fluss"), TableName: proto.String("tiered")}
	if err := coord.Call(ctx, wire.CreateTable, &flusspb.CreateTableRequest{TablePath: path, TableJson: d.JSON(), IgnoreIfExists: proto.Bool(false)}, &flusspb.CreateTableResponse{}); err != nil {
		t.Fatal(err)
	}
	var info flusspb.GetTableInfoResponse
	if err := coord.Call(ctx, wire.GetTableInfo, &flusspb.GetTableInfoRequest{TablePath: path}, &info); err != nil {
		t.Fatal(err)
	}
	id := info.GetTableId()
	for range 60 {
		produce(t, tablet, id, rowBatch(20)) // ~100 bytes each: ~10 segments of 1 KiB
	}
	list := func(typ int32) int64 {
		var resp flusspb.ListOffsetsResponse
		req := &flusspb.ListOffsetsRequest{FollowerServerId: proto.Int32(-1), OffsetType: proto.Int32(typ), TableId: proto.Int64(id), BucketId: []int32{0}}
		if err := tablet.Call(ctx, wire.ListOffsets, req, &resp); err != nil {
			t.Fatal(err)
		}
		return resp.BucketsResp[0].GetOffset()
	}
	fetch := func(offset int64, minBytes int32) *flusspb.PbFetchLogRespForBucket {
		var resp flusspb.FetchLogResponse
		// min_bytes far above what one fetch returns and a long max_wait: a remote answer must
		// come back at once, within the call's deadline.
		req := &flusspb.FetchLogRequest{FollowerServerId: proto.Int32(-1), MaxBytes: proto.Int32(1 << 20), MinBytes: proto.Int32(minBytes), MaxWaitMs: proto.Int32(120_000),
			TablesReq: []*flusspb.PbFetchLogReqForTable{{TableId: proto.Int64(id), ProjectionPushdownEnabled: proto.Bool(false),
				BucketsReq: []*flusspb.PbFetchLogReqForBucket{{BucketId: proto.Int32(0), FetchOffset: proto.Int64(offset), MaxFetchBytes: proto.Int32(1 << 20)}}}}}
		cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		defer cancel()
		if err := tablet.Call(cctx, wire.FetchLog, req, &resp); err != nil {
			t.Fatal(err)
		}
		return resp.TablesResp[0].BucketsResp[0]
	}
	// Wait for the local copies to go: one segment left in the bucket's directory.
	bucketDir := filepath.Join(cfg.DataDir, "tablet", fmt.Sprintf("table-%d", id), "bucket-0")
	for deadline := time.Now().Add(30 * time.Second); ; {
		logs, _ := filepath.Glob(filepath.Join(bucketDir, "*.log"))
		if len(logs) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d local segments left", len(logs))
		}
		time.Sleep(20 * time.Millisecond)
	}
	r := fetch(0, 1<<20)
	if r.RemoteLogFetchInfo == nil {
		t.Fatalf("fetch at 0 after tiering: %v", r)
	}
	ri := r.RemoteLogFetchInfo
	if r.GetErrorCode() != 0 || r.Records != nil || r.GetHighWatermark() != 1200 || r.GetLogStartOffset() != 0 {
		t.Fatalf("remote answer: code %d, %d record bytes, hw %d, log start %d", r.GetErrorCode(), len(r.Records), r.GetHighWatermark(), r.GetLogStartOffset())
	}
	segs := ri.GetRemoteLogSegments()
	if len(segs) == 0 || segs[0].GetRemoteLogStartOffset() != 0 || ri.GetFirstStartPos() != 0 || ri.PartitionName != nil {
		t.Fatalf("fetch info %v", ri)
	}
	for i, s := range segs {
		if i > 0 && s.GetRemoteLogStartOffset() != segs[i-1].GetRemoteLogEndOffset() {
			t.Fatalf("segments not contiguous: %v", segs)
		}
		p := filepath.Join(ri.GetRemoteLogTabletDir(), s.GetRemoteLogSegmentId(), fmt.Sprintf("%020d.log", s.GetRemoteLogStartOffset()))
		data, err := os.ReadFile(p)
		if err != nil || int32(len(data)) != s.GetSegmentSizeInBytes() || s.GetMaxTimestamp() <= 0 {
			t.Fatalf("segment %s: %d bytes (%v), manifest %d, max ts %d", p, len(data), err, s.GetSegmentSizeInBytes(), s.GetMaxTimestamp())
		}
		b, _, ok := record.Split(data)
		if !ok || b.BaseOffset() != s.GetRemoteLogStartOffset() {
			t.Fatalf("segment %s does not start with its start offset", p)
		}
	}
	if earliest := list(0); earliest != 0 {
		t.Fatalf("LIST_OFFSETS earliest %d, want the remote log start 0", earliest)
	}
	var stats flusspb.GetTableStatsResponse
	if err := tablet.Call(ctx, wire.GetTableStats, &flusspb.GetTableStatsRequest{TableId: proto.Int64(id),
		BucketsReq: []*flusspb.PbTableStatsReqForBucket{{BucketId: proto.Int32(0)}}}, &stats); err != nil {
		t.Fatal(err)
	}
	if rc := stats.BucketsResp[0].GetRowCount(); rc != 1200 {
		t.Fatalf("GET_TABLE_STATS row count %d, want all 1200 rows, tiered or not", rc)
	}
	// An offset inside the second segment: the first segment named is the one holding it,
	// and first_start_pos points at a batch at or before it.
	mid := segs[1].GetRemoteLogStartOffset() + 25
	r = fetch(mid, 1<<20)
	ri = r.RemoteLogFetchInfo
	if ri == nil || ri.GetRemoteLogSegments()[0].GetRemoteLogSegmentId() != segs[1].GetRemoteLogSegmentId() {
		t.Fatalf("fetch at %d: %v", mid, r)
	}
	data, _ := os.ReadFile(filepath.Join(ri.GetRemoteLogTabletDir(), segs[1].GetRemoteLogSegmentId(), fmt.Sprintf("%020d.log", segs[1].GetRemoteLogStartOffset())))
	b, _, ok := record.Split(data[ri.GetFirstStartPos():])
	if !ok || b.BaseOffset() > mid || b.LastOffset() < mid-20 {
		t.Fatalf("first_start_pos %d: batch [%d, %d] for offset %d", ri.GetFirstStartPos(), b.BaseOffset(), b.LastOffset(), mid)
	}
	// At the end of the remote log the local log answers with records (min_bytes 0: no wait).
	end := segs[len(segs)-1].GetRemoteLogEndOffset()
	for r = fetch(end, 0); r.RemoteLogFetchInfo != nil; r = fetch(end, 0) {
		end = r.RemoteLogFetchInfo.GetRemoteLogSegments()[len(r.RemoteLogFetchInfo.GetRemoteLogSegments())-1].GetRemoteLogEndOffset()
	}
	if r.GetErrorCode() != 0 || len(r.Records) == 0 {
		t.Fatalf("fetch at the remote end %d: code %d, %d bytes", end, r.GetErrorCode(), len(r.Records))
	}
}
