package coordinator

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/server/cluster"
)

// recordingUpdater records the tables handed to the tablet server as altered.
type recordingUpdater struct {
	mu      sync.Mutex
	updated []*cluster.TableInfo
}

func (r *recordingUpdater) UpdateTable(ctx context.Context, t *cluster.TableInfo) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.updated = append(r.updated, t)
	return nil
}

// A DDL write that the store refuses leaves the in-memory catalog as it was; one it takes is
// published and is what a catalog opened afresh on the store reads.
func TestCatalogPublishesOnlyWhatItStored(t *testing.T) {
	ctx := context.Background()
	store := newMemStore()
	c := newTestCatalog(t, store)

	store.failNext = errFenced
	wantCode(t, c.CreateDatabase(ctx, "db", nil, false), ferr.NotCoordinatorLeaderException, "CREATE_DATABASE on a fenced store")
	if _, ok := c.Database("db"); ok {
		t.Fatal("a database the store refused is published")
	}
	if err := c.CreateDatabase(ctx, "db", nil, false); err != nil {
		t.Fatal(err)
	}
	wantCode(t, c.CreateDatabase(ctx, "db", nil, false), ferr.DatabaseAlreadyExist, "CREATE_DATABASE twice")
	path := cluster.TablePath{Database: "db", Table: "t"}
	store.failNext = errFenced
	wantCode(t, c.CreateTable(ctx, path, tableJSON(2, nil), false), ferr.NotCoordinatorLeaderException, "CREATE_TABLE on a fenced store")
	if _, ok := c.TableByPath(path); ok {
		t.Fatal("a table the store refused is published")
	}
	if err := c.CreateTable(ctx, path, tableJSON(2, nil), false); err != nil {
		t.Fatal(err)
	}
	wantCode(t, c.CreateTable(ctx, cluster.TablePath{Database: "nodb", Table: "t"}, tableJSON(1, nil), false), ferr.DatabaseNotExist, "CREATE_TABLE in a missing database")
	wantCode(t, c.CreateTable(ctx, cluster.TablePath{Database: "db", Table: "bad"}, []byte(`{"schema":`), false), ferr.InvalidTableException, "CREATE_TABLE of a corrupt descriptor")

	again := newTestCatalog(t, store)
	tbl, ok := again.TableByPath(path)
	if !ok || tbl.SchemaID != 1 || tbl.NumBuckets() != 2 {
		t.Fatalf("reopened catalog: table %+v (found %v), want schema 1 with 2 buckets", tbl, ok)
	}
	if s, ok := again.Schema(tbl.ID, 1); !ok || len(s.Columns) != 2 {
		t.Fatalf("reopened catalog lacks schema 1 (found %v)", ok)
	}
	names, err := again.TableNames("db")
	if err != nil || !slices.Equal(names, []string{"t"}) {
		t.Fatalf("TableNames(db) = %v, %v", names, err)
	}
}

func TestCatalogDropDatabaseCascades(t *testing.T) {
	ctx := context.Background()
	store := newMemStore()
	c := newTestCatalog(t, store)
	reps := &fakeReplicas{}
	if err := c.start(ctx, reps); err != nil {
		t.Fatal(err)
	}
	if err := c.CreateDatabase(ctx, "db", nil, false); err != nil {
		t.Fatal(err)
	}
	path := cluster.TablePath{Database: "db", Table: "t"}
	if err := c.CreateTable(ctx, path, tableJSON(1, nil), false); err != nil {
		t.Fatal(err)
	}
	tbl, _ := c.TableByPath(path)
	// The counter of an auto-increment column, as a tablet server leaves it.
	store.kv[sequencesPrefix(tbl.ID)+"3"] = []byte("200000")
	wantCode(t, c.DropDatabase(ctx, "db", false, false), ferr.DatabaseNotEmpty, "DROP_DATABASE of a non-empty database")
	if err := c.DropDatabase(ctx, "db", false, true); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.TableByID(tbl.ID); ok {
		t.Fatal("the dropped database's table is still in the catalog")
	}
	if keys := store.keys("tables/db/"); len(keys) != 0 {
		t.Fatalf("the dropped database's table records remain: %v", keys)
	}
	if keys := store.keys(schemasPrefix(tbl.ID)); len(keys) != 0 {
		t.Fatalf("the dropped table's schemas remain: %v", keys)
	}
	if keys := store.keys(sequencesPrefix(tbl.ID)); len(keys) != 0 {
		t.Fatalf("the dropped table's auto-increment counters remain: %v", keys)
	}
	if !slices.Equal(reps.stopped, []int64{cluster.NoPartition}) {
		t.Fatalf("stopped replicas %v, want the dropped table's", reps.stopped)
	}
	if err := c.DropDatabase(ctx, "db", true, false); err != nil {
		t.Fatalf("DROP_DATABASE IF EXISTS of a missing database: %v", err)
	}
	wantCode(t, c.DropDatabase(ctx, "db", false, false), ferr.DatabaseNotExist, "DROP_DATABASE of a missing database")
}

