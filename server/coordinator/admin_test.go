package coordinator_test

import (
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/internal/record"
	"github.com/stromdb/strom/internal/row"
	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
)

// createLogTable creates fluss.<name> (id INT) with the given buckets and returns its id. Its
// log format is INDEXED, so that rowBatch writes it (PRODUCE_LOG checks bodies against it).
func createLogTable(t *testing.T, coord *wire.ClientConn, name string, buckets int32) int64 {
	t.Helper()
	return createTable(t, coord, name, metadata.TableDescriptor{
		Schema:      metadata.Schema{Columns: []metadata.Column{{Name: "id", Type: intType}}},
		BucketCount: buckets, Properties: map[string]string{metadata.PropLogFormat: "INDEXED"}, CustomProperties: map[string]string{},
	})
}

// rowBatch is an INDEXED row-format log batch of n records.
func rowBatch(n int32) []byte {
	var recs []byte
	for i := int32(0); i < n; i++ {
		recs = record.AppendRowLogRecord(recs, record.AppendOnly, []byte{0, byte(i)})
	}
	return record.AppendV0Batch(nil, record.V0Header{SchemaID: 1, AppendOnly: true, WriterID: -1, BatchSequence: -1, RecordCount: n}, recs)
}

func produce(t *testing.T, tablet *wire.ClientConn, tableID int64, bucket, n int32) error {
	t.Helper()
	var resp flusspb.ProduceLogResponse
	err := call(t, tablet, wire.ProduceLog, &flusspb.ProduceLogRequest{Acks: proto.Int32(-1), TableId: proto.Int64(tableID), TimeoutMs: proto.Int32(10000),
		BucketsReq: []*flusspb.PbProduceLogReqForBucket{{BucketId: proto.Int32(bucket), Records: rowBatch(n)}}}, &resp)
	if err == nil && resp.BucketsResp[0].GetErrorCode() != 0 {
		t.Fatalf("produce: %d %s", resp.BucketsResp[0].GetErrorCode(), resp.BucketsResp[0].GetErrorMessage())
	}
	return err
}

func tableStats(t *testing.T, tablet *wire.ClientConn, tableID int64, buckets ...int32) []*flusspb.PbTableStatsRespForBucket {
	t.Helper()
	req := &flusspb.GetTableStatsRequest{TableId: proto.Int64(tableID)}
	for _, b := range buckets {
		req.BucketsReq = append(req.BucketsReq, &flusspb.PbTableStatsReqForBucket{BucketId: proto.Int32(b)})
	}
	var resp flusspb.GetTableStatsResponse
	mustCall(t, tablet, wire.GetTableStats, req, &resp)
	return resp.BucketsResp
}

func TestGetTableStats(t *testing.T) {
	tn := startNode(t, t.TempDir(), nil)
	logID := createLogTable(t, tn.coord, "log_stats", 2)
	if err := produce(t, tn.tablet, logID, 0, 3); err != nil {
		t.Fatal(err)
	}
	if err := produce(t, tn.tablet, logID, 0, 2); err != nil {
		t.Fatal(err)
	}
	if err := produce(t, tn.tablet, logID, 1, 4); err != nil {
		t.Fatal(err)
	}
	st := tableStats(t, tn.tablet, logID, 0, 1, 9)
	if st[0].GetRowCount() != 5 || st[1].GetRowCount() != 4 || st[0].GetBucketId() != 0 || st[1].GetBucketId() != 1 {
		t.Fatalf("log table stats: %v", st)
	}
	if ferr.Code(st[2].GetErrorCode()) != ferr.UnknownTableOrBucketException {
		t.Fatalf("unknown bucket: %v", st[2])
	}

	pkID := createPKTable(t, tn.coord, "pk_stats")
	types := []metadata.DataType{intType.Nullable(false), stringType}
	kvPut(t, tn.tablet, pkID, 1, types, []row.Datum{{I: 1}, {B: []byte("a")}}, []row.Datum{{I: 2}, {B: []byte("b")}}, []row.Datum{{I: 3}, {B: []byte("c")}})
	kvPut(t, tn.tablet, pkID, 1, types, []row.Datum{{I: 1}, {B: []byte("a2")}}) // an update, not a new key
	if st := tableStats(t, tn.tablet, pkID, 0); st[0].GetRowCount() != 3 {
		t.Fatalf("pk stats after upserts: %v", st)
	}
	// A delete (record without a row) removes a live key.
	key, _ := row.EncodeKey(nil, types[:1], []row.Datum{{I: 2}})
	batch := record.AppendKvBatch(nil, record.KvHeader{SchemaID: 1, WriterID: -1, BatchSequence: -1}, record.KvRecord{Key: key})
	mustCall(t, tn.tablet, wire.PutKv, &flusspb.PutKvRequest{Acks: proto.Int32(-1), TableId: proto.Int64(pkID), TimeoutMs: proto.Int32(10000),
		BucketsReq: []*flusspb.PbPutKvReqForBucket{{BucketId: proto.Int32(0), Records: batch}}}, &flusspb.PutKvResponse{})
	if st := tableStats(t, tn.tablet, pkID, 0); st[0].GetRowCount() != 2 {
		t.Fatalf("pk stats after delete: %v", st)
	}

	wal := createTable(t, tn.coord, "pk_wal", metadata.TableDescriptor{
		Schema:      metadata.Schema{Columns: []metadata.Column{{Name: "id", Type: intType}, {Name: "v", Type: stringType}}, PrimaryKey: []string{"id"}},
		BucketCount: 1, Properties: map[string]string{"table.changelog.image": "WAL"}, CustomProperties: map[string]string{},
	})
	if st := tableStats(t, tn.tablet, wal, 0); ferr.Code(st[0].GetErrorCode()) != ferr.InvalidTableException {
		t.Fatalf("WAL-image table: %v", st)
	}
}

