package fluss_test

import (
	"context"
	"errors"
	"os"
	"slices"
	"testing"

	"github.com/stromdb/strom/fluss"
	"github.com/stromdb/strom/fluss/internal/testserver"
)

// connect starts a server and connects to it.
// externalCluster, from FLUSS_BOOTSTRAP, runs the tests that need no server-side
// configuration against a running cluster (e.g. Apache Fluss) instead of in-process Strom:
//
//	FLUSS_BOOTSTRAP=127.0.0.1:9123 go test ./fluss
var externalCluster = os.Getenv("FLUSS_BOOTSTRAP")

// cluster returns the bootstrap address of the cluster a test runs against: the external
// one, or a fresh in-process server.
func cluster(t *testing.T) string {
	t.Helper()
	if externalCluster != "" {
		return externalCluster
	}
	return testserver.Start(t, nil).Bootstrap
}

// needsStrom skips a test that configures the server when running against an external
// cluster.
func needsStrom(t *testing.T) {
	if externalCluster != "" {
		t.Skip("configures an in-process server")
	}
}

func connect(t *testing.T) (*fluss.Connection, context.Context) {
	t.Helper()
	ctx := t.Context()
	conn, err := fluss.Connect(ctx, fluss.Config{BootstrapServers: cluster(t), WriterBatchTimeout: 5e6})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn, ctx
}

func mustCode(t *testing.T, err error, want fluss.ErrorCode) {
	t.Helper()
	var fe *fluss.Error
	if !errors.As(err, &fe) || fe.Code != want {
		t.Fatalf("error = %v, want code %v", err, want)
	}
}

func TestAdminDatabasesAndTables(t *testing.T) {
	conn, ctx := connect(t)
	admin := conn.Admin()
	desc := &fluss.DatabaseDescriptor{Comment: "test db", CustomProperties: map[string]string{"owner": "go"}}
	if externalCluster != "" {
		if err := admin.DropDatabase(ctx, "db1", true, true); err != nil {
			t.Fatal(err)
		}
	}
	if err := admin.CreateDatabase(ctx, "db1", desc, false); err != nil {
		t.Fatal(err)
	}
	mustCode(t, admin.CreateDatabase(ctx, "db1", nil, false), fluss.ErrDatabaseAlreadyExist)
	if err := admin.CreateDatabase(ctx, "db1", nil, true); err != nil {
		t.Fatal(err)
	}
	dbs, err := admin.ListDatabases(ctx)
	if err != nil || !slices.Contains(dbs, "db1") {
		t.Fatalf("ListDatabases = %v, %v", dbs, err)
	}
	ok, err := admin.DatabaseExists(ctx, "db1")
	if err != nil || !ok {
		t.Fatalf("DatabaseExists = %v, %v", ok, err)
	}
	ok, err = admin.DatabaseExists(ctx, "nope")
	if err != nil || ok {
		t.Fatalf("DatabaseExists(nope) = %v, %v", ok, err)
	}
	info, err := admin.GetDatabaseInfo(ctx, "db1")
	if err != nil || info.Descriptor.Comment != "test db" || info.Descriptor.CustomProperties["owner"] != "go" || info.CreatedTime == 0 {
		t.Fatalf("GetDatabaseInfo = %+v, %v", info, err)
	}
	_, err = admin.GetDatabaseInfo(ctx, "nope")
	mustCode(t, err, fluss.ErrDatabaseNotExist)

	path := fluss.NewTablePath("db1", "t1")
	td := fluss.TableDescriptor{
		Schema: fluss.NewSchema([]fluss.Column{
			fluss.NewColumn("id", fluss.Int()), fluss.NewColumn("name", fluss.String()),
		}, "id"),
		BucketCount: 3,
		Comment:     "a table",
	}
	if err := admin.CreateTable(ctx, path, td, false); err != nil {
		t.Fatal(err)
	}
	mustCode(t, admin.CreateTable(ctx, path, td, false), fluss.ErrTableAlreadyExist)
	tables, err := admin.ListTables(ctx, "db1")
	if err != nil || !slices.Equal(tables, []string{"t1"}) {
		t.Fatalf("ListTables = %v, %v", tables, err)
	}
	ok, err = admin.TableExists(ctx, path)
	if err != nil || !ok {
		t.Fatalf("TableExists = %v, %v", ok, err)
	}
	ti, err := admin.GetTableInfo(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if ti.NumBuckets() != 3 || !ti.HasPrimaryKey() || !slices.Equal(ti.PrimaryKeys(), []string{"id"}) ||
		!slices.Equal(ti.ColumnNames(), []string{"id", "name"}) || ti.IsPartitioned() {
		t.Fatalf("table info = %+v", ti)
	}
	if c, ok := ti.Comment(); !ok || c != "a table" {
		t.Fatalf("comment = %q %v", c, ok)
	}
	schema, id, err := admin.GetTableSchema(ctx, path, -1)
	if err != nil || id != ti.SchemaID || len(schema.Columns) != 2 {
		t.Fatalf("GetTableSchema = %+v %d %v", schema, id, err)
	}
	tbl, err := conn.Table(ctx, path)
	if err != nil || tbl.Info().TableID != ti.TableID {
		t.Fatalf("Table = %v, %v", tbl, err)
	}
	_, err = conn.Table(ctx, fluss.NewTablePath("db1", "missing"))
	mustCode(t, err, fluss.ErrTableNotExist)

	offs, err := admin.ListOffsets(ctx, path, []int32{0, 1, 2}, fluss.OffsetLatest())
	if err != nil || len(offs) != 3 || offs[0] != 0 {
		t.Fatalf("ListOffsets = %v, %v", offs, err)
	}
	nodes, err := admin.GetServerNodes(ctx)
	if err != nil || len(nodes) != 2 || nodes[0].Type != "coordinator" || nodes[1].Type != "tablet" {
		t.Fatalf("GetServerNodes = %+v, %v", nodes, err)
	}
	_, err = admin.GetLatestLakeSnapshot(ctx, path)
	mustCode(t, err, fluss.ErrLakeSnapshotNotExist)

	mustCode(t, admin.DropDatabase(ctx, "db1", false, false), fluss.ErrDatabaseNotEmpty)
	if err := admin.DropTable(ctx, path, false); err != nil {
		t.Fatal(err)
	}
	mustCode(t, admin.DropTable(ctx, path, false), fluss.ErrTableNotExist)
	if err := admin.DropTable(ctx, path, true); err != nil {
		t.Fatal(err)
	}
	if err := admin.DropDatabase(ctx, "db1", false, true); err != nil {
		t.Fatal(err)
	}
	mustCode(t, admin.DropDatabase(ctx, "db1", false, true), fluss.ErrDatabaseNotExist)
}
