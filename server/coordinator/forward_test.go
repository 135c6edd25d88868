package coordinator

import (
	"context"
	"net"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
)

// activeAt locates the active coordinator at a fixed address ("" while none is elected).
type activeAt string

func (a activeAt) ActiveCoordinatorAddr() (string, bool) { return string(a), a != "" }

// serveActive starts an "active coordinator" that answers LIST_DATABASES with one database.
func serveActive(t *testing.T) string {
	t.Helper()
	svc := wire.NewService(1)
	svc.Handle(wire.ListDatabases, wire.VersionRange{}, func(ctx context.Context, req *wire.Request) (proto.Message, error) {
		return &flusspb.ListDatabasesResponse{DatabaseName: []string{"from-active"}}, nil
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	t.Cleanup(stop)
	go wire.Serve(ctx, ln, svc, wire.ListenerConfig{Name: "FLUSS"}, quietLog())
	return ln.Addr().String()
}

func TestStandbyForwarder(t *testing.T) {
	ctx := context.Background()
	addr := serveActive(t)
	failWith := func(err error) wire.Handler {
		return func(ctx context.Context, req *wire.Request) (proto.Message, error) {
			return &flusspb.ListDatabasesResponse{}, err
		}
	}
	req := func() *wire.Request {
		r := request(t, &flusspb.ListDatabasesRequest{})
		r.Header.APIKey = wire.ListDatabases
		return r
	}
	node := &statesCluster{standby: true}
	refreshed := 0
	fwd := &standbyForwarder{role: roleOf(node), locate: activeAt(addr), log: quietLog(),
		refresh: func(context.Context) error { refreshed++; return nil }}
	t.Cleanup(fwd.conns.close)

	// A standby re-reads its catalog, runs the request, and relays the active coordinator's
	// answer when its write is fenced.
	msg, err := fwd.wrap(failWith(errFenced))(ctx, req())
	if err != nil {
		t.Fatal(err)
	}
	raw, ok := msg.(rawResponse)
	if !ok {
		t.Fatalf("answer %T, want the relayed response", msg)
	}
	var relayed flusspb.ListDatabasesResponse
	if err := proto.Unmarshal(raw.body, &relayed); err != nil || relayed.GetDatabaseName()[0] != "from-active" {
		t.Fatalf("relayed %v (%v), want the active coordinator's answer", &relayed, err)
	}
	if refreshed != 1 {
		t.Fatalf("catalog re-read %d times, want once", refreshed)
	}
	// A replication factor the standby's view of the servers refuses is the active one's call.
	if msg, err := fwd.wrap(failWith(ferr.New(ferr.InvalidReplicationFactor, "too few")))(ctx, req()); err != nil || msg.(rawResponse).body == nil {
		t.Fatalf("standby's INVALID_REPLICATION_FACTOR: %v, %v; want forwarded", msg, err)
	}
	// Other answers are the standby's own.
	_, err = fwd.wrap(failWith(ferr.New(ferr.TableNotExist, "no")))(ctx, req())
	wantCode(t, err, ferr.TableNotExist, "a standby's own error")

	// The active coordinator's INVALID_REPLICATION_FACTOR is final, and with no active
	// coordinator elected the client gets NOT_COORDINATOR_LEADER.
	node.standby = false
	_, err = fwd.wrap(failWith(ferr.New(ferr.InvalidReplicationFactor, "too few")))(ctx, req())
	wantCode(t, err, ferr.InvalidReplicationFactor, "the active coordinator's INVALID_REPLICATION_FACTOR")
	fwd.locate = activeAt("")
	_, err = fwd.wrap(failWith(errFenced))(ctx, req())
	wantCode(t, err, ferr.NotCoordinatorLeaderException, "no active coordinator")

	// The single node runs every request as is.
	single := &standbyForwarder{}
	_, err = single.wrap(failWith(errFenced))(ctx, req())
	wantCode(t, err, ferr.NotCoordinatorLeaderException, "the single node")
}
