package coordinator

import (
	"context"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/proto/flusspb"
	"github.com/stromdb/strom/server/cluster"
)

// newTestPartitions is a single-node partition service over a fresh catalog, whose tablet
// server is reps.
func newTestPartitions(t *testing.T, maxPartitions int32) (*partitionService, *Catalog, *memStore, *fakeReplicas) {
	t.Helper()
	store := newMemStore()
	c := newTestCatalog(t, store)
	reps := &fakeReplicas{}
	if err := c.start(context.Background(), reps); err != nil {
		t.Fatal(err)
	}
	p := &partitionService{catalog: c, cache: c.cache, store: store, access: access{}, now: time.Now, log: quietLog(),
		maxPartitionNum: maxPartitions, replicas: reps}
	c.afterCreate = p.autoPartition
	return p, c, store, reps
}

func TestPartitionServiceCreatesListsAndDrops(t *testing.T) {
	ctx := context.Background()
	p, c, store, reps := newTestPartitions(t, 0)
	path := cluster.TablePath{Database: DefaultDatabase, Table: "events"}
	if err := c.CreateTable(ctx, path, tableJSON(1, nil, "name"), false); err != nil {
		t.Fatal(err)
	}
	spec := map[string]string{"name": "a"}
	if err := p.CreatePartition(ctx, path, spec, false); err != nil {
		t.Fatal(err)
	}
	wantCode(t, p.CreatePartition(ctx, path, spec, false), ferr.PartitionAlreadyExists, "CREATE_PARTITION twice")
	if err := p.CreatePartition(ctx, path, spec, true); err != nil {
		t.Fatalf("CREATE_PARTITION IF NOT EXISTS: %v", err)
	}
	if err := p.CreatePartition(ctx, path, map[string]string{"name": "b"}, false); err != nil {
		t.Fatal(err)
	}
	tbl := mustTable(t, c, "events")
	if keys := store.keys(partitionsPrefix(tbl.ID)); len(keys) != 2 {
		t.Fatalf("stored partitions %v, want 2", keys)
	}
	if len(reps.opened) != 2 {
		t.Fatalf("opened the buckets of %d partitions, want 2", len(reps.opened))
	}

	// LIST_PARTITION_INFOS with a partial spec answers the matching partition only.
	resp, err := p.handleListPartitionInfos(ctx, request(t, &flusspb.ListPartitionInfosRequest{TablePath: pbTablePath(path),
		PartialPartitionSpec: &flusspb.PbPartitionSpec{PartitionKeyValues: []*flusspb.PbKeyValue{{Key: proto.String("name"), Value: proto.String("b")}}}}))
	if err != nil {
		t.Fatal(err)
	}
	infos := resp.(*flusspb.ListPartitionInfosResponse).GetPartitionsInfo()
	if len(infos) != 1 || infos[0].GetPartitionSpec().GetPartitionKeyValues()[0].GetValue() != "b" {
		t.Fatalf("partial spec name=b listed %v", infos)
	}

	if err := p.DropPartition(ctx, path, spec, false); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.PartitionByName(tbl.ID, "a"); ok {
		t.Fatal("the dropped partition is still in the catalog")
	}
	wantCode(t, p.DropPartition(ctx, path, spec, false), ferr.PartitionNotExists, "DROP_PARTITION of a dropped partition")
	if err := p.DropPartition(ctx, path, spec, true); err != nil {
		t.Fatalf("DROP_PARTITION IF EXISTS: %v", err)
	}

	// A table without partition keys has no partitions to create.
	plain := cluster.TablePath{Database: DefaultDatabase, Table: "plain"}
	if err := c.CreateTable(ctx, plain, tableJSON(1, nil), false); err != nil {
		t.Fatal(err)
	}
	wantCode(t, p.CreatePartition(ctx, plain, spec, false), ferr.TableNotPartitionedException, "CREATE_PARTITION of a table without partitions")
	wantCode(t, p.CreatePartition(ctx, cluster.TablePath{Database: DefaultDatabase, Table: "missing"}, spec, false), ferr.TableNotExist, "CREATE_PARTITION of a missing table")
}

