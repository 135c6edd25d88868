package notify

import (
	"context"
	"io"
	"log/slog"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
	"github.com/stromdb/strom/server/cluster"
	"github.com/stromdb/strom/server/control/bucketstate"
	"github.com/stromdb/strom/server/control/internal/statetext"
	"github.com/stromdb/strom/server/control/membership"
	"github.com/stromdb/strom/server/control/peers"
)

func discard() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func bk(table, partition int64, n int32) cluster.Bucket {
	return cluster.Bucket{TableID: table, PartitionID: partition, Bucket: n}
}

func TestPasses(t *testing.T) {
	listed := cluster.BucketState{Replicas: []int32{1, 2}}
	unlisted := cluster.BucketState{Replicas: []int32{2, 3}}
	for _, tc := range []struct {
		st   cluster.BucketState
		held bool
		want bool
	}{
		{listed, false, true},    // a new replica of this server
		{listed, true, true},     // a change of one it holds
		{unlisted, true, true},   // it is no longer a replica: told, so it drops its copy
		{unlisted, false, false}, // never concerned it
	} {
		if got := passes(1, tc.st, tc.held); got != tc.want {
			t.Errorf("passes(%v, held %v) = %v", tc.st.Replicas, tc.held, got)
		}
	}
}

func TestStopTargets(t *testing.T) {
	np := cluster.NoPartition
	for _, tc := range []struct {
		name          string
		dropped       []cluster.Bucket
		droppedTables map[int64]bool
		want          []tablePartition
	}{
		{"a dropped table's partitions stop as the whole table, once",
			[]cluster.Bucket{bk(1, 5, 0), bk(1, 5, 1), bk(1, 6, 0)}, map[int64]bool{1: true}, []tablePartition{{1, np}}},
		{"a dropped partition stops alone",
			[]cluster.Bucket{bk(1, 5, 0), bk(1, 5, 1), bk(1, 6, 0)}, nil, []tablePartition{{1, 5}, {1, 6}}},
		{"an unpartitioned table",
			[]cluster.Bucket{bk(2, np, 0), bk(2, np, 3)}, map[int64]bool{2: true}, []tablePartition{{2, np}}},
		{"nothing dropped", nil, nil, nil},
	} {
		if got := stopTargets(tc.dropped, tc.droppedTables); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestLeaderTables(t *testing.T) {
	u := func(b cluster.Bucket, leader int32) cluster.BucketUpdate {
		return cluster.BucketUpdate{Bucket: b, State: cluster.BucketState{Leader: leader}}
	}
	got := leaderTables(1, []cluster.BucketUpdate{u(bk(1, -1, 0), 2), u(bk(1, -1, 1), 1), u(bk(1, -1, 2), 1), u(bk(1, 7, 0), 1), u(bk(2, -1, 0), 3)})
	if len(got) != 2 || got[0].Bucket != bk(1, -1, 1) || got[1].Bucket != bk(1, 7, 0) {
		t.Fatalf("leaderTables = %+v, want one update of table 1 and one of its partition 7", got)
	}
}

func TestByServer(t *testing.T) {
	states, _ := statetext.ParseStates("1/-/0 r=1,2 l=1 isr=1,2\n1/-/1 r=2,3 l=2 isr=2,3\n")
	got := byServer(states)
	if len(got) != 3 || len(got[1]) != 1 || len(got[2]) != 2 || len(got[3]) != 1 {
		t.Fatalf("byServer = %v", got)
	}
}

func TestRequestRoundTrip(t *testing.T) {
	states, _ := statetext.ParseStates(`
4/-/0 r=1,2,3 l=2 isr=2,3 le=3 be=5
4/9/1 r=3 l=3 isr=3 le=1 be=1
`)
	table := &cluster.TableInfo{ID: 4, Path: cluster.TablePath{Database: "db", Table: "t"}}
	req := encodeRequest(1<<33+7, states, func(int64) *cluster.TableInfo { return table }, &cluster.PartitionInfo{ID: 9, Name: "p9"})
	if req.GetCoordinatorEpoch() != 7 {
		t.Fatalf("epoch %d: want the 64-bit epoch truncated to 32 bits", req.GetCoordinatorEpoch())
	}
	for _, nb := range req.GetNotifyBucketsLeaderReq() {
		path := nb.GetPhysicalTablePath()
		if path.GetDatabaseName() != "db" || path.GetTableName() != "t" {
			t.Fatalf("path %v", path)
		}
		if (nb.GetTableBucket().PartitionId != nil) != (path.PartitionName != nil) {
			t.Fatalf("the partition name is sent for the partition's bucket only: %v", nb)
		}
	}
	got := decodeRequest(req)
	for b, st := range states {
		st.CoordinatorEpoch = 7
		if g := got[b]; statetext.FormatState(b, g) != statetext.FormatState(b, st) {
			t.Fatalf("round trip of %s: %s", statetext.FormatState(b, st), statetext.FormatState(b, g))
		}
	}
}

// fakeTablet is a tablet server: the states it was given, the tables it was told to lead,
// and what it was told to stop.
type fakeTablet struct {
	mu      sync.Mutex
	applied []cluster.BucketUpdate
	stopped []tablePartition
	led     []int64
}

func (f *fakeTablet) BecomeLeader(ctx context.Context, table *cluster.TableInfo, partition *cluster.PartitionInfo) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.led = append(f.led, table.ID)
	return nil
}

func (f *fakeTablet) StopReplicas(ctx context.Context, tableID, partitionID int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stopped = append(f.stopped, tablePartition{tableID, partitionID})
	return nil
}

type applyingTablet struct{ fakeTablet }

func (f *applyingTablet) ApplyBucketStates(ctx context.Context, updates []cluster.BucketUpdate) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.applied = append(f.applied, updates...)
	return nil
}

