package control

import (
	"context"
	"testing"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/server/cluster"
	"github.com/stromdb/strom/server/control/bucketstate"
	"github.com/stromdb/strom/server/control/membership"
	"github.com/stromdb/strom/server/meta"
)

// TestAssignSkipsPermanentlyOfflineServers checks the coordinator's entry point: placement
// over the live servers without a PERMANENT_OFFLINE tag (a TEMPORARY_OFFLINE one still gets
// replicas, as in Fluss), one put per bucket in bucket order, and the drop's deletes.
func TestAssignSkipsPermanentlyOfflineServers(t *testing.T) {
	store, err := meta.OpenEmbedded(context.Background(), t.TempDir(), testLog())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	c := New(Options{Store: store, Log: testLog()})
	c.members.Replace(map[int32]membership.Registration{1: {ID: 1}, 2: {ID: 2}, 3: {ID: 3}})
	c.rebalancer.Replace(map[string][]byte{"servertags": []byte(`{"2":0,"3":1}`)})
	table := &cluster.TableInfo{ID: 6, Descriptor: metadata.TableDescriptor{BucketCount: 3,
		Properties: map[string]string{"table.replication.factor": "2"}}}
	ops, states, err := c.Assign(table, cluster.NoPartition)
	if err != nil {
		t.Fatal(err)
	}
	if len(ops) != 3 || len(states) != 3 {
		t.Fatalf("%d ops, %d states", len(ops), len(states))
	}
	for i, op := range ops {
		b := cluster.Bucket{TableID: 6, PartitionID: cluster.NoPartition, Bucket: int32(i)}
		st, err := bucketstate.Decode(op.Value)
		if op.Key != bucketstate.Key(b) || err != nil || st.IsReplica(2) || len(st.Replicas) != 2 {
			t.Fatalf("op %d: %s %+v %v", i, op.Key, st, err)
		}
	}
	table.Descriptor.Properties["table.replication.factor"] = "3"
	if _, _, err := c.Assign(table, cluster.NoPartition); ferr.CodeOf(err) != ferr.InvalidReplicationFactor {
		t.Fatalf("RF 3 over two placeable servers: %v", err)
	}
	drop := c.DropOps(6, 9)
	if len(drop) != 2 || drop[0].Key != "buckets/6/9/" || drop[1].Key != "lineage/6/9/" || !drop[0].Prefix || !drop[1].Delete {
		t.Fatalf("drop ops %+v", drop)
	}
}
