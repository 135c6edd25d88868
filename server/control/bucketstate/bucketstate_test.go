package bucketstate

import (
	"slices"
	"testing"

	"github.com/stromdb/strom/server/cluster"
)

func TestKeys(t *testing.T) {
	for _, b := range []cluster.Bucket{{TableID: 12, PartitionID: cluster.NoPartition, Bucket: 3}, {TableID: 1, PartitionID: 40, Bucket: 0}} {
		got, ok := ParseKey(Key(b))
		if !ok || got != b {
			t.Fatalf("%v -> %q -> %v %v", b, Key(b), got, ok)
		}
	}
	for _, tc := range []struct{ got, want string }{
		{Key(cluster.Bucket{TableID: 12, PartitionID: cluster.NoPartition, Bucket: 3}), "buckets/12/-/3"},
		{LineageKey(cluster.Bucket{TableID: 1, PartitionID: 40, Bucket: 0}), "lineage/1/40/0"},
		{TablePrefix(1, cluster.NoPartition), "buckets/1/"},
		{TablePrefix(1, 2), "buckets/1/2/"},
		{LineageTablePrefix(1, cluster.NoPartition), "lineage/1/"},
		{LineageTablePrefix(1, 2), "lineage/1/2/"},
		{LineageBucketsPrefix(1, cluster.NoPartition), "lineage/1/-/"},
		{LineageBucketsPrefix(1, 2), "lineage/1/2/"},
	} {
		if tc.got != tc.want {
			t.Errorf("%q, want %q", tc.got, tc.want)
		}
	}
	for _, b := range []cluster.Bucket{{TableID: 12, PartitionID: cluster.NoPartition, Bucket: 3}, {TableID: 1, PartitionID: 40, Bucket: 0}} {
		if got, ok := ParseLineageKey(LineageKey(b)); !ok || got != b {
			t.Fatalf("lineage %v -> %q -> %v %v", b, LineageKey(b), got, ok)
		}
		if _, ok := ParseLineageKey(Key(b)); ok {
			t.Errorf("ParseLineageKey accepted the state key %q", Key(b))
		}
	}
	for _, bad := range []string{"buckets/1/-", "buckets/x/-/0", "buckets/1/y/0", "buckets/1/-/z", "lineage/1/-/0", "servers/1"} {
		if _, ok := ParseKey(bad); ok {
			t.Errorf("ParseKey accepted %q", bad)
		}
	}
}

func TestEncodeDecode(t *testing.T) {
	st := cluster.BucketState{Replicas: []int32{1, 2}, Leader: 2, ISR: []int32{2}, LeaderEpoch: 3, BucketEpoch: 4, CoordinatorEpoch: 99}
	got, err := Decode(Encode(st))
	if err != nil || !slices.Equal(got.Replicas, st.Replicas) || !slices.Equal(got.ISR, st.ISR) || got.Leader != 2 ||
		got.LeaderEpoch != 3 || got.BucketEpoch != 4 || got.CoordinatorEpoch != 99 {
		t.Fatalf("round trip: %+v, %v", got, err)
	}
	if _, err := Decode([]byte("[")); err == nil {
		t.Fatal("a corrupt state decoded")
	}
}

func bk(table, partition int64, n int32) cluster.Bucket {
	return cluster.Bucket{TableID: table, PartitionID: partition, Bucket: n}
}

func TestCacheKeepsTheLatestRevision(t *testing.T) {
	c := NewCache()
	b := bk(1, cluster.NoPartition, 0)
	old := cluster.BucketState{Replicas: []int32{1}, Leader: 1, ISR: []int32{1}}
	newer := cluster.BucketState{Replicas: []int32{1, 2}, Leader: 1, ISR: []int32{1}, BucketEpoch: 1}
	c.Put(b, newer, 20)
	c.Put(b, old, 10) // the watch delivering an older write after this node's own
	if st, _ := c.State(b); st.BucketEpoch != 1 {
		t.Fatalf("an older revision replaced a newer one: %+v", st)
	}
	c.Apply([]Change{{Bucket: b, State: old, Rev: 15}})
	if e, _ := c.Get(b); e.Rev != 20 {
		t.Fatalf("an older watched change replaced revision 20: %+v", e)
	}
	// A notification ahead of the watch: taken if Newer, keeping the revision.
	promoted := cluster.BucketState{Replicas: []int32{1, 2}, Leader: 2, ISR: []int32{2}, LeaderEpoch: 1, BucketEpoch: 2}
	c.PutNewer(b, old)
	c.PutNewer(b, promoted)
	if e, _ := c.Get(b); e.State.Leader != 2 || e.Rev != 20 {
		t.Fatalf("after notifications: %+v", e)
	}
	c.Apply([]Change{{Bucket: b, Deleted: true}})
	if _, ok := c.Get(b); ok {
		t.Fatal("a deleted state is still cached")
	}
	// A notification of a bucket the cache does not know yet is recorded at revision 0.
	c.PutNewer(b, old)
	if e, ok := c.Get(b); !ok || e.Rev != 0 {
		t.Fatalf("a notified new bucket: %+v %v", e, ok)
	}
}

func TestCacheViews(t *testing.T) {
	c := NewCache()
	on := func(ids ...int32) cluster.BucketState {
		return cluster.BucketState{Replicas: ids, Leader: ids[0], ISR: ids}
	}
	c.Replace(map[cluster.Bucket]Entry{
		bk(1, cluster.NoPartition, 0): {State: on(1, 2), Rev: 5},
		bk(1, cluster.NoPartition, 2): {State: on(2, 3), Rev: 6},
		bk(2, 7, 0):                   {State: on(3), Rev: 7},
		bk(2, 8, 0):                   {State: on(1), Rev: 8},
	})
	states, ok := c.Table(1, cluster.NoPartition, 3)
	if !slices.Equal(ok, []bool{true, false, true}) || states[2].Leader != 2 {
		t.Fatalf("Table = %+v %v", states, ok)
	}
	if got := c.Entries(func(st cluster.BucketState) bool { return st.Leader == 1 }); len(got) != 2 || got[bk(2, 8, 0)].Rev != 8 {
		t.Fatalf("Entries led by 1 = %+v", got)
	}
	if got := c.Of([]cluster.Bucket{bk(2, 7, 0), bk(9, 9, 9)}); len(got) != 1 {
		t.Fatalf("Of = %+v", got)
	}
	if !c.AnyReplica(3) || c.AnyReplica(4) {
		t.Fatal("AnyReplica")
	}
	c.Forget(2, 7)
	if _, ok := c.Get(bk(2, 7, 0)); ok || len(c.Snapshot()) != 3 {
		t.Fatalf("Forget of a partition: %v", c.Snapshot())
	}
	c.Forget(1, cluster.NoPartition)
	if snap := c.Snapshot(); len(snap) != 1 {
		t.Fatalf("Forget of a table: %v", snap)
	}
}
