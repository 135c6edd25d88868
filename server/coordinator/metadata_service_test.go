package coordinator

import (
	"context"
	"slices"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/proto/flusspb"
	"github.com/stromdb/strom/server/cluster"
)

func TestMetadataServiceAnswersTheCatalog(t *testing.T) {
	ctx := context.Background()
	c := newTestCatalog(t, newMemStore())
	for _, db := range []string{"zeta", "alpha"} {
		if err := c.CreateDatabase(ctx, db, nil, false); err != nil {
			t.Fatal(err)
		}
	}
	path := cluster.TablePath{Database: DefaultDatabase, Table: "t"}
	if err := c.CreateTable(ctx, path, tableJSON(2, nil), false); err != nil {
		t.Fatal(err)
	}
	s := &metadataService{catalog: c, topo: cluster.NewTopology()}

	resp, err := s.handleListDatabases(ctx, request(t, &flusspb.ListDatabasesRequest{}))
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.(*flusspb.ListDatabasesResponse).GetDatabaseName(); !slices.Equal(got, []string{"alpha", DefaultDatabase, "zeta"}) {
		t.Fatalf("LIST_DATABASES %v, want sorted", got)
	}
	for db, want := range map[string]bool{"alpha": true, "nope": false} {
		resp, err := s.handleDatabaseExists(ctx, request(t, &flusspb.DatabaseExistsRequest{DatabaseName: proto.String(db)}))
		if err != nil || resp.(*flusspb.DatabaseExistsResponse).GetExists() != want {
			t.Fatalf("DATABASE_EXISTS %s: %v, %v; want %v", db, resp, err, want)
		}
	}
	_, err = s.handleGetDatabaseInfo(ctx, request(t, &flusspb.GetDatabaseInfoRequest{DatabaseName: proto.String("nope")}))
	wantCode(t, err, ferr.DatabaseNotExist, "GET_DATABASE_INFO of a missing database")
	_, err = s.handleListTables(ctx, request(t, &flusspb.ListTablesRequest{DatabaseName: proto.String("nope")}))
	wantCode(t, err, ferr.DatabaseNotExist, "LIST_TABLES of a missing database")

	schema, err := s.handleGetTableSchema(ctx, request(t, &flusspb.GetTableSchemaRequest{TablePath: pbTablePath(path)}))
	if err != nil || schema.(*flusspb.GetTableSchemaResponse).GetSchemaId() != 1 {
		t.Fatalf("GET_TABLE_SCHEMA: %v, %v; want schema 1", schema, err)
	}
	_, err = s.handleGetTableSchema(ctx, request(t, &flusspb.GetTableSchemaRequest{TablePath: pbTablePath(path), SchemaId: proto.Int32(5)}))
	wantCode(t, err, ferr.SchemaNotExist, "GET_TABLE_SCHEMA of a missing version")
	_, err = s.handleGetTableInfo(ctx, request(t, &flusspb.GetTableInfoRequest{TablePath: pbTablePath(cluster.TablePath{Database: DefaultDatabase, Table: "x"})}))
	wantCode(t, err, ferr.TableNotExist, "GET_TABLE_INFO of a missing table")

	// The single node leads every bucket with its one server.
	md := &flusspb.MetadataResponse{}
	if err := s.fillTableMetadata(request(t, &flusspb.MetadataRequest{}), &flusspb.MetadataRequest{TablePath: []*flusspb.PbTablePath{pbTablePath(path)}}, md, 4); err != nil {
		t.Fatal(err)
	}
	bms := md.GetTableMetadata()[0].GetBucketMetadata()
	if len(bms) != 2 || bms[1].GetLeaderId() != 4 || !slices.Equal(bms[1].GetReplicaId(), []int32{4}) {
		t.Fatalf("bucket metadata %v, want 2 buckets led by server 4", bms)
	}
	err = s.fillTableMetadata(request(t, &flusspb.MetadataRequest{}), &flusspb.MetadataRequest{PartitionsId: []int64{77}}, md, 4)
	wantCode(t, err, ferr.PartitionNotExists, "metadata of a missing partition")

	// In a cluster the bucket states say who leads.
	s.states = &statesCluster{st: cluster.BucketState{Replicas: []int32{1, 2}, Leader: cluster.NoLeader, LeaderEpoch: 3}}
	if bm := s.bucketMetadataOf(mustTable(t, c, "t"), cluster.NoPartition, 4)[0]; bm.LeaderId != nil || bm.GetLeaderEpoch() != 3 || len(bm.GetReplicaId()) != 2 {
		t.Fatalf("leaderless bucket in a cluster: %v", bm)
	}
}

// The lake catalog options are served with lake-enabled tables only, and never stored.
func TestServedTableJSONAddsLakeOptions(t *testing.T) {
	s := &metadataService{lakeTableOptions: map[string]string{"table.datalake.iceberg.type": "hadoop"}}
	plain, err := metadata.ParseTableDescriptor(tableJSON(1, nil))
	if err != nil {
		t.Fatal(err)
	}
	lake := plain
	lake.Properties = map[string]string{metadata.PropDatalakeEnabled: "true"}
	for what, tc := range map[string]struct {
		d    metadata.TableDescriptor
		want bool
	}{"plain": {plain, false}, "lake": {lake, true}} {
		tbl := &cluster.TableInfo{Descriptor: tc.d, DescriptorJSON: tc.d.JSON()}
		served, err := metadata.ParseTableDescriptor(s.servedTableJSON(tbl))
		if err != nil {
			t.Fatal(err)
		}
		if _, got := served.Properties["table.datalake.iceberg.type"]; got != tc.want {
			t.Errorf("%s table: lake option served %v, want %v", what, got, tc.want)
		}
		if _, stored := tbl.Descriptor.Properties["table.datalake.iceberg.type"]; stored {
			t.Errorf("%s table: the served option was written into the stored descriptor", what)
		}
	}
}
