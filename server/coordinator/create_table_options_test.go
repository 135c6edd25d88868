package coordinator_test

import (
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
)

// allow.create.log.tables and allow.create.kv.tables refuse CREATE_TABLE of their kind with
// Fluss's INVALID_TABLE_EXCEPTION (CoordinatorService.validateTableCreationPermission) and
// leave the other kind alone.
func TestCreateTableHonoursAllowCreateOptions(t *testing.T) {
	logTable := metadata.TableDescriptor{Schema: metadata.Schema{Columns: []metadata.Column{{Name: "id", Type: intType}}},
		BucketCount: 1, Properties: map[string]string{}, CustomProperties: map[string]string{}}
	create := func(tn *testNode, name string, d metadata.TableDescriptor) error {
		d.Schema.AssignFieldIDs()
		return call(t, tn.coord, wire.CreateTable, &flusspb.CreateTableRequest{TablePath: tablePath(name), TableJson: d.JSON(),
			IgnoreIfExists: proto.Bool(false)}, &flusspb.CreateTableResponse{})
	}

	noLogs := startNode(t, t.TempDir(), map[string]string{"allow.create.log.tables": "false"})
	err := create(noLogs, "log", logTable)
	wantCode(t, err, ferr.InvalidTableException, "a log table with allow.create.log.tables false")
	if want := "Creation of Log Tables is disallowed in the cluster."; ferr.MessageOf(err) != want {
		t.Fatalf("message %q, want %q", ferr.MessageOf(err), want)
	}
	createPKTable(t, noLogs.coord, "pk")

	noKV := startNode(t, t.TempDir(), map[string]string{"allow.create.kv.tables": "false"})
	pk := logTable
	pk.Schema = metadata.Schema{Columns: []metadata.Column{{Name: "id", Type: intType}}, PrimaryKey: []string{"id"}}
	err = create(noKV, "pk", pk)
	wantCode(t, err, ferr.InvalidTableException, "a primary-key table with allow.create.kv.tables false")
	if want := "Creation of Primary Key Tables is disallowed in the cluster."; ferr.MessageOf(err) != want {
		t.Fatalf("message %q, want %q", ferr.MessageOf(err), want)
	}
	createTable(t, noKV.coord, "log", logTable)
}
