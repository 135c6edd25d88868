package coordinator

import (
	"context"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/proto/flusspb"
	"github.com/stromdb/strom/server/cluster"
	"github.com/stromdb/strom/server/lakeconf"
)

// oneSnapshotLake holds one tiering snapshot of every table.
type oneSnapshotLake struct{ snap *lakeconf.LakeSnapshot }

func (l oneSnapshotLake) Snapshot(ctx context.Context, t *cluster.TableInfo, id *int64) (*lakeconf.LakeSnapshot, error) {
	if id != nil && *id != l.snap.SnapshotID {
		return nil, lakeconf.ErrNoSnapshot
	}
	return l.snap, nil
}

func lakeTableJSON() []byte {
	d := metadata.TableDescriptor{
		Schema:      metadata.Schema{Columns: []metadata.Column{{Name: "id", Type: metadata.DataType{Root: metadata.Int}}}},
		BucketCount: 1, Properties: map[string]string{metadata.PropDatalakeEnabled: "true"}, CustomProperties: map[string]string{},
	}
	d.Schema.AssignFieldIDs()
	return d.JSON()
}

func TestLakeServiceAnswersFromTheLake(t *testing.T) {
	ctx := context.Background()
	c := newTestCatalogWith(t, newMemStore(), metadata.ClusterDefaults{DataLakeFormat: "iceberg", DataLakeEnabled: true})
	for name, js := range map[string][]byte{"tiered": lakeTableJSON(), "plain": tableJSON(1, nil)} {
		if err := c.CreateTable(ctx, cluster.TablePath{Database: DefaultDatabase, Table: name}, js, false); err != nil {
			t.Fatal(err)
		}
	}
	s := &lakeService{catalog: c}
	get := func(table string, id *int64, readable bool) (*flusspb.GetLakeSnapshotResponse, error) {
		resp, err := s.handleGetLakeSnapshot(ctx, request(t, &flusspb.GetLakeSnapshotRequest{
			TablePath: pbTablePath(cluster.TablePath{Database: DefaultDatabase, Table: table}), SnapshotId: id, Readable: proto.Bool(readable)}))
		if err != nil {
			return nil, err
		}
		return resp.(*flusspb.GetLakeSnapshotResponse), nil
	}
	_, err := get("tiered", nil, false)
	wantCode(t, err, ferr.LakeSnapshotNotExist, "no lake connected")

	s.connect(oneSnapshotLake{snap: &lakeconf.LakeSnapshot{SnapshotID: 11, Offsets: lakeconf.Offsets{{PartitionID: cluster.NoPartition, Bucket: 0}: 100}}})
	resp, err := get("tiered", nil, true)
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetSnapshotId() != 11 || len(resp.GetBucketSnapshots()) != 1 || resp.GetBucketSnapshots()[0].GetLogOffset() != 100 || resp.GetBucketSnapshots()[0].PartitionId != nil {
		t.Fatalf("lake snapshot %v, want 11 with bucket 0 at 100", resp)
	}
	_, err = get("tiered", proto.Int64(12), false)
	wantCode(t, err, ferr.LakeSnapshotNotExist, "a snapshot id the lake does not have")
	_, err = get("tiered", proto.Int64(11), true)
	wantCode(t, err, ferr.UnknownServerError, "snapshot_id with readable")
	_, err = get("plain", nil, false)
	wantCode(t, err, ferr.LakeSnapshotNotExist, "a table that is not lake-enabled")
	_, err = get("missing", nil, false)
	wantCode(t, err, ferr.TableNotExist, "a missing table")
}
