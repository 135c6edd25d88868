package assign

import (
	"context"
	"testing"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/server/cluster"
	"github.com/stromdb/strom/server/control/bucketstate"
	"github.com/stromdb/strom/server/meta"
)

// TestReplicationAgainstEtcd runs a leader's etcd records against an embedded etcd: an ISR
// change is a swap on the state's revision (recorded in the cache ahead of the watch), a
// stale one is fenced; a lineage is stored only at the current leader epoch; a commit fenced
// by the leadership applies only while this server leads at that epoch.
func TestReplicationAgainstEtcd(t *testing.T) {
	ctx := context.Background()
	store, err := meta.OpenEmbedded(ctx, t.TempDir(), discard())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	b := cluster.Bucket{TableID: 3, PartitionID: cluster.NoPartition, Bucket: 1}
	st := cluster.BucketState{Replicas: []int32{1, 2, 3}, Leader: 1, ISR: []int32{1, 2, 3}, LeaderEpoch: 2, BucketEpoch: 5}
	if _, err := store.Txn(ctx, nil, []meta.Op{meta.Put(bucketstate.Key(b), bucketstate.Encode(st))}); err != nil {
		t.Fatal(err)
	}
	cache := bucketstate.NewCache()
	r := &Replication{Store: store, States: cache, Self: 1}

	shrunk, err := r.AdjustISR(ctx, b, st, []int32{1, 3})
	if err != nil {
		t.Fatal(err)
	}
	if shrunk.BucketEpoch != 6 || len(shrunk.ISR) != 2 {
		t.Fatalf("after the shrink: %+v", shrunk)
	}
	if e, ok := cache.Get(b); !ok || e.Rev == 0 || e.State.BucketEpoch != 6 {
		t.Fatalf("the shrink was not recorded ahead of the watch: %+v %v", e, ok)
	}
	if _, err := r.AdjustISR(ctx, b, st, []int32{1}); ferr.CodeOf(err) != ferr.FencedLeaderEpochException {
		t.Fatalf("an ISR change on a stale state: %v", err)
	}
	missing := cluster.Bucket{TableID: 3, PartitionID: cluster.NoPartition, Bucket: 9}
	if _, err := r.AdjustISR(ctx, missing, st, []int32{1}); ferr.CodeOf(err) != ferr.UnknownTableOrBucketException {
		t.Fatalf("an ISR change of a bucket without a state: %v", err)
	}

	if _, ok, err := r.Lineage(ctx, b); ok || err != nil {
		t.Fatalf("a lineage before any was published: %v %v", ok, err)
	}
	l := cluster.Lineage{LeaderEpoch: 2, Entries: []cluster.EpochStart{{Epoch: 0, StartOffset: 0}, {Epoch: 2, StartOffset: 40}}}
	if err := r.PublishLineage(ctx, b, l); err != nil {
		t.Fatal(err)
	}
	if err := r.PublishLineage(ctx, b, cluster.Lineage{LeaderEpoch: 1}); ferr.CodeOf(err) != ferr.FencedLeaderEpochException {
		t.Fatalf("the lineage of an old leader epoch: %v", err)
	}
	got, ok, err := r.Lineage(ctx, b)
	if err != nil || !ok || got.LeaderEpoch != 2 || len(got.Entries) != 2 || got.Entries[1].StartOffset != 40 {
		t.Fatalf("lineage %+v %v %v", got, ok, err)
	}

	put := []meta.Op{meta.Put("kv-snapshots/x", []byte("1"))}
	if ok, err := r.CommitAsLeader(ctx, b, 2, nil, put); !ok || err != nil {
		t.Fatalf("a commit by the leader: %v %v", ok, err)
	}
	if _, err := r.CommitAsLeader(ctx, b, 1, nil, put); ferr.CodeOf(err) != ferr.FencedLeaderEpochException {
		t.Fatalf("a commit at an old leader epoch: %v", err)
	}
	follower := &Replication{Store: store, States: cache, Self: 2}
	if _, err := follower.CommitAsLeader(ctx, b, 2, nil, put); ferr.CodeOf(err) != ferr.FencedLeaderEpochException {
		t.Fatalf("a commit by a follower: %v", err)
	}
	if ok, err := r.CommitAsLeader(ctx, b, 2, []meta.Cond{{Key: "kv-snapshots/x", Exists: false}}, put); ok || err != nil {
		t.Fatalf("a commit whose condition fails: %v %v", ok, err)
	}
}

// PublishLineage decides on the cached state when the cache knows its revision, and never
// publishes on a cached state that etcd no longer holds: a cache behind etcd (the leader
// epoch moved on) is corrected by the transaction's own answer, and a cache whose state
// refuses the lineage is checked against etcd before the refusal stands.
func TestPublishLineageOnACachedState(t *testing.T) {
	ctx := context.Background()
	store, err := meta.OpenEmbedded(ctx, t.TempDir(), discard())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	b := cluster.Bucket{TableID: 4, PartitionID: cluster.NoPartition, Bucket: 0}
	put := func(st cluster.BucketState) int64 {
		t.Helper()
		if _, err := store.Txn(ctx, nil, []meta.Op{meta.Put(bucketstate.Key(b), bucketstate.Encode(st))}); err != nil {
			t.Fatal(err)
		}
		_, rev, err := store.GetRevision(ctx, bucketstate.Key(b))
		if err != nil {
			t.Fatal(err)
		}
		return rev
	}
	epoch3 := cluster.BucketState{Replicas: []int32{1, 2}, Leader: 1, ISR: []int32{1, 2}, LeaderEpoch: 3, BucketEpoch: 3}
	rev3 := put(epoch3)
	epoch4 := cluster.BucketState{Replicas: []int32{1, 2}, Leader: 2, ISR: []int32{1, 2}, LeaderEpoch: 4, BucketEpoch: 4}
	put(epoch4)

	// The cache still holds epoch 3 at its revision; etcd is at epoch 4.
	cache := bucketstate.NewCache()
	cache.Put(b, epoch3, rev3)
	r := &Replication{Store: store, States: cache, Self: 1}
	if err := r.PublishLineage(ctx, b, cluster.Lineage{LeaderEpoch: 3}); ferr.CodeOf(err) != ferr.FencedLeaderEpochException {
		t.Fatalf("a lineage of the cached but superseded epoch 3: %v", err)
	}
	if _, ok, _ := r.Lineage(ctx, b); ok {
		t.Fatal("a lineage was published on a state etcd no longer holds")
	}
	// The stale cache refuses epoch 4's lineage; etcd accepts it.
	if err := r.PublishLineage(ctx, b, cluster.Lineage{LeaderEpoch: 4}); err != nil {
		t.Fatalf("the lineage of the current epoch with a stale cache: %v", err)
	}
	if l, ok, err := r.Lineage(ctx, b); err != nil || !ok || l.LeaderEpoch != 4 {
		t.Fatalf("the published lineage: %+v %v %v", l, ok, err)
	}
}