// fakeCatalog knows the tables of known; each Reload adds those of later.
type fakeCatalog struct {
	cluster.Catalog
	mu      sync.Mutex
	known   map[int64]bool
	later   []int64
	reloads int
}

func (c *fakeCatalog) TableByID(id int64) (*cluster.TableInfo, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.known[id] {
		return nil, false
	}
	return &cluster.TableInfo{ID: id, Path: cluster.TablePath{Database: "db", Table: "t"}}, true
}

func (c *fakeCatalog) PartitionByID(id int64) (*cluster.PartitionInfo, bool) {
	return &cluster.PartitionInfo{ID: id, Name: "p"}, true
}

func (c *fakeCatalog) Reload(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reloads++
	return nil
}

func (c *fakeCatalog) learn(id int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.known[id] = true
}

func newNotifier(self int32, replicas cluster.ReplicaManager, cat Catalog) *Notifier {
	return &Notifier{Self: self, Replicas: replicas, Catalog: cat, States: bucketstate.NewCache(), Members: membership.NewMembers(),
		Pool: peers.NewPool(), Epoch: func() int64 { return 5 }, Timeout: 10 * time.Second, Log: discard()}
}

func TestApplyMine(t *testing.T) {
	ctx := context.Background()
	tablet := &applyingTablet{}
	cat := &fakeCatalog{known: map[int64]bool{1: true}}
	n := newNotifier(1, tablet, cat)
	mine := cluster.BucketState{Replicas: []int32{1, 2}, Leader: 1, ISR: []int32{1, 2}}
	moved := cluster.BucketState{Replicas: []int32{2, 3}, Leader: 2, ISR: []int32{2, 3}, BucketEpoch: 1}
	b := bk(1, cluster.NoPartition, 0)

	n.ApplyMine(ctx, map[cluster.Bucket]cluster.BucketState{b: mine, bk(1, -1, 1): moved}, nil, nil)
	if len(tablet.applied) != 1 || tablet.applied[0].Bucket != b {
		t.Fatalf("applied %+v, want the state that lists this server only", tablet.applied)
	}
	n.ApplyMine(ctx, map[cluster.Bucket]cluster.BucketState{b: moved}, nil, nil)
	if len(tablet.applied) != 2 || tablet.applied[1].State.IsReplica(1) {
		t.Fatalf("the state that stopped listing this server was not passed: %+v", tablet.applied)
	}
	n.ApplyMine(ctx, map[cluster.Bucket]cluster.BucketState{b: moved}, nil, nil)
	if len(tablet.applied) != 2 {
		t.Fatal("a state of a bucket this server no longer holds was passed again")
	}

	// A state of a table the catalog does not know yet: one reload, then pending until the
	// catalog has it.
	unknown := bk(2, cluster.NoPartition, 0)
	n.States.Put(unknown, mine, 3)
	n.ApplyMine(ctx, map[cluster.Bucket]cluster.BucketState{unknown: mine}, nil, nil)
	if cat.reloads != 1 || len(tablet.applied) != 2 {
		t.Fatalf("reloads %d, applied %d", cat.reloads, len(tablet.applied))
	}
	cat.learn(2)
	n.RetryPending(ctx)
	if len(tablet.applied) != 3 || tablet.applied[2].Bucket != unknown {
		t.Fatalf("the pending state was not applied after the catalog learnt its table: %+v", tablet.applied)
	}
	n.RetryPending(ctx)
	if len(tablet.applied) != 3 {
		t.Fatal("a pending state was applied twice")
	}

	n.ApplyMine(ctx, nil, []cluster.Bucket{bk(3, 8, 0), bk(3, 8, 1)}, nil)
	if !slices.Equal(tablet.stopped, []tablePartition{{3, 8}}) {
		t.Fatalf("stopped %v", tablet.stopped)
	}
}

