package tablet_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
	"github.com/stromdb/strom/server"
	"github.com/stromdb/strom/server/config"
	"github.com/stromdb/strom/server/laketest"
)

// Retention of a lake-enabled table keeps records that are not tiered yet; the same table
// without the lake loses its expired segments.
func TestRetentionHoldsUntieredRecordsOfLakeTables(t *testing.T) {
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	cfg.CoordinatorListeners = []config.Listener{{Name: "FLUSS", Host: "127.0.0.1", Port: 0}}
	cfg.TabletListeners = []config.Listener{{Name: "FLUSS", Host: "127.0.0.1", Port: 0}}
	cfg.LogSegmentBytes = 64 // every batch rolls a segment
	cfg.LogRetentionCheck = 20 * time.Millisecond
	if err := cfg.Set("datalake.format", "iceberg"); err != nil {
		t.Fatal(err)
	}
	if err := cfg.Set("datalake.tiering.binary", laketest.Binary(t)); err != nil {
		t.Fatal(err)
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
	tablet, err := wire.Dial(ctx, n.Addr("tablet-server"), wire.ClientConfig{ExpectServerType: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { coord.Close(); tablet.Close() })

	create := func(name string, lake bool) int64 {
		d := metadata.TableDescriptor{
			Schema:      metadata.Schema{Columns: []metadata.Column{{Name: "id", Type: metadata.DataType{Root: metadata.Int}}}},
			BucketCount: 1,
			// The first round finds nothing; the next is an hour away, so nothing is tiered.
			Properties:       map[string]string{"table.log.ttl": "1ms", "table.datalake.freshness": "1h"},
			CustomProperties: map[string]string{},
		}
		if lake {
			d.Properties["table.datalake.enabled"] = "true"
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
	earliest := func(id int64) int64 {
		var resp flusspb.ListOffsetsResponse
		req := &flusspb.ListOffsetsRequest{FollowerServerId: proto.Int32(-1), OffsetType: proto.Int32(0), TableId: proto.Int64(id), BucketId: []int32{0}}
		if err := tablet.Call(ctx, wire.ListOffsets, req, &resp); err != nil {
			t.Fatal(err)
		}
		return resp.BucketsResp[0].GetOffset()
	}
	plain, lake := create("plain", false), create("tiered", true)
	time.Sleep(600 * time.Millisecond) // past the lake table's first (empty) round
	for i := 0; i < 4; i++ {
		for _, id := range []int64{plain, lake} {
			if r := produce(t, tablet, id, arrowBatch(1, 2, arrowRecords(t, 2))); r.GetErrorCode() != 0 {
				t.Fatalf("produce: %d %s", r.GetErrorCode(), r.GetErrorMessage())
			}
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for earliest(plain) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("retention never ran on the table without lake")
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond) // several more retention passes
	if e := earliest(lake); e != 0 {
		t.Fatalf("lake table's log start moved to %d before anything was tiered", e)
	}
}