func describeConfigs(t *testing.T, c *wire.ClientConn) map[string][2]string {
	t.Helper()
	var resp flusspb.DescribeClusterConfigsResponse
	mustCall(t, c, wire.DescribeClusterConfigs, &flusspb.DescribeClusterConfigsRequest{}, &resp)
	out := map[string][2]string{}
	for _, e := range resp.Configs {
		out[e.GetConfigKey()] = [2]string{e.GetConfigValue(), e.GetConfigSource()}
	}
	return out
}

func TestClusterConfigs(t *testing.T) {
	dir := t.TempDir()
	tn := startNode(t, dir, map[string]string{"kv.snapshot.interval": "10min",
		"security.sasl.plain.jaas.config": `org.apache.fluss.security.auth.sasl.plain.PlainLoginModule required user_a="secret";`})
	got := describeConfigs(t, tn.coord)
	if got["kv.snapshot.interval"] != [2]string{"10min", "INITIAL_SERVER_CONFIG"} || got["security.sasl.plain.jaas.config"][0] != "******" {
		t.Fatalf("initial configs: %v", got)
	}
	alter := func(cs ...*flusspb.PbAlterConfig) error {
		return call(t, tn.coord, wire.AlterClusterConfigs, &flusspb.AlterClusterConfigsRequest{AlterConfigs: cs}, &flusspb.AlterClusterConfigsResponse{})
	}
	if err := alter(setOption("kv.snapshot.interval", "5min"), setOption("remote.data.dirs", "/a")); err != nil {
		t.Fatal(err)
	}
	if err := alter(&flusspb.PbAlterConfig{ConfigKey: proto.String("remote.data.dirs"), ConfigValue: proto.String("/b"), OpType: proto.Int32(2)}); err != nil {
		t.Fatal(err)
	}
	got = describeConfigs(t, tn.tablet) // both roles describe
	if got["kv.snapshot.interval"] != [2]string{"5min", "DYNAMIC_SERVER_CONFIG"} || got["remote.data.dirs"][0] != "/a,/b" {
		t.Fatalf("after ALTER: %v", got)
	}
	wantCode(t, alter(setOption("default.bucket.number", "3")), ferr.ConfigException, "static option")
	wantCode(t, alter(setOption("kv.snapshot.interval", "soon")), ferr.ConfigException, "unparseable value")
	wantCode(t, alter(&flusspb.PbAlterConfig{ConfigKey: proto.String("kv.snapshot.interval"), ConfigValue: proto.String("1s"), OpType: proto.Int32(2)}),
		ferr.ConfigException, "APPEND on a scalar")
	wantCode(t, alter(setOption("kv.snapshot.interval", "1min"), setOption("nope", "x")), ferr.ConfigException, "one bad change")
	if got := describeConfigs(t, tn.coord); got["kv.snapshot.interval"][0] != "5min" {
		t.Fatalf("a refused ALTER changed configs: %v", got)
	}

	// Dynamic values are persisted.
	tn.close()
	tn = startNode(t, dir, nil)
	got = describeConfigs(t, tn.coord)
	if got["kv.snapshot.interval"] != [2]string{"5min", "DYNAMIC_SERVER_CONFIG"} {
		t.Fatalf("after restart: %v", got)
	}
	if err := call(t, tn.coord, wire.AlterClusterConfigs, &flusspb.AlterClusterConfigsRequest{AlterConfigs: []*flusspb.PbAlterConfig{resetOption("kv.snapshot.interval")}}, &flusspb.AlterClusterConfigsResponse{}); err != nil {
		t.Fatal(err)
	}
	if _, ok := describeConfigs(t, tn.coord)["kv.snapshot.interval"]; ok {
		t.Fatal("DELETE left the option")
	}
}

