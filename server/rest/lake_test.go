package rest_test

import (
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/arrowlog"
	"github.com/stromdb/strom/internal/record"
	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
	"github.com/stromdb/strom/server/config"
	"github.com/stromdb/strom/server/laketest"
)

// produceLog appends ids to bucket of an INT-column log table with PRODUCE_LOG: the Go
// client (and so the REST API) does not write tables of the iceberg lake format.
func produceLog(t *testing.T, addr string, tableID int64, bucket int32, ids ...int32) {
	t.Helper()
	cc, err := wire.Dial(t.Context(), addr, wire.ClientConfig{ExpectServerType: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	sc := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int32, Nullable: true}}, nil)
	rb := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer rb.Release()
	for _, id := range ids {
		rb.Field(0).(*array.Int32Builder).Append(id)
	}
	rec := rb.NewRecordBatch()
	defer rec.Release()
	batch, err := arrowlog.AppendBatch(nil, record.V0Header{SchemaID: 1, WriterID: -1, BatchSequence: -1}, rec, nil, arrowlog.CompressionNone, 0)
	if err != nil {
		t.Fatal(err)
	}
	var resp flusspb.ProduceLogResponse
	req := &flusspb.ProduceLogRequest{Acks: proto.Int32(-1), TableId: proto.Int64(tableID), TimeoutMs: proto.Int32(30000),
		BucketsReq: []*flusspb.PbProduceLogReqForBucket{{BucketId: proto.Int32(bucket), Records: batch}}}
	if err := cc.Call(t.Context(), wire.ProduceLog, req, &resp); err != nil {
		t.Fatal(err)
	}
	if resp.BucketsResp[0].ErrorCode != nil {
		t.Fatalf("produce: %s", resp.BucketsResp[0].GetErrorMessage())
	}
}

// With lake tiering on, .../lake shows the table's latest lake snapshot and, per bucket, the
// tiered offset next to the latest one; the tiering catches up with what REST appended.
func TestLakeState(t *testing.T) {
	n := startNode(t, func(c *config.Config) {
		for k, v := range laketest.Options(t) {
			if err := c.Set(k, v); err != nil {
				t.Fatal(err)
			}
		}
	})
	n.createDB(t, "lk")
	n.createTable(t, "lk", map[string]any{"name": "t", "columns": []any{col("id", "INT")}, "bucket_count": 2,
		"properties": map[string]string{"table.datalake.enabled": "true", "table.datalake.freshness": "100ms"}})
	p := api + "/databases/lk/tables/t"
	r := n.must(t, 200, call{method: "GET", path: p + "/lake"})
	if r.body["datalake_enabled"] != true || r.body["snapshot_id"] != nil {
		t.Fatalf("lake state before anything was tiered: %s", r.raw)
	}
	id := int64(n.must(t, 200, call{method: "GET", path: p}).body["table_id"].(float64))
	produceLog(t, n.tablet, id, 0, 1, 2, 3, 4)
	produceLog(t, n.tablet, id, 1, 5, 6, 7, 8, 9, 10)
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		r = n.must(t, 200, call{method: "GET", path: p + "/lake"})
		var tiered float64
		for _, b := range r.body["buckets"].([]any) {
			tiered += b.(map[string]any)["tiered_offset"].(float64)
		}
		if tiered == 10 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the lake never caught up: %s", r.raw)
		}
	}
	if r.body["datalake_enabled"] != true || r.body["snapshot_id"] == nil || r.body["format"] != "iceberg" {
		t.Fatalf("lake state: %s", r.raw)
	}
	for _, b := range r.body["buckets"].([]any) {
		m := b.(map[string]any)
		if m["behind"].(float64) != 0 || m["latest_offset"] != m["tiered_offset"] {
			t.Fatalf("a caught-up bucket: %s", r.raw)
		}
	}
}
