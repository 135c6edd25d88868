package peers

import (
	"context"
	"io"
	"log/slog"
	"net"
	"sync/atomic"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
)

// TestPoolReusesAndRedials checks that calls to one address share a connection, and that a
// pool dials again after its connection was closed.
func TestPoolReusesAndRedials(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var conns atomic.Int32
	svc := wire.NewService(1)
	svc.Handle(wire.ControlledShutdown, wire.VersionRange{Min: 0, Max: 0}, func(ctx context.Context, req *wire.Request) (proto.Message, error) {
		var r flusspb.ControlledShutdownRequest
		if err := req.Decode(&r); err != nil {
			return nil, err
		}
		return &flusspb.ControlledShutdownResponse{RemainingLeaderBuckets: []*flusspb.PbTableBucket{
			{TableId: proto.Int64(int64(r.GetTabletServerId())), BucketId: proto.Int32(0)}}}, nil
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	counting := &countingListener{Listener: ln, n: &conns}
	go wire.Serve(ctx, counting, svc, wire.ListenerConfig{Name: "FLUSS"}, slog.New(slog.NewTextHandler(io.Discard, nil)))

	p := NewPool()
	call := func(id int32) int64 {
		t.Helper()
		var resp flusspb.ControlledShutdownResponse
		req := &flusspb.ControlledShutdownRequest{TabletServerId: proto.Int32(id), TabletServerEpoch: proto.Int32(0)}
		if err := p.Call(ctx, ln.Addr().String(), wire.ControlledShutdown, req, &resp); err != nil {
			t.Fatal(err)
		}
		return resp.GetRemainingLeaderBuckets()[0].GetTableId()
	}
	if call(3) != 3 || call(4) != 4 {
		t.Fatal("answers")
	}
	if n := conns.Load(); n != 1 {
		t.Fatalf("%d connections for two calls, want 1", n)
	}
	p.Close()
	if call(5) != 5 || conns.Load() != 2 {
		t.Fatalf("after Close: %d connections, want a second one", conns.Load())
	}
	p.Close()

	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := closed.Addr().String()
	closed.Close()
	var resp flusspb.ControlledShutdownResponse
	if err := p.Call(ctx, addr, wire.ControlledShutdown, &flusspb.ControlledShutdownRequest{TabletServerId: proto.Int32(1), TabletServerEpoch: proto.Int32(0)}, &resp); err == nil {
		t.Fatal("a call to a closed port succeeded")
	}
}

type countingListener struct {
	net.Listener
	n *atomic.Int32
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.n.Add(1)
	}
	return c, err
}
