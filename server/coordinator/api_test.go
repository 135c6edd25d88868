package coordinator_test

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/arrowlog"
	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/internal/record"
	"github.com/stromdb/strom/internal/row"
	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
	"github.com/stromdb/strom/server"
	"github.com/stromdb/strom/server/config"
)

// testNode is a running server and raw wire clients of its two roles.
type testNode struct {
	n             *server.Node
	coord, tablet *wire.ClientConn
}

func startNode(t *testing.T, dir string, set map[string]string) *testNode {
	t.Helper()
	cfg := config.Default()
	cfg.DataDir = dir
	cfg.CoordinatorListeners = []config.Listener{{Name: "FLUSS", Host: "127.0.0.1", Port: 0}}
	cfg.TabletListeners = []config.Listener{{Name: "FLUSS", Host: "127.0.0.1", Port: 0}}
	for k, v := range set {
		if err := cfg.Set(k, v); err != nil {
			t.Fatal(err)
		}
	}
	n, err := server.Start(context.Background(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	tn := &testNode{n: n}
	t.Cleanup(func() { tn.close() })
	tn.coord = dial(t, n.Addr("coordinator"), 1, "", "")
	tn.tablet = dial(t, n.Addr("tablet-server"), 2, "", "")
	return tn
}

func (tn *testNode) close() {
	if tn.coord != nil {
		tn.coord.Close()
		tn.tablet.Close()
	}
	tn.n.Close()
}

func dial(t *testing.T, addr string, serverType int32, user, password string) *wire.ClientConn {
	t.Helper()
	cfg := wire.ClientConfig{ExpectServerType: serverType}
	if user != "" {
		cfg.Username, cfg.Password = user, password
	}
	c, err := wire.Dial(context.Background(), addr, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func call(t *testing.T, c *wire.ClientConn, key wire.APIKey, req, resp proto.Message) error {
	t.Helper()
	return c.Call(context.Background(), key, req, resp)
}

func mustCall(t *testing.T, c *wire.ClientConn, key wire.APIKey, req, resp proto.Message) {
	t.Helper()
	if err := call(t, c, key, req, resp); err != nil {
		t.Fatalf("%s: %v", key, err)
	}
}

func wantCode(t *testing.T, err error, code ferr.Code, what string) {
	t.Helper()
	if ferr.CodeOf(err) != code {
		t.Fatalf("%s: got %v, want error code %d", what, err, code)
	}
}

func tablePath(name string) *flusspb.PbTablePath {
	return &flusspb.PbTablePath{DatabaseName: proto.String("fluss"), TableName: proto.String(name)}
}

var (
	intType    = metadata.DataType{Root: metadata.Int}
	stringType = metadata.DataType{Root: metadata.String}
)

// createPKTable creates fluss.<name> (id INT primary key, v STRING) with one bucket and a
// COMPACTED kv format, and returns its id.
func createPKTable(t *testing.T, coord *wire.ClientConn, name string) int64 {
	t.Helper()
	d := metadata.TableDescriptor{
		Schema: metadata.Schema{Columns: []metadata.Column{{Name: "id", Type: intType}, {Name: "v", Type: stringType}},
			PrimaryKey: []string{"id"}},
		BucketCount:      1,
		Properties:       map[string]string{"table.kv.format": "COMPACTED"},
		CustomProperties: map[string]string{},
	}
	return createTable(t, coord, name, d)
}

func createTable(t *testing.T, coord *wire.ClientConn, name string, d metadata.TableDescriptor) int64 {
	t.Helper()
	d.Schema.AssignFieldIDs()
	mustCall(t, coord, wire.CreateTable, &flusspb.CreateTableRequest{TablePath: tablePath(name), TableJson: d.JSON(), IgnoreIfExists: proto.Bool(false)}, &flusspb.CreateTableResponse{})
	return tableInfo(t, coord, name).GetTableId()
}

func tableInfo(t *testing.T, coord *wire.ClientConn, name string) *flusspb.GetTableInfoResponse {
	t.Helper()
	var info flusspb.GetTableInfoResponse
	mustCall(t, coord, wire.GetTableInfo, &flusspb.GetTableInfoRequest{TablePath: tablePath(name)}, &info)
	return &info
}

func descriptorOf(t *testing.T, info *flusspb.GetTableInfoResponse) metadata.TableDescriptor {
	t.Helper()
	d, err := metadata.ParseTableDescriptor(info.GetTableJson())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func setOption(key, value string) *flusspb.PbAlterConfig {
	return &flusspb.PbAlterConfig{ConfigKey: proto.String(key), ConfigValue: proto.String(value), OpType: proto.Int32(0)}
}

func resetOption(key string) *flusspb.PbAlterConfig {
	return &flusspb.PbAlterConfig{ConfigKey: proto.String(key), OpType: proto.Int32(1)}
}

func alterTable(t *testing.T, coord *wire.ClientConn, name string, configs []*flusspb.PbAlterConfig, adds []*flusspb.PbAddColumn) error {
	t.Helper()
	return call(t, coord, wire.AlterTable, &flusspb.AlterTableRequest{TablePath: tablePath(name), IgnoreIfNotExists: proto.Bool(false),
		ConfigChanges: configs, AddColumns: adds}, &flusspb.AlterTableResponse{})
}

func addColumn(name string, typ metadata.DataType) *flusspb.PbAddColumn {
	return &flusspb.PbAddColumn{ColumnName: proto.String(name), DataTypeJson: metadata.DataTypeJSON(typ), ColumnPositionType: proto.Int32(0)}
}

func TestAlterTableOptions(t *testing.T) {
	tn := startNode(t, t.TempDir(), nil)
	createPKTable(t, tn.coord, "opts")
	before := tableInfo(t, tn.coord, "opts")

	if err := alterTable(t, tn.coord, "opts", []*flusspb.PbAlterConfig{setOption("table.log.ttl", "2h"), setOption("owner", "team-a")}, nil); err != nil {
		t.Fatal(err)
	}
	d := descriptorOf(t, tableInfo(t, tn.coord, "opts"))
	if d.Properties["table.log.ttl"] != "2h" || d.CustomProperties["owner"] != "team-a" {
		t.Fatalf("after SET: properties %v custom %v", d.Properties, d.CustomProperties)
	}
	if got := tableInfo(t, tn.coord, "opts"); got.GetSchemaId() != before.GetSchemaId() || got.GetModifiedTime() < before.GetModifiedTime() {
		t.Fatalf("option change moved schema id to %d", got.GetSchemaId())
	}

	if err := alterTable(t, tn.coord, "opts", []*flusspb.PbAlterConfig{resetOption("table.log.ttl"), resetOption("owner")}, nil); err != nil {
		t.Fatal(err)
	}
	d = descriptorOf(t, tableInfo(t, tn.coord, "opts"))
	if _, ok := d.Properties["table.log.ttl"]; ok || len(d.CustomProperties) != 0 {
		t.Fatalf("after RESET: properties %v custom %v", d.Properties, d.CustomProperties)
	}

	err := alterTable(t, tn.coord, "opts", []*flusspb.PbAlterConfig{setOption("table.log.format", "INDEXED")}, nil)
	wantCode(t, err, ferr.InvalidAlterTableException, "non-alterable option")
	if msg := ferr.MessageOf(err); msg != "The following options are not supported to alter yet: 'table.log.format'." {
		t.Fatalf("message %q", msg)
	}
	err = alterTable(t, tn.coord, "opts", []*flusspb.PbAlterConfig{setOption("owner", "x")}, []*flusspb.PbAddColumn{addColumn("c", stringType)})
	wantCode(t, err, ferr.InvalidAlterTableException, "options and columns together")
	err = alterTable(t, tn.coord, "opts", []*flusspb.PbAlterConfig{{ConfigKey: proto.String("owner"), OpType: proto.Int32(2)}}, nil)
	wantCode(t, err, ferr.UnknownServerError, "APPEND op type")
	err = alterTable(t, tn.coord, "nope", []*flusspb.PbAlterConfig{setOption("owner", "x")}, nil)
	wantCode(t, err, ferr.TableNotExist, "missing table")
	if err := call(t, tn.coord, wire.AlterTable, &flusspb.AlterTableRequest{TablePath: tablePath("nope"), IgnoreIfNotExists: proto.Bool(true),
		ConfigChanges: []*flusspb.PbAlterConfig{setOption("owner", "x")}}, &flusspb.AlterTableResponse{}); err != nil {
		t.Fatalf("ignore_if_not_exists: %v", err)
	}
	if d := descriptorOf(t, tableInfo(t, tn.coord, "opts")); len(d.CustomProperties) != 0 {
		t.Fatalf("a refused ALTER changed the table: %v", d.CustomProperties)
	}
}

// kvPut writes rows (each encoded under the given schema's types) to bucket 0.
func kvPut(t *testing.T, tablet *wire.ClientConn, tableID int64, schemaID int16, types []metadata.DataType, rows ...[]row.Datum) {
	t.Helper()
	var recs []record.KvRecord
	for _, r := range rows {
		key, err := row.EncodeKey(nil, types[:1], r[:1])
		if err != nil {
			t.Fatal(err)
		}
		val, err := row.AppendCompactedRow(nil, types, r)
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, record.KvRecord{Key: key, Row: val})
	}
	batch := record.AppendKvBatch(nil, record.KvHeader{SchemaID: schemaID, WriterID: -1, BatchSequence: -1}, recs...)
	var resp flusspb.PutKvResponse
	mustCall(t, tablet, wire.PutKv, &flusspb.PutKvRequest{Acks: proto.Int32(-1), TableId: proto.Int64(tableID), TimeoutMs: proto.Int32(10000),
		BucketsReq: []*flusspb.PbPutKvReqForBucket{{BucketId: proto.Int32(0), Records: batch}}}, &resp)
	if b := resp.BucketsResp[0]; b.GetErrorCode() != 0 {
		t.Fatalf("put under schema %d: %d %s", schemaID, b.GetErrorCode(), b.GetErrorMessage())
	}
}

// kvGet looks up id and returns the stored value's schema id and its fields decoded under
// the matching types.
func kvGet(t *testing.T, tablet *wire.ClientConn, tableID int64, id int32, typesOf func(int16) []metadata.DataType) (int16, []row.Datum) {
	t.Helper()
	key, err := row.EncodeKey(nil, []metadata.DataType{intType}, []row.Datum{{I: int64(id)}})
	if err != nil {
		t.Fatal(err)
	}
	var resp flusspb.LookupResponse
	mustCall(t, tablet, wire.Lookup, &flusspb.LookupRequest{TableId: proto.Int64(tableID),
		BucketsReq: []*flusspb.PbLookupReqForBucket{{BucketId: proto.Int32(0), Keys: [][]byte{key}}}}, &resp)
	b := resp.BucketsResp[0]
	if b.GetErrorCode() != 0 || len(b.Values) != 1 || len(b.Values[0].Values) == 0 {
		t.Fatalf("lookup %d: code %d values %v", id, b.GetErrorCode(), b.Values)
	}
	sid, data, err := row.SplitValue(b.Values[0].Values)
	if err != nil {
		t.Fatal(err)
	}
	r, err := row.DecodeCompactedRow(typesOf(sid), data, nil)
	if err != nil {
		t.Fatalf("decode value of %d under schema %d: %v", id, sid, err)
	}
	return sid, r
}

func TestAlterTableAddColumn(t *testing.T) {
	dir := t.TempDir()
	tn := startNode(t, dir, nil)
	id := createPKTable(t, tn.coord, "evolve")
	v1 := []metadata.DataType{intType.Nullable(false), stringType}
	v2 := append(v1[:2:2], stringType)
	typesOf := func(sid int16) []metadata.DataType {
		if sid == 1 {
			return v1
		}
		return v2
	}
	kvPut(t, tn.tablet, id, 1, v1, []row.Datum{{I: 1}, {B: []byte("one")}})

	wantCode(t, alterTable(t, tn.coord, "evolve", nil, []*flusspb.PbAddColumn{addColumn("v", stringType)}), ferr.InvalidAlterTableException, "existing column")
	wantCode(t, alterTable(t, tn.coord, "evolve", nil, []*flusspb.PbAddColumn{addColumn("n", stringType.Nullable(false))}), ferr.UnknownServerError, "NOT NULL column")
	first := addColumn("f", stringType)
	first.ColumnPositionType = proto.Int32(1)
	wantCode(t, alterTable(t, tn.coord, "evolve", nil, []*flusspb.PbAddColumn{first}), ferr.UnknownServerError, "column FIRST")
	drop := &flusspb.AlterTableRequest{TablePath: tablePath("evolve"), IgnoreIfNotExists: proto.Bool(false),
		DropColumns: []*flusspb.PbDropColumn{{ColumnName: proto.String("v")}}}
	wantCode(t, call(t, tn.coord, wire.AlterTable, drop, &flusspb.AlterTableResponse{}), ferr.UnknownServerError, "drop column")
	if got := tableInfo(t, tn.coord, "evolve").GetSchemaId(); got != 1 {
		t.Fatalf("refused changes moved the schema id to %d", got)
	}

	if err := alterTable(t, tn.coord, "evolve", nil, []*flusspb.PbAddColumn{addColumn("extra", stringType)}); err != nil {
		t.Fatal(err)
	}
	info := tableInfo(t, tn.coord, "evolve")
	if info.GetSchemaId() != 2 {
		t.Fatalf("schema id after ADD: %d, want 2", info.GetSchemaId())
	}
	cols := descriptorOf(t, info).Schema.Columns
	if len(cols) != 3 || cols[2].Name != "extra" || cols[2].ID != 2 || cols[2].Type.NotNull {
		t.Fatalf("columns after ADD: %+v", cols)
	}
	for sid, want := range map[int32]int{1: 2, 2: 3} {
		var s flusspb.GetTableSchemaResponse
		mustCall(t, tn.coord, wire.GetTableSchema, &flusspb.GetTableSchemaRequest{TablePath: tablePath("evolve"), SchemaId: proto.Int32(sid)}, &s)
		parsed, err := metadata.ParseSchema(s.GetSchemaJson())
		if err != nil || s.GetSchemaId() != sid || len(parsed.Columns) != want {
			t.Fatalf("schema %d: id %d, %d columns, %v", sid, s.GetSchemaId(), len(parsed.Columns), err)
		}
	}

	// Old rows keep their schema id; new writers use schema 2; a writer still on schema 1 is
	// accepted (its row is stored with the schema id it was written under).
	if sid, r := kvGet(t, tn.tablet, id, 1, typesOf); sid != 1 || string(r[1].B) != "one" {
		t.Fatalf("old row: schema %d %v", sid, r)
	}
	kvPut(t, tn.tablet, id, 2, v2, []row.Datum{{I: 2}, {B: []byte("two")}, {B: []byte("x")}})
	kvPut(t, tn.tablet, id, 1, v1, []row.Datum{{I: 3}, {B: []byte("three")}})
	if sid, r := kvGet(t, tn.tablet, id, 2, typesOf); sid != 2 || string(r[2].B) != "x" {
		t.Fatalf("new row: schema %d %v", sid, r)
	}
	if sid, r := kvGet(t, tn.tablet, id, 3, typesOf); string(r[1].B) != "three" || (sid == 2 && !r[2].Null) {
		t.Fatalf("row written under schema 1 after ADD: schema %d %v", sid, r)
	}

	// The new schema survives a restart.
	tn.close()
	tn = startNode(t, dir, nil)
	if got := tableInfo(t, tn.coord, "evolve").GetSchemaId(); got != 2 {
		t.Fatalf("schema id after restart: %d", got)
	}
	kvPut(t, tn.tablet, id, 2, v2, []row.Datum{{I: 4}, {B: []byte("four")}, {B: []byte("y")}})
	if sid, r := kvGet(t, tn.tablet, id, 4, typesOf); sid != 2 || string(r[2].B) != "y" {
		t.Fatalf("after restart: schema %d %v", sid, r)
	}
}

func TestAlterDatabase(t *testing.T) {
	tn := startNode(t, t.TempDir(), nil)
	mustCall(t, tn.coord, wire.CreateDatabase, &flusspb.CreateDatabaseRequest{DatabaseName: proto.String("db1"), IgnoreIfExists: proto.Bool(false)}, &flusspb.CreateDatabaseResponse{})
	info := func() metadata.DatabaseDescriptor {
		var r flusspb.GetDatabaseInfoResponse
		mustCall(t, tn.coord, wire.GetDatabaseInfo, &flusspb.GetDatabaseInfoRequest{DatabaseName: proto.String("db1")}, &r)
		d, err := metadata.ParseDatabaseDescriptor(r.GetDatabaseJson())
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	alter := func(name string, comment *string, changes ...*flusspb.PbAlterConfig) error {
		return call(t, tn.coord, wire.AlterDatabase, &flusspb.AlterDatabaseRequest{DatabaseName: proto.String(name),
			IgnoreIfNotExists: proto.Bool(false), ConfigChanges: changes, Comment: comment}, &flusspb.AlterDatabaseResponse{})
	}
	if err := alter("db1", proto.String("hello"), setOption("k", "v"), setOption("k2", "v2")); err != nil {
		t.Fatal(err)
	}
	if d := info(); d.Comment != "hello" || d.CustomProperties["k"] != "v" || d.CustomProperties["k2"] != "v2" {
		t.Fatalf("after SET: %+v", d)
	}
	if err := alter("db1", proto.String(""), resetOption("k")); err != nil {
		t.Fatal(err)
	}
	if d := info(); d.HasComment || len(d.CustomProperties) != 1 {
		t.Fatalf("after RESET: %+v", d)
	}
	wantCode(t, alter("nope", nil, setOption("k", "v")), ferr.DatabaseNotExist, "missing database")
}

// Fetching with a projection that includes an added column reads batches written before the
// column existed in the new shape: the column is all NULL and the batch carries the new
// schema id.
func TestFetchProjectionAcrossAddColumn(t *testing.T) {
	tn := startNode(t, t.TempDir(), nil)
	cols := []metadata.Column{{Name: "id", Type: intType}, {Name: "name", Type: stringType}}
	id := createTable(t, tn.coord, "evolve_log", metadata.TableDescriptor{
		Schema: metadata.Schema{Columns: cols}, BucketCount: 1, Properties: map[string]string{}, CustomProperties: map[string]string{},
	})
	as, _ := arrowlog.ArrowSchema(cols)
	rec, err := arrowlog.RowsToRecord(as, cols, [][]row.Datum{{{I: 1}, {B: []byte("a")}}, {{I: 2}, {B: []byte("b")}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	batch, err := arrowlog.AppendBatch(nil, record.V0Header{SchemaID: 1, WriterID: -1, BatchSequence: -1}, rec, nil, arrowlog.CompressionZstd, 0)
	if err != nil {
		t.Fatal(err)
	}
	var pr flusspb.ProduceLogResponse
	mustCall(t, tn.tablet, wire.ProduceLog, &flusspb.ProduceLogRequest{Acks: proto.Int32(-1), TableId: proto.Int64(id), TimeoutMs: proto.Int32(10000),
		BucketsReq: []*flusspb.PbProduceLogReqForBucket{{BucketId: proto.Int32(0), Records: batch}}}, &pr)
	if err := alterTable(t, tn.coord, "evolve_log", nil, []*flusspb.PbAddColumn{addColumn("age", intType)}); err != nil {
		t.Fatal(err)
	}
	all := append(cols, metadata.Column{Name: "age", Type: intType})
	fetch := func(fields ...int32) (int16, [][]row.Datum) {
		var resp flusspb.FetchLogResponse
		mustCall(t, tn.tablet, wire.FetchLog, &flusspb.FetchLogRequest{FollowerServerId: proto.Int32(-1), MaxBytes: proto.Int32(1 << 20),
			TablesReq: []*flusspb.PbFetchLogReqForTable{{TableId: proto.Int64(id), ProjectionPushdownEnabled: proto.Bool(true), ProjectedFields: fields,
				BucketsReq: []*flusspb.PbFetchLogReqForBucket{{BucketId: proto.Int32(0), FetchOffset: proto.Int64(0), MaxFetchBytes: proto.Int32(1 << 20)}}}}}, &resp)
		b := resp.TablesResp[0].BucketsResp[0]
		if b.GetErrorCode() != 0 {
			t.Fatalf("fetch %v: %d %s", fields, b.GetErrorCode(), b.GetErrorMessage())
		}
		pb := record.Batch(b.Records)
		var pcols []metadata.Column
		for _, f := range fields {
			pcols = append(pcols, all[f])
		}
		ps, _ := arrowlog.ArrowSchema(pcols)
		_, got, err := arrowlog.Decode(ps, true, int(pb.RecordCount()), pb.Records(), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer got.Release()
		rows, err := arrowlog.RecordToRows(got, pcols)
		if err != nil {
			t.Fatal(err)
		}
		return pb.SchemaID(), rows
	}
	if sid, rows := fetch(0, 2); sid != 2 || rows[1][0].I != 2 || !rows[0][1].Null || !rows[1][1].Null {
		t.Fatalf("projection [id, age]: schema %d rows %v", sid, rows)
	}
	if sid, rows := fetch(1); sid != 1 || string(rows[0][0].B) != "a" {
		t.Fatalf("projection [name]: schema %d rows %v", sid, rows)
	}
}