func TestApplyMineWithoutApplyBucketStatesLeadsTables(t *testing.T) {
	tablet := &fakeTablet{}
	n := newNotifier(1, tablet, &fakeCatalog{known: map[int64]bool{1: true, 2: true}})
	states, _ := statetext.ParseStates("1/-/0 r=1 l=1 isr=1\n1/-/1 r=1 l=1 isr=1\n2/-/0 r=1,2 l=2 isr=1,2\n")
	n.ApplyMine(context.Background(), states, nil, nil)
	if !slices.Equal(tablet.led, []int64{1}) {
		t.Fatalf("led %v, want table 1 once (this server follows in table 2)", tablet.led)
	}
}

// TestNotifyOverTheWire sends states from a coordinator to a tablet server's handler on a
// loopback listener: the replica records and applies them; a request on another listener
// is refused.
func TestNotifyOverTheWire(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tablet := &applyingTablet{}
	receiver := newNotifier(2, tablet, &fakeCatalog{known: map[int64]bool{1: true}})
	svc := wire.NewService(2)
	receiver.Register(svc, "FLUSS")
	start := func(name string) string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		go wire.Serve(ctx, ln, svc, wire.ListenerConfig{Name: name}, discard())
		return ln.Addr().String()
	}
	internal, client := start("FLUSS"), start("CLIENT")

	// The sender names each bucket's table from its catalog (the path is a required field).
	sender := newNotifier(1, nil, &fakeCatalog{known: map[int64]bool{1: true}})
	defer sender.Pool.Close()
	sender.Members.Put(2, membership.Registration{ID: 2, Internal: internal})
	states, _ := statetext.ParseStates("1/-/0 r=1,2 l=1 isr=1,2 le=1 be=1\n1/-/1 r=1,3 l=1 isr=1,3\n")
	sender.Notify(ctx, states, nil, nil)
	tablet.mu.Lock()
	applied := slices.Clone(tablet.applied)
	tablet.mu.Unlock()
	if len(applied) != 1 || applied[0].Bucket != bk(1, -1, 0) || applied[0].State.CoordinatorEpoch != 5 {
		t.Fatalf("server 2 applied %+v, want its one bucket at coordinator epoch 5", applied)
	}
	if st, ok := receiver.States.State(bk(1, -1, 0)); !ok || st.LeaderEpoch != 1 {
		t.Fatalf("the notified state was not recorded ahead of the watch: %+v %v", st, ok)
	}

	var resp flusspb.NotifyLeaderAndIsrResponse
	err := sender.Pool.Call(ctx, client, wire.NotifyLeaderAndIsr, encodeRequest(5, states, func(int64) *cluster.TableInfo { return &cluster.TableInfo{ID: 1} }, nil), &resp)
	if ferr.CodeOf(err) != ferr.AuthorizationException {
		t.Fatalf("NOTIFY_LEADER_AND_ISR on a client listener: %v", err)
	}
}
