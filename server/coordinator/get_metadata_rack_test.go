package coordinator

import (
	"context"
	"io"
	"log/slog"
	"net"
	"testing"

	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
	"github.com/stromdb/strom/server/cluster"
	"github.com/stromdb/strom/server/meta"
)

// GET_METADATA names each tablet server's rack (PbServerNode.rack, Fluss >= 0.7) when the
// server has one, and leaves the field absent for a server without one.
func TestMetadataServerNodesCarryRacks(t *testing.T) {
	ctx := context.Background()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	store, err := meta.OpenEmbedded(ctx, t.TempDir(), logger)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	ep := func(port int32) []cluster.Endpoint {
		return []cluster.Endpoint{{Listener: "FLUSS", Host: "127.0.0.1", Port: port}}
	}
	topo := cluster.NewTopology()
	topo.ReplaceCoordinator(ep(9000))
	topo.ReplaceTabletServers(map[int32][]cluster.Endpoint{1: ep(9001), 2: ep(9002)})
	topo.ReplaceRacks(map[int32]string{1: "rack-a"})
	c, err := Open(ctx, store, topo, Options{}, logger)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	svc := wire.NewService(1)
	c.RegisterReadOnly(svc)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sctx, stop := context.WithCancel(ctx)
	t.Cleanup(stop)
	go wire.Serve(sctx, ln, svc, wire.ListenerConfig{Name: "FLUSS"}, logger)
	conn, err := wire.Dial(ctx, ln.Addr().String(), wire.ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })

	var resp flusspb.MetadataResponse
	if err := conn.Call(ctx, wire.GetMetadata, &flusspb.MetadataRequest{}, &resp); err != nil {
		t.Fatal(err)
	}
	racks := map[int32]*string{}
	for _, s := range resp.GetTabletServers() {
		racks[s.GetNodeId()] = s.Rack
	}
	if len(racks) != 2 || racks[1] == nil || *racks[1] != "rack-a" || racks[2] != nil {
		t.Fatalf("tablet servers %v: want server 1 in rack-a and server 2 without a rack", resp.GetTabletServers())
	}
	if resp.GetCoordinatorServer().Rack != nil {
		t.Fatalf("the coordinator has a rack: %v", resp.GetCoordinatorServer())
	}
}
