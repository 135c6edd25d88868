package coordinator

import (
	"context"
	"io"
	"log/slog"
	"net"
	"slices"
	"sync"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
	"github.com/stromdb/strom/server/cluster"
	"github.com/stromdb/strom/server/meta"
)

// statesCluster is a Cluster whose bucket states the test sets directly: every bucket of
// every table has the state held in st.
type statesCluster struct {
	mu      sync.Mutex
	st      cluster.BucketState
	standby bool
}

func (f *statesCluster) set(st cluster.BucketState) { f.mu.Lock(); f.st = st; f.mu.Unlock() }

func (f *statesCluster) Active() bool { return !f.standby }
func (f *statesCluster) Assign(t *cluster.TableInfo, partitionID int64) ([]meta.Op, map[cluster.Bucket]cluster.BucketState, error) {
	return nil, nil, nil
}
func (f *statesCluster) DropOps(tableID, partitionID int64) []meta.Op { return nil }
func (f *statesCluster) Created(ctx context.Context, t *cluster.TableInfo, p *cluster.PartitionInfo, states map[cluster.Bucket]cluster.BucketState) {
}
func (f *statesCluster) Dropped(ctx context.Context, tableID, partitionID int64) {}
func (f *statesCluster) BucketStates(tableID, partitionID int64, n int32) ([]cluster.BucketState, []bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	states, known := make([]cluster.BucketState, n), make([]bool, n)
	for i := range states {
		states[i], known[i] = f.st, true
	}
	return states, known
}