// ALTER_TABLE adding a column stores schema version 2 beside 1, publishes the table with it
// and hands it to the tablet server; a schema and an option change together are refused.
func TestCatalogAlterTableAddsASchemaVersion(t *testing.T) {
	ctx := context.Background()
	store := newMemStore()
	c := newTestCatalog(t, store)
	upd := &recordingUpdater{}
	c.updater = upd
	path := cluster.TablePath{Database: DefaultDatabase, Table: "t"}
	if err := c.CreateTable(ctx, path, tableJSON(1, nil), false); err != nil {
		t.Fatal(err)
	}
	before := mustTable(t, c, "t")
	add := metadata.AddColumn{Name: "age", Type: metadata.DataType{Root: metadata.Int}}
	wantCode(t, c.AlterTable(ctx, path, TableAlteration{AddColumns: []metadata.AddColumn{add},
		Properties: []metadata.PropertyChange{{Key: "table.log.ttl", Value: "1d"}}}, false), ferr.InvalidAlterTableException, "ALTER of options and schema together")
	if err := c.AlterTable(ctx, path, TableAlteration{AddColumns: []metadata.AddColumn{add}}, false); err != nil {
		t.Fatal(err)
	}
	after := mustTable(t, c, "t")
	if after.SchemaID != before.SchemaID+1 || len(after.Descriptor.Schema.Columns) != 3 {
		t.Fatalf("after ADD COLUMN: schema %d with %d columns, want %d with 3", after.SchemaID, len(after.Descriptor.Schema.Columns), before.SchemaID+1)
	}
	if _, ok := c.Schema(after.ID, before.SchemaID); !ok {
		t.Fatal("the old schema version is gone")
	}
	if len(upd.updated) != 1 || upd.updated[0] != after {
		t.Fatalf("tablet server told of %d altered tables, want the altered one", len(upd.updated))
	}
	if keys := store.keys(schemasPrefix(after.ID)); len(keys) != 2 {
		t.Fatalf("stored schema versions %v, want 2", keys)
	}
	wantCode(t, c.AlterTable(ctx, cluster.TablePath{Database: DefaultDatabase, Table: "missing"}, TableAlteration{}, false), ferr.TableNotExist, "ALTER of a missing table")
	wantCode(t, c.AlterTable(ctx, path, TableAlteration{Unsupported: "drop"}, false), ferr.UnknownServerError, "DROP COLUMN")
}

// A standby's catalog finds, on a lookup miss, what the active coordinator created; a single
// node's never re-reads the store, and neither does a standby once it has become active.
func TestStandbyCatalogReloadsOnAMiss(t *testing.T) {
	ctx := context.Background()
	store := newMemStore()
	active := newTestCatalog(t, store)
	node := &statesCluster{standby: true}
	standby, err := openCatalog(ctx, store, catalogOptions{now: time.Now, cluster: node, bgCtx: ctx}, quietLog())
	if err != nil {
		t.Fatal(err)
	}
	single := newTestCatalog(t, store)

	path := cluster.TablePath{Database: DefaultDatabase, Table: "later"}
	if err := active.CreateTable(ctx, path, tableJSON(1, nil), false); err != nil {
		t.Fatal(err)
	}
	if _, ok := single.TableByPath(path); ok {
		t.Fatal("a single node's catalog re-read the store")
	}
	if _, ok := standby.TableByPath(path); !ok {
		t.Fatal("the standby did not find a table created through the active coordinator")
	}
	node.standby = false // it won the election
	other := cluster.TablePath{Database: DefaultDatabase, Table: "after-takeover"}
	if err := active.CreateTable(ctx, other, tableJSON(1, nil), false); err != nil {
		t.Fatal(err)
	}
	if _, ok := standby.TableByPath(other); ok {
		t.Fatal("an active coordinator re-read the store on a miss")
	}
}

// The single node has one tablet server: a table asking for more replicas is refused as Fluss
// refuses it (TableAssignmentUtils.generateAssignment), partitioned or not, and nothing is
// stored.
func TestSingleNodeRefusesAReplicationFactorAboveOne(t *testing.T) {
	ctx := context.Background()
	store := newMemStore()
	c := newTestCatalog(t, store)
	withFactor := func(rf string, partitionKeys ...string) []byte {
		d, err := metadata.ParseTableDescriptor(tableJSON(1, nil, partitionKeys...))
		if err != nil {
			t.Fatal(err)
		}
		d.Properties[metadata.PropReplicationFactor] = rf
		return d.JSON()
	}
	for what, js := range map[string][]byte{"log table": withFactor("2"), "partitioned table": withFactor("3", "name")} {
		err := c.CreateTable(ctx, cluster.TablePath{Database: DefaultDatabase, Table: "t"}, js, false)
		wantCode(t, err, ferr.InvalidReplicationFactor, what)
	}
	if want := "Replication factor: 2 larger than available tablet servers: 1."; ferr.MessageOf(c.CreateTable(ctx, cluster.TablePath{Database: DefaultDatabase, Table: "t"}, withFactor("2"), false)) != want {
		t.Fatalf("message, want %q", want)
	}
	if keys := store.keys("tables/"); len(keys) != 0 {
		t.Fatalf("refused tables were stored: %v", keys)
	}
	if err := c.CreateTable(ctx, cluster.TablePath{Database: DefaultDatabase, Table: "t"}, withFactor("1"), false); err != nil {
		t.Fatalf("replication factor 1: %v", err)
	}
	// default.replication.factor applies the same way.
	d := newTestCatalogWith(t, newMemStore(), metadata.ClusterDefaults{ReplicationFactor: 3})
	wantCode(t, d.CreateTable(ctx, cluster.TablePath{Database: DefaultDatabase, Table: "t"}, tableJSON(1, nil), false), ferr.InvalidReplicationFactor, "default.replication.factor 3")
}
