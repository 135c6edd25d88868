package coordinator

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/server/internalconn"
)

// Standby coordinators and admin requests (docs/cluster.md, "Standby coordinators").
//
// Fluss 0.9.1 answers every request to a standby coordinator with NOT_COORDINATOR_LEADER
// (FlussRequestHandler), and expects clients to look up the leader again. The Rust client
// (fluss-rust's FlussAdmin) sends admin requests to the coordinator of its cached metadata
// and does not retry on that error, so after a failover its DDL would fail until it happens
// to refresh its metadata. Strom therefore forwards instead: a standby runs the request
// (decoding, authorization against its own ACL cache, validation against its catalog, which
// follows etcd and is re-read first), and when the write reaches its fenced store and fails with
// NOT_COORDINATOR_LEADER it sends the request as received to the active coordinator's
// internal listener and relays the answer. With no active coordinator elected (a cluster just
// started, or an election under way) it waits for one, re-running the request (its write
// failed at the fence, so nothing of it was applied) until this node wins or another's
// address is known, for at most electionWait; only then does the client get
// NOT_COORDINATOR_LEADER, as from Fluss.

// forwarder is the part of Cluster that locates the active coordinator.
type forwarder interface {
	// ActiveCoordinatorAddr returns HOST:PORT of the active coordinator's internal listener.
	ActiveCoordinatorAddr() (string, bool)
}

// rawResponse is a response relayed as the active coordinator encoded it.
type rawResponse struct {
	*emptypb.Empty
	body []byte
}

func (r rawResponse) AppendBody(dst []byte) ([]byte, error) { return append(dst, r.body...), nil }

// standbyForwarder wraps the admin APIs of a cluster's coordinator so that a standby
// forwards what it cannot write. Its zero value (the single node) forwards nothing.
type standbyForwarder struct {
	role    role
	locate  forwarder                       // nil: the control plane cannot locate the active coordinator
	refresh func(ctx context.Context) error // re-reads a standby's catalog (Catalog.Reload)
	log     *slog.Logger
	conns   forwardConns
}

// wrap wraps an admin handler.
func (f *standbyForwarder) wrap(h wire.Handler) wire.Handler {
	return func(ctx context.Context, req *wire.Request) (proto.Message, error) {
		if !f.role.clustered() {
			return h(ctx, req)
		}
		body := slices.Clone(req.Body)
		if f.role.standby() {
			// Validate against the catalog as etcd has it now, not as the watch last
			// brought it: a request following a DDL through the active coordinator must
			// see it.
			if err := f.refresh(ctx); err != nil {
				f.log.Warn("cannot reload the catalog", "err", err)
			}
		}
		standby := f.role.standby()
		msg, err := h(ctx, req)
		switch code := ferr.CodeOf(err); {
		case code == ferr.NotCoordinatorLeaderException:
		case code == ferr.InvalidReplicationFactor && standby:
			// Checked against this node's view of the live servers, which may trail the
			// active coordinator's (just after a start, say): the active one decides.
		default:
			return msg, err
		}
		if f.locate == nil {
			return msg, err
		}
		addr, ok := f.locate.ActiveCoordinatorAddr()
		if !ok {
			if msg, addr, ok, err = f.awaitElection(ctx, h, req); !ok {
				return msg, err
			}
		}
		out, ferr := f.conns.call(ctx, addr, req.Header.APIKey, req.Header.APIVersion, body)
		if ferr != nil {
			return nil, ferr
		}
		return rawResponse{Empty: &emptypb.Empty{}, body: out}, nil
	}
}

// electionWait bounds how long a request waits for a coordinator to be elected: about one
// coordinator.lease-ttl (5 s), the longest an election takes when the active coordinator's
// process is gone.
const electionWait = 5 * time.Second

// awaitElection re-runs h every electionPoll while no active coordinator is known, until h
// succeeds (or fails otherwise: this node was elected, or the request is wrong), another
// node's address is known (ok: forward to addr), ctx ends or electionWait passes.
func (f *standbyForwarder) awaitElection(ctx context.Context, h wire.Handler, req *wire.Request) (msg proto.Message, addr string, ok bool, err error) {
	const electionPoll = 20 * time.Millisecond
	deadline := time.Now().Add(electionWait)
	for {
		select {
		case <-ctx.Done():
			return nil, "", false, ferr.New(ferr.NotCoordinatorLeaderException, "This coordinator server is not the current leader, and no coordinator was elected before the request ended.")
		case <-time.After(electionPoll):
		}
		if addr, ok := f.locate.ActiveCoordinatorAddr(); ok {
			return nil, addr, true, nil
		}
		msg, err = h(ctx, req)
		if ferr.CodeOf(err) != ferr.NotCoordinatorLeaderException || !time.Now().Before(deadline) {
			return msg, "", false, err
		}
	}
}

// forwardConns keeps one connection to the active coordinator.
type forwardConns struct {
	dial internalconn.Func // nil: plaintext
	mu   sync.Mutex
	addr string
	cc   *wire.ClientConn
}

func (f *forwardConns) call(ctx context.Context, addr string, key wire.APIKey, version int16, body []byte) ([]byte, error) {
	f.mu.Lock()
	cc := f.cc
	if cc == nil || f.addr != addr || cc.Err() != nil {
		if cc != nil {
			cc.Close()
		}
		var err error
		dial := f.dial
		if dial == nil {
			dial = (*internalconn.Dialer)(nil).Func()
		}
		cc, err = dial(ctx, addr, "strom-forward")
		if err != nil {
			f.cc = nil
			f.mu.Unlock()
			return nil, ferr.New(ferr.NotCoordinatorLeaderException, "This coordinator server is not the current leader, and the active one at %s cannot be reached: %v", addr, err)
		}
		f.cc, f.addr = cc, addr
	}
	f.mu.Unlock()
	return cc.CallRaw(ctx, key, version, body)
}

func (f *forwardConns) close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.cc != nil {
		f.cc.Close()
		f.cc = nil
	}
}

// run runs a DDL the node itself issues (the Kafka listener's CreateTopics and DeleteTopics)
// as wrap runs an admin request: local is the write, and on a standby whose write is fenced
// msg goes to the active coordinator as the request of API key. The caller has authorised
// it; the active coordinator takes it on its internal listener, as a forwarded admin
// request. After a forwarded write the catalog is re-read, so that the caller sees the
// change it made, as it would after a local one.
func (f *standbyForwarder) run(ctx context.Context, key wire.APIKey, msg proto.Message, local func(ctx context.Context) error) error {
	body, err := proto.Marshal(msg)
	if err != nil {
		return fmt.Errorf("encode %s request: %w", key, err)
	}
	req := &wire.Request{Header: wire.RequestHeader{APIKey: key}, Body: body}
	out, err := f.wrap(func(ctx context.Context, _ *wire.Request) (proto.Message, error) {
		return nil, local(ctx)
	})(ctx, req)
	if err != nil {
		return err
	}
	if _, forwarded := out.(rawResponse); forwarded {
		if err := f.refresh(ctx); err != nil {
			f.log.Warn("cannot reload the catalog after a forwarded DDL", "err", err)
		}
	}
	return nil
}
