package strays

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"testing"

	"go.etcd.io/etcd/api/v3/mvccpb"

	"github.com/stromdb/strom/server/cluster"
	"github.com/stromdb/strom/server/meta"
)

func kv(key, value string) *mvccpb.KeyValue {
	return &mvccpb.KeyValue{Key: []byte(meta.KeyPrefix + key), Value: []byte(value)}
}

func TestIDsOf(t *testing.T) {
	ids := IDsOf([]*mvccpb.KeyValue{
		kv("tables/db/t", `{"id":7,"name":"t"}`),
		kv("partitions/7/p1", `{"id":70}`),
		kv("databases/db", `{"x":1}`),
		kv("buckets/7/-/0", `{}`),
	})
	if ids.Unreadable || !ids.Tables[7] || !ids.Partitions[70] || len(ids.Tables) != 1 || len(ids.Partitions) != 1 {
		t.Fatalf("ids %+v", ids)
	}
	for _, bad := range []*mvccpb.KeyValue{kv("tables/db/u", `{`), kv("partitions/7/p2", `{"name":"p2"}`)} {
		if ids := IDsOf([]*mvccpb.KeyValue{bad}); !ids.Unreadable {
			t.Errorf("%s: a record without a readable id was not flagged", bad.Key)
		}
	}
}

func TestStray(t *testing.T) {
	const self = 2
	b := func(table, partition int64) cluster.Bucket {
		return cluster.Bucket{TableID: table, PartitionID: partition, Bucket: 0}
	}
	states := map[cluster.Bucket]cluster.BucketState{
		b(1, cluster.NoPartition): {Replicas: []int32{1, 2}},
		b(2, cluster.NoPartition): {Replicas: []int32{1, 3}},
	}
	ids := CatalogIDs{Tables: map[int64]bool{1: true, 2: true, 5: true}, Partitions: map[int64]bool{50: true}}
	for _, tc := range []struct {
		name   string
		bucket cluster.Bucket
		ids    CatalogIDs
		want   bool
	}{
		{"listed by its state: kept", b(1, cluster.NoPartition), ids, false},
		{"its state moved it away: stray", b(2, cluster.NoPartition), ids, true},
		{"no state, table dropped: stray", b(9, cluster.NoPartition), ids, true},
		{"no state, table kept: kept", b(5, cluster.NoPartition), ids, false},
		{"no state, partition kept: kept", b(5, 50), ids, false},
		{"no state, partition dropped: stray", b(5, 51), ids, true},
		{"no state and a catalog record unreadable: kept", b(9, cluster.NoPartition), CatalogIDs{Unreadable: true}, false},
		{"a state decides even when a record is unreadable", b(2, cluster.NoPartition), CatalogIDs{Unreadable: true}, true},
	} {
		if got := Stray(states, tc.ids, self, tc.bucket); got != tc.want {
			t.Errorf("%s: %v", tc.name, got)
		}
	}
}

type remover struct {
	offered []cluster.Bucket
	err     error
}

func (r *remover) RemoveStrayReplicas(ctx context.Context, stray func(cluster.Bucket) bool) ([]cluster.Bucket, error) {
	var removed []cluster.Bucket
	for _, b := range r.offered {
		if stray(b) {
			removed = append(removed, b)
		}
	}
	r.offered = removed
	return removed, r.err
}

func TestRemove(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	kept := cluster.Bucket{TableID: 1, PartitionID: cluster.NoPartition}
	gone := cluster.Bucket{TableID: 9, PartitionID: cluster.NoPartition}
	r := &remover{offered: []cluster.Bucket{kept, gone}, err: errors.New("one directory could not be deleted")}
	ids := CatalogIDs{Tables: map[int64]bool{1: true}}
	Remove(context.Background(), r, 2, nil, ids, log)
	if !slices.Equal(r.offered, []cluster.Bucket{gone}) {
		t.Fatalf("removed %v, want the dropped table's bucket only", r.offered)
	}
	Remove(context.Background(), struct{}{}, 2, nil, ids, log) // a tablet server without the method: nothing
}
