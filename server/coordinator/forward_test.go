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

// TestStandbyForwarderRun: the node's own DDL (the Kafka listener's) is forwarded as the
// Fluss request it stands for when a standby's write is fenced, the active coordinator's
// refusal is the caller's error, and a forwarded success re-reads the catalog.
func TestStandbyForwarderRun(t *testing.T) {
	ctx := context.Background()
	var got []*flusspb.DropTableRequest
	svc := wire.NewService(1)
	svc.Handle(wire.DropTable, wire.VersionRange{}, func(ctx context.Context, req *wire.Request) (proto.Message, error) {
		var r flusspb.DropTableRequest
		if err := req.Decode(&r); err != nil {
			return nil, err
		}
		got = append(got, &r)
		if r.GetTablePath().GetTableName() == "missing" {
			return nil, ferr.New(ferr.TableNotExist, "no such table")
		}
		return &flusspb.DropTableResponse{}, nil
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sctx, stop := context.WithCancel(ctx)
	t.Cleanup(stop)
	go wire.Serve(sctx, ln, svc, wire.ListenerConfig{Name: "FLUSS"}, quietLog())

	refreshed := 0
	fwd := &standbyForwarder{role: roleOf(&statesCluster{standby: true}), locate: activeAt(ln.Addr().String()), log: quietLog(),
		refresh: func(context.Context) error { refreshed++; return nil }}
	t.Cleanup(fwd.conns.close)
	drop := func(table string) *flusspb.DropTableRequest {
		return &flusspb.DropTableRequest{TablePath: &flusspb.PbTablePath{DatabaseName: proto.String("fluss"), TableName: proto.String(table)}, IgnoreIfNotExists: proto.Bool(false)}
	}
	fenced := func(context.Context) error { return errFenced }

	if err := fwd.run(ctx, wire.DropTable, drop("t"), fenced); err != nil {
		t.Fatalf("forwarded DROP_TABLE: %v", err)
	}
	if len(got) != 1 || got[0].GetTablePath().GetTableName() != "t" {
		t.Fatalf("the active coordinator got %v, want DROP_TABLE of t", got)
	}
	if refreshed != 2 {
		t.Fatalf("catalog re-read %d times, want before the write and after forwarding it", refreshed)
	}
	err = fwd.run(ctx, wire.DropTable, drop("missing"), fenced)
	wantCode(t, err, ferr.TableNotExist, "the active coordinator's refusal")

	// A write that is not fenced is not forwarded.
	ran := false
	if err := fwd.run(ctx, wire.DropTable, drop("local"), func(context.Context) error { ran = true; return nil }); err != nil || !ran {
		t.Fatalf("local write: ran %v, %v", ran, err)
	}
	if len(got) != 2 {
		t.Fatalf("the active coordinator got %d requests, want 2", len(got))
	}
}
