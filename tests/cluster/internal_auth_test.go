package cluster_test

import (
	"context"
	"crypto/tls"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/fluss"
	"github.com/stromdb/strom/internal/clustertls"
	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
	"github.com/stromdb/strom/tests/clustertest"
)

// serverOnlyCall is a request only a server may send, and the role that serves it.
type serverOnlyCall struct {
	name        string
	coordinator bool // served by the coordinator (else by the tablet server)
	call        func(ctx context.Context, cc *wire.ClientConn) error
}

// serverOnlyCalls: a coordinator's notification, a replica's fetch (follower_server_id set,
// nothing asked for, no wait) and a tablet server's controlled shutdown (of a server id no
// server has, so that a call that is served changes nothing).
var serverOnlyCalls = []serverOnlyCall{
	{"NOTIFY_LEADER_AND_ISR", false, func(ctx context.Context, cc *wire.ClientConn) error {
		return cc.Call(ctx, wire.NotifyLeaderAndIsr, &flusspb.NotifyLeaderAndIsrRequest{CoordinatorEpoch: proto.Int32(0)}, &flusspb.NotifyLeaderAndIsrResponse{})
	}},
	{"replica FETCH_LOG", false, func(ctx context.Context, cc *wire.ClientConn) error {
		return cc.Call(ctx, wire.FetchLog, &flusspb.FetchLogRequest{FollowerServerId: proto.Int32(7), MaxBytes: proto.Int32(1 << 20), MaxWaitMs: proto.Int32(0)}, &flusspb.FetchLogResponse{})
	}},
	{"CONTROLLED_SHUTDOWN", true, func(ctx context.Context, cc *wire.ClientConn) error {
		return cc.Call(ctx, wire.ControlledShutdown, &flusspb.ControlledShutdownRequest{TabletServerId: proto.Int32(99), TabletServerEpoch: proto.Int32(0)}, &flusspb.ControlledShutdownResponse{})
	}},
}

// peerTLS is the internal-listener identity of a process holding secretFile's secret.
func peerTLS(t *testing.T, secretFile string) *tls.Config {
	t.Helper()
	f, err := clustertls.Issue(mustSecret(t, secretFile), t.TempDir(), "probe", nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err := clustertls.LoadPeer(f)
	if err != nil {
		t.Fatal(err)
	}
	return p.ClientConfig()
}

// dialAndCall dials addr with tlsCfg (nil: plaintext) and sends one server-only request,
// returning the dial error or the call's.
func dialAndCall(addr string, tlsCfg *tls.Config, call func(context.Context, *wire.ClientConn) error) (dialErr, callErr error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cc, err := wire.Dial(ctx, addr, wire.ClientConfig{TLS: tlsCfg})
	if err != nil {
		return err, nil
	}
	defer cc.Close()
	return nil, call(ctx, cc)
}

// TestInternalListenerRefusesNonMembers runs a cluster whose internal listeners are reserved
// for the servers (clients on CLIENT listeners; the default secret of clustertest). A process
// without the secret — plaintext, or TLS with another secret's certificate — is refused
// before any request is read on the internal port; on the client port the same requests get
// AUTHORIZATION_EXCEPTION. A process with the secret is served as a server. Replication
// itself runs over the authenticated listener: an acks=all write to an RF=3 table succeeds.
func TestInternalListenerRefusesNonMembers(t *testing.T) {
	c := clustertest.StartCluster(t, stromBin, clustertest.ClusterOptions{ProxyReplication: true,
		Set: map[string]string{"default.replication.factor": "3"}})
	n := c.Nodes[0]
	internalTablet := n.ReplicationProxy.Addr() // forwards bytes to the node's internal listener
	member := peerTLS(t, c.SecretFile)
	stranger := peerTLS(t, writeSecret(t, "some other cluster's secret 0123"))
	for _, sc := range serverOnlyCalls {
		name, call := sc.name, sc.call
		internalAddr, clientAddr := internalTablet, n.TabletAddr
		if sc.coordinator {
			internalAddr, clientAddr = n.InternalCoordinatorAddr, n.CoordinatorAddr
		}
		if dialErr, callErr := dialAndCall(internalAddr, nil, call); dialErr == nil {
			t.Errorf("%s: a plaintext client connected to the servers-only internal listener (call: %v)", name, callErr)
		}
		if dialErr, callErr := dialAndCall(internalAddr, stranger, call); dialErr == nil {
			t.Errorf("%s: a certificate of another secret connected to the internal listener (call: %v)", name, callErr)
		}
		dialErr, callErr := dialAndCall(internalAddr, member, call)
		if dialErr != nil {
			t.Fatalf("%s: a process with the secret cannot connect to the internal listener: %v", name, dialErr)
		}
		if ferr.CodeOf(callErr) == ferr.AuthorizationException {
			t.Errorf("%s: a process with the secret was refused as a server: %v", name, callErr)
		}
		if dialErr, callErr := dialAndCall(clientAddr, nil, call); dialErr != nil || ferr.CodeOf(callErr) != ferr.AuthorizationException {
			t.Errorf("%s on the client listener %s: dial %v, call %v; want AUTHORIZATION_EXCEPTION", name, clientAddr, dialErr, callErr)
		}
	}
	writeReplicatedRow(t, c)
}

// writeReplicatedRow creates an RF=3 log table and appends acks=all rows: the
// acknowledgement waits for the followers in the ISR, which fetch from the leader over the
// internal listener.
func writeReplicatedRow(t *testing.T, c *clustertest.Cluster) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	conn := connect(t, ctx, c)
	table := createTable(t, ctx, conn, "internal_auth", logTable())
	w, err := table.NewAppend().CreateWriter()
	if err != nil {
		t.Fatal(err)
	}
	for id := range int64(100) {
		if _, err := w.Append(ctx, fluss.Row{id, "payload"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(ctx); err != nil {
		t.Fatalf("acks=all appends to an RF=3 table: %v", err)
	}
}