// A tablet server killed with kill -9 leaves the live set when its lease expires, a moment
// before the coordinator elects new leaders for its buckets. GET_METADATA answered in that
// moment must still list the server the buckets name as leader: the Rust client (pyfluss)
// keeps its cached leader of a bucket whose answered leader is absent from the server list,
// and then never sends to the bucket or asks for metadata again.
func TestMetadataListsADepartedServerWhileItStillLeads(t *testing.T) {
	ctx := context.Background()
	store, err := meta.OpenEmbedded(ctx, t.TempDir(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	ep := func(port int32) []cluster.Endpoint {
		return []cluster.Endpoint{{Listener: "FLUSS", Host: "127.0.0.1", Port: port}}
	}
	topo := cluster.NewTopology()
	topo.ReplaceCoordinator(ep(9000))
	topo.ReplaceTabletServers(map[int32][]cluster.Endpoint{1: ep(9001), 2: ep(9002), 3: ep(9003)})
	states := &statesCluster{st: cluster.BucketState{Replicas: []int32{1, 2, 3}, Leader: 1, ISR: []int32{1, 2, 3}}}
	c, err := Open(ctx, store, topo, Options{Cluster: states}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	if err := c.catalog.CreateDatabase(ctx, DefaultDatabase, nil, true); err != nil {
		t.Fatal(err)
	}
	d := metadata.TableDescriptor{
		Schema:      metadata.Schema{Columns: []metadata.Column{{Name: "id", Type: metadata.DataType{Root: metadata.Int}}}},
		BucketCount: 2, Properties: map[string]string{}, CustomProperties: map[string]string{},
	}
	d.Schema.AssignFieldIDs()
	if err := c.catalog.createTable(ctx, cluster.TablePath{Database: DefaultDatabase, Table: "t"}, d.JSON(), false); err != nil {
		t.Fatal(err)
	}

	svc := wire.NewService(1)
	c.RegisterReadOnly(svc)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sctx, stop := context.WithCancel(ctx)
	t.Cleanup(stop)
	go wire.Serve(sctx, ln, svc, wire.ListenerConfig{Name: "FLUSS"}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	conn, err := wire.Dial(ctx, ln.Addr().String(), wire.ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })

	// metadata returns the listed servers (id:port) and each bucket's leader (-1: none).
	metadata := func() (servers []int32, ports map[int32]int32, leaders []int32) {
		t.Helper()
		var resp flusspb.MetadataResponse
		req := &flusspb.MetadataRequest{TablePath: []*flusspb.PbTablePath{{DatabaseName: proto.String(DefaultDatabase), TableName: proto.String("t")}}}
		if err := conn.Call(ctx, wire.GetMetadata, req, &resp); err != nil {
			t.Fatal(err)
		}
		ports = map[int32]int32{}
		for _, s := range resp.GetTabletServers() {
			servers = append(servers, s.GetNodeId())
			ports[s.GetNodeId()] = s.GetPort()
		}
		for _, bm := range resp.GetTableMetadata()[0].GetBucketMetadata() {
			if bm.LeaderId == nil {
				leaders = append(leaders, -1)
			} else {
				leaders = append(leaders, bm.GetLeaderId())
			}
		}
		return servers, ports, leaders
	}
	check := func(what string, wantServers []int32, wantLeader int32) map[int32]int32 {
		t.Helper()
		servers, ports, leaders := metadata()
		if !slices.Equal(servers, wantServers) {
			t.Fatalf("%s: tablet servers %v, want %v", what, servers, wantServers)
		}
		for b, l := range leaders {
			if l != wantLeader {
				t.Fatalf("%s: bucket %d leader %d, want %d", what, b, l, wantLeader)
			}
		}
		return ports
	}

	check("all live", []int32{1, 2, 3}, 1)

	// Server 1's lease expired; the states still name it as leader.
	topo.ReplaceTabletServers(map[int32][]cluster.Endpoint{2: ep(9002), 3: ep(9003)})
	if ports := check("leader departed, not yet replaced", []int32{1, 2, 3}, 1); ports[1] != 9001 {
		t.Fatalf("departed leader listed at port %d, want its last endpoint 9001", ports[1])
	}

	// The coordinator elected server 2: server 1 is no longer listed.
	states.set(cluster.BucketState{Replicas: []int32{1, 2, 3}, Leader: 2, LeaderEpoch: 1, ISR: []int32{2, 3}})
	check("new leader elected", []int32{2, 3}, 2)

	// A bucket without a leader names none, and lists no departed server.
	states.set(cluster.BucketState{Replicas: []int32{1, 2, 3}, Leader: cluster.NoLeader, LeaderEpoch: 1, ISR: []int32{1}})
	check("no leader", []int32{2, 3}, -1)

	// Server 1 registers again on another port: its new endpoint is listed, never the old.
	topo.ReplaceTabletServers(map[int32][]cluster.Endpoint{1: ep(9101), 2: ep(9002), 3: ep(9003)})
	states.set(cluster.BucketState{Replicas: []int32{1, 2, 3}, Leader: 1, LeaderEpoch: 2, ISR: []int32{1}})
	if ports := check("leader back", []int32{1, 2, 3}, 1); ports[1] != 9101 {
		t.Fatalf("returned server listed at port %d, want 9101", ports[1])
	}
	topo.ReplaceTabletServers(map[int32][]cluster.Endpoint{2: ep(9002), 3: ep(9003)})
	if ports := check("leader departed again", []int32{1, 2, 3}, 1); ports[1] != 9101 {
		t.Fatalf("departed leader listed at port %d, want its last endpoint 9101", ports[1])
	}
}

// A client that alters a table through the active coordinator and at once asks another node
// for the table (the Rust client's ALTER then get_table, which sends GET_METADATA to any
// tablet server) must see the new schema, whatever the lag of that node's catalog watch. The
// standby here has no watch at all: only the table read's own check can bring the change.
func TestStandbyTableReadsSeeAnAlterCommittedElsewhere(t *testing.T) {
	ctx := context.Background()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	store, err := meta.OpenEmbedded(ctx, t.TempDir(), quiet)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	states := cluster.BucketState{Replicas: []int32{1}, Leader: 1, ISR: []int32{1}}
	active, err := Open(ctx, store, cluster.NewTopology(), Options{Cluster: &statesCluster{st: states}}, quiet)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(active.Close)
	if err := active.catalog.CreateDatabase(ctx, DefaultDatabase, nil, true); err != nil {
		t.Fatal(err)
	}
	path := cluster.TablePath{Database: DefaultDatabase, Table: "altered"}
	d := metadata.TableDescriptor{
		Schema:      metadata.Schema{Columns: []metadata.Column{{Name: "id", Type: metadata.DataType{Root: metadata.Int}}}},
		BucketCount: 1, Properties: map[string]string{}, CustomProperties: map[string]string{},
	}
	d.Schema.AssignFieldIDs()
	if err := active.catalog.createTable(ctx, path, d.JSON(), false); err != nil {
		t.Fatal(err)
	}
	standby, err := Open(ctx, store, cluster.NewTopology(), Options{Cluster: &statesCluster{st: states, standby: true}}, quiet)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(standby.Close)
	pb := &flusspb.PbTablePath{DatabaseName: proto.String(path.Database), TableName: proto.String(path.Table)}
	before, err := standby.catalog.table(pb)
	if err != nil {
		t.Fatal(err)
	}

	add := metadata.AddColumn{Name: "age", Type: metadata.DataType{Root: metadata.Int}}
	if err := active.catalog.AlterTable(ctx, path, TableAlteration{AddColumns: []metadata.AddColumn{add}}, false); err != nil {
		t.Fatal(err)
	}
	// The leader of a bucket on the standby's node validates batches of the new schema id.
	if sc, ok := standby.Schema(before.ID, before.SchemaID+1); !ok || len(sc.Columns) != 2 {
		t.Fatalf("standby's catalog lacks schema %d of the altered table (found %v)", before.SchemaID+1, ok)
	}
	after, err := standby.catalog.table(pb)
	if err != nil {
		t.Fatal(err)
	}
	if after.SchemaID != before.SchemaID+1 || len(after.Descriptor.Schema.Columns) != 2 {
		t.Fatalf("standby answers schema %d with %d columns after the ALTER, want %d with 2", after.SchemaID, len(after.Descriptor.Schema.Columns), before.SchemaID+1)
	}

	// A table dropped and created again under the same name is the new table.
	if err := active.catalog.DropTable(ctx, path, false); err != nil {
		t.Fatal(err)
	}
	if err := active.catalog.createTable(ctx, path, d.JSON(), false); err != nil {
		t.Fatal(err)
	}
	again, err := standby.catalog.table(pb)
	if err != nil {
		t.Fatal(err)
	}
	if again.ID == after.ID {
		t.Fatalf("standby answers the dropped table %d after it was created again", after.ID)
	}
}
