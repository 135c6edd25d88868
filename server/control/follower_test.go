package control

import (
	"context"
	"slices"
	"sync"
	"testing"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/stromdb/strom/server/cluster"
	"github.com/stromdb/strom/server/control/bucketstate"
	"github.com/stromdb/strom/server/control/membership"
	"github.com/stromdb/strom/server/meta"
)

// recordingTablet is a tablet server that records what the control plane hands it.
type recordingTablet struct {
	mu      sync.Mutex
	applied []cluster.BucketUpdate
	stopped [][2]int64
}

func (r *recordingTablet) BecomeLeader(ctx context.Context, t *cluster.TableInfo, p *cluster.PartitionInfo) error {
	return nil
}

func (r *recordingTablet) StopReplicas(ctx context.Context, tableID, partitionID int64) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stopped = append(r.stopped, [2]int64{tableID, partitionID})
	return nil
}

func (r *recordingTablet) ApplyBucketStates(ctx context.Context, updates []cluster.BucketUpdate) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.applied = append(r.applied, updates...)
	return nil
}

// tableCatalog knows every table id, with no partitions.
type tableCatalog struct{ cluster.Catalog }

func (tableCatalog) TableByID(id int64) (*cluster.TableInfo, bool) {
	return &cluster.TableInfo{ID: id, Path: cluster.TablePath{Database: "db", Table: "t"}}, true
}
func (tableCatalog) Reload(ctx context.Context) error   { return nil }
func (tableCatalog) Takeover(ctx context.Context) error { return nil }

func event(put bool, key string, value []byte, rev int64, prev []byte) *clientv3.Event {
	ev := &clientv3.Event{Type: clientv3.EventTypeDelete, Kv: &mvccpb.KeyValue{Key: []byte(meta.KeyPrefix + key), ModRevision: rev}}
	if put {
		ev.Type = clientv3.EventTypePut
		ev.Kv.Value = value
	}
	if prev != nil {
		ev.PrevKv = &mvccpb.KeyValue{Key: ev.Kv.Key, Value: prev}
	}
	return ev
}