// A partition whose store write fails is neither published nor opened.
func TestPartitionServiceRefusedWriteLeavesNoPartition(t *testing.T) {
	ctx := context.Background()
	p, c, store, reps := newTestPartitions(t, 0)
	path := cluster.TablePath{Database: DefaultDatabase, Table: "events"}
	if err := c.CreateTable(ctx, path, tableJSON(1, nil, "name"), false); err != nil {
		t.Fatal(err)
	}
	store.failNext = errFenced
	wantCode(t, p.CreatePartition(ctx, path, map[string]string{"name": "a"}, false), ferr.NotCoordinatorLeaderException, "CREATE_PARTITION on a fenced store")
	if got := c.Partitions(mustTable(t, c, "events").ID); len(got) != 0 || len(reps.opened) != 0 {
		t.Fatalf("after a refused write: %d partitions, %d opened", len(got), len(reps.opened))
	}
}

func TestPartitionServiceMaxPartitionNum(t *testing.T) {
	ctx := context.Background()
	p, c, _, _ := newTestPartitions(t, 2)
	path := cluster.TablePath{Database: DefaultDatabase, Table: "events"}
	if err := c.CreateTable(ctx, path, tableJSON(1, nil, "name"), false); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"a", "b"} {
		if err := p.CreatePartition(ctx, path, map[string]string{"name": v}, false); err != nil {
			t.Fatal(err)
		}
	}
	wantCode(t, p.CreatePartition(ctx, path, map[string]string{"name": "c"}, false), ferr.PartitionMaxNumException, "a third partition with max.partition.num 2")
}

// max.partition.num limits the partitions of each table, as in Fluss (MetadataManager
// createPartition): another table has partitions of its own.
func TestPartitionServiceMaxPartitionNumIsPerTable(t *testing.T) {
	ctx := context.Background()
	p, c, _, _ := newTestPartitions(t, 2)
	for _, table := range []string{"a", "b"} {
		path := cluster.TablePath{Database: DefaultDatabase, Table: table}
		if err := c.CreateTable(ctx, path, tableJSON(1, nil, "name"), false); err != nil {
			t.Fatal(err)
		}
		for _, v := range []string{"x", "y"} {
			if err := p.CreatePartition(ctx, path, map[string]string{"name": v}, false); err != nil {
				t.Fatalf("partition %s of table %s: %v", v, table, err)
			}
		}
	}
	err := p.CreatePartition(ctx, cluster.TablePath{Database: DefaultDatabase, Table: "a"}, map[string]string{"name": "z"}, false)
	wantCode(t, err, ferr.PartitionMaxNumException, "a third partition of one table")
	if want := "Exceed the maximum number of partitions for table fluss.a, only allow 2 partitions."; ferr.MessageOf(err) != want {
		t.Fatalf("message %q, want %q", ferr.MessageOf(err), want)
	}
}

// max.bucket.num bounds the buckets of a partitioned table summed over its partitions, as
// Fluss 0.9.1 counts them.
func TestPartitionServiceMaxBucketNumAcrossPartitions(t *testing.T) {
	ctx := context.Background()
	p, c, _, _ := newTestPartitions(t, 0)
	p.maxBucketNum = 10
	path := cluster.TablePath{Database: DefaultDatabase, Table: "events"}
	if err := c.CreateTable(ctx, path, tableJSON(4, nil, "name"), false); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"a", "b"} {
		if err := p.CreatePartition(ctx, path, map[string]string{"name": v}, false); err != nil {
			t.Fatal(err)
		}
	}
	err := p.CreatePartition(ctx, path, map[string]string{"name": "c"}, false)
	wantCode(t, err, ferr.BucketMaxNumException, "a third partition of 4 buckets with max.bucket.num 10")
	if want := "Adding partition 'c' would result in 12 total buckets for table fluss.events, exceeding the maximum of 10 buckets."; ferr.MessageOf(err) != want {
		t.Fatalf("message %q, want %q", ferr.MessageOf(err), want)
	}
}