func TestProducerOffsets(t *testing.T) {
	tn := startNode(t, t.TempDir(), nil)
	id := createLogTable(t, tn.coord, "po", 2)
	offsets := []*flusspb.PbProducerTableOffsets{{TableId: proto.Int64(id), BucketOffsets: []*flusspb.PbBucketOffset{
		{BucketId: proto.Int32(0), LogEndOffset: proto.Int64(10)}, {BucketId: proto.Int32(1), LogEndOffset: proto.Int64(7)}}}}
	register := func(pid string, ttl *int64, offs []*flusspb.PbProducerTableOffsets) (int32, error) {
		var resp flusspb.RegisterProducerOffsetsResponse
		err := call(t, tn.coord, wire.RegisterProducerOffsets, &flusspb.RegisterProducerOffsetsRequest{ProducerId: proto.String(pid), TableOffsets: offs, TtlMs: ttl}, &resp)
		return resp.GetResult(), err
	}
	get := func(pid string) *flusspb.GetProducerOffsetsResponse {
		var resp flusspb.GetProducerOffsetsResponse
		mustCall(t, tn.coord, wire.GetProducerOffsets, &flusspb.GetProducerOffsetsRequest{ProducerId: proto.String(pid)}, &resp)
		return &resp
	}
	if res, err := register("sink-1", nil, offsets); err != nil || res != 0 {
		t.Fatalf("first register: %d %v", res, err)
	}
	changed := []*flusspb.PbProducerTableOffsets{{TableId: proto.Int64(id), BucketOffsets: []*flusspb.PbBucketOffset{{BucketId: proto.Int32(0), LogEndOffset: proto.Int64(99)}}}}
	if res, err := register("sink-1", nil, changed); err != nil || res != 1 {
		t.Fatalf("second register: %d %v, want ALREADY_EXISTS", res, err)
	}
	g := get("sink-1")
	if g.GetProducerId() != "sink-1" || g.GetExpirationTime() == 0 || len(g.TableOffsets) != 1 || len(g.TableOffsets[0].BucketOffsets) != 2 ||
		g.TableOffsets[0].BucketOffsets[0].GetLogEndOffset() != 10 {
		t.Fatalf("get: %v", g)
	}
	if g := get("unknown"); g.ProducerId != nil || len(g.TableOffsets) != 0 {
		t.Fatalf("unknown producer: %v", g)
	}
	mustCall(t, tn.coord, wire.DeleteProducerOffsets, &flusspb.DeleteProducerOffsetsRequest{ProducerId: proto.String("sink-1")}, &flusspb.DeleteProducerOffsetsResponse{})
	if g := get("sink-1"); g.ProducerId != nil {
		t.Fatalf("after delete: %v", g)
	}
	// An expired snapshot is replaced.
	if res, err := register("sink-2", proto.Int64(-1), offsets); err != nil || res != 0 {
		t.Fatalf("register expired: %d %v", res, err)
	}
	if res, err := register("sink-2", nil, changed); err != nil || res != 0 {
		t.Fatalf("register over an expired snapshot: %d %v", res, err)
	}
	if g := get("sink-2"); g.TableOffsets[0].BucketOffsets[0].GetLogEndOffset() != 99 {
		t.Fatalf("replaced snapshot: %v", g)
	}
	_, err := register("bad/id", nil, offsets)
	wantCode(t, err, ferr.InvalidProducerIdException, "invalid producer id")
}

func TestClusterHealth(t *testing.T) {
	tn := startNode(t, t.TempDir(), nil)
	createLogTable(t, tn.coord, "h1", 3)
	createPKTable(t, tn.coord, "h2")
	for _, c := range []*wire.ClientConn{tn.coord, tn.tablet} {
		var resp flusspb.GetClusterHealthResponse
		mustCall(t, c, wire.GetClusterHealth, &flusspb.GetClusterHealthRequest{}, &resp)
		if resp.GetNumReplicas() != 4 || resp.GetInSyncReplicas() != 4 || resp.GetNumLeaderReplicas() != 4 ||
			resp.GetActiveLeaderReplicas() != 4 || resp.GetStatus() != 0 {
			t.Fatalf("health: %v", &resp)
		}
	}
}