// TestFollowerRoutesEachKeyToItsOwner feeds the follower a load and watch events and checks
// that each concern got its keys: registrations the members and the topology, states the
// cache and the local tablet server (a drop with the table's schemas stops the whole table),
// tags the rebalancer, catalog records a catalog reload.
func TestFollowerRoutesEachKeyToItsOwner(t *testing.T) {
	ctx := context.Background()
	store, err := meta.OpenEmbedded(ctx, t.TempDir(), testLog())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	topo := cluster.NewTopology()
	c := New(Options{Store: store, Topology: topo, Log: testLog()})
	tablet := &recordingTablet{}
	c.SetCatalog(tableCatalog{})
	c.SetTablet(Registration{ID: 1}, tablet)

	mine := cluster.BucketState{Replicas: []int32{1, 2}, Leader: 1, ISR: []int32{1, 2}}
	b0 := cluster.Bucket{TableID: 4, PartitionID: cluster.NoPartition, Bucket: 0}
	putJSON(t, store, membership.Key(5), Registration{ID: 5, Internal: "h5:1", Endpoints: []cluster.Endpoint{{Listener: "FLUSS", Host: "h5", Port: 1}}})
	putJSON(t, store, BucketKey(b0), mine)
	putJSON(t, store, "servertags", map[string]int32{"5": 1})
	putJSON(t, store, "tables/db/t", map[string]int64{"id": 4})
	rev, kvs, err := c.follower.load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rev == 0 || len(kvs) != 4 {
		t.Fatalf("load: revision %d, %d keys", rev, len(kvs))
	}
	if !slices.Equal(c.LiveServers(), []int32{5}) || c.ServerTags()[5] != TagTemporaryOffline {
		t.Fatalf("after the load: live %v, tags %v", c.LiveServers(), c.ServerTags())
	}
	if e, ok := c.states.Get(b0); !ok || e.Rev == 0 {
		t.Fatalf("the loaded state has no revision: %+v %v", e, ok)
	}
	if _, _, tablets := topo.Resolve("FLUSS", "x"); len(tablets) != 1 || tablets[5].Host != "h5" {
		t.Fatalf("topology after the load: %v", tablets)
	}

	c.follower.handle(ctx, []*clientv3.Event{
		event(true, membership.Key(2), []byte(`{"id":2,"internal":"h2:1"}`), rev+1, nil),
		event(true, membership.Key(3), []byte(`{`), rev+1, nil), // corrupt: ignored
		event(false, membership.Key(5), nil, rev+1, nil),
		event(true, "servertags", []byte(`{"2":0}`), rev+1, nil),
		event(true, "databases/db2", []byte(`{}`), rev+1, nil),
	})
	if !slices.Equal(c.LiveServers(), []int32{2}) || c.ServerTags()[2] != TagPermanentOffline || len(c.ServerTags()) != 1 {
		t.Fatalf("after the events: live %v, tags %v", c.LiveServers(), c.ServerTags())
	}
	if addr, ok := c.ReplicationAddr(2); !ok || addr != "h2:1" {
		t.Fatalf("ReplicationAddr(2) = %q %v", addr, ok)
	}
	if _, ok := topo.DepartedTabletServer("FLUSS", "x", 5); !ok {
		t.Fatal("the topology did not learn that server 5 left")
	}
	if len(c.follower.catalogKick) != 1 {
		t.Fatal("a catalog change did not ask for a catalog reload")
	}

	moved := cluster.BucketState{Replicas: []int32{1, 2}, Leader: 2, ISR: []int32{2}, LeaderEpoch: 1, BucketEpoch: 1}
	c.follower.handle(ctx, []*clientv3.Event{event(true, BucketKey(b0), bucketstate.Encode(moved), rev+2, nil)})
	if st, _ := c.State(b0); st.Leader != 2 {
		t.Fatalf("the cache after a watched state: %+v", st)
	}
	tablet.mu.Lock()
	applied := len(tablet.applied)
	tablet.mu.Unlock()
	if applied != 1 {
		t.Fatalf("the tablet server was handed %d updates, want the watched state", applied)
	}
	c.follower.handle(ctx, []*clientv3.Event{
		event(false, BucketKey(b0), nil, rev+3, bucketstate.Encode(moved)),
		event(false, "schemas/4/1", nil, rev+3, nil),
	})
	if _, ok := c.State(b0); ok {
		t.Fatal("a deleted state is still cached")
	}
	if !slices.Equal(tablet.stopped, [][2]int64{{4, cluster.NoPartition}}) {
		t.Fatalf("stopped %v, want the whole dropped table 4", tablet.stopped)
	}
}

// A watched state whose leader is not live asks the reconciler for an election, whatever
// else the batch held: a table placed from a membership view that went stale while its
// transaction committed (a server revoked meanwhile) would otherwise keep a dead leader
// until the next membership change. A state with a live leader and ISR asks for nothing.
func TestWatchedStateNamingADeadServerAsksForAnElection(t *testing.T) {
	ctx := context.Background()
	store, err := meta.OpenEmbedded(ctx, t.TempDir(), testLog())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	c := New(Options{Store: store, Topology: cluster.NewTopology(), Log: testLog()})
	c.SetCatalog(tableCatalog{})
	c.SetTablet(Registration{ID: 1}, &recordingTablet{})
	putJSON(t, store, membership.Key(1), Registration{ID: 1, Internal: "h1:1"})
	putJSON(t, store, membership.Key(2), Registration{ID: 2, Internal: "h2:1"})
	rev, _, err := c.follower.load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b := cluster.Bucket{TableID: 6, PartitionID: cluster.NoPartition, Bucket: 0}
	healthy := cluster.BucketState{Replicas: []int32{1, 2}, Leader: 1, ISR: []int32{1, 2}}
	c.follower.handle(ctx, []*clientv3.Event{event(true, BucketKey(b), bucketstate.Encode(healthy), rev+1, nil)})
	if c.reconciler.Pending() {
		t.Fatal("a state with a live leader and ISR asked for an election")
	}
	// Server 3 was revoked before the state naming it as leader arrived.
	deadLeader := cluster.BucketState{Replicas: []int32{3, 2}, Leader: 3, ISR: []int32{3, 2}}
	c.follower.handle(ctx, []*clientv3.Event{event(true, BucketKey(b), bucketstate.Encode(deadLeader), rev+2, nil)})
	if !c.reconciler.Pending() {
		t.Fatal("a state led by a server that is not live did not ask for an election")
	}
}
