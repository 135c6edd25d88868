package fluss

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/wire"
)

// clientVersion is sent as client_software_version in API_VERSIONS.
const clientVersion = "0.1.0"

// Connection is a connection to a Fluss cluster. It is safe for concurrent use. Close it to
// release its network connections and stop every writer and scanner created from it.
type Connection struct {
	cfg  Config
	wcfg wire.ClientConfig
	meta *metadataCache

	mu      sync.Mutex
	conns   map[string]*poolEntry // by server uid (cs-N, ts-N, unknown-host:port)
	closers map[closer]struct{}   // writers and scanners to close with the connection
	closed  bool
	done    chan struct{} // closed by Close
	// life is cancelled by Close: it aborts dials in progress, so Close does not wait out
	// a server that accepted the connection but never answers its handshake.
	life    context.Context
	endLife context.CancelFunc
}

// closer is implemented by writers and scanners registered with the connection.
type closer interface{ closeFromConn() }

// poolEntry is one pooled server connection; ready is closed once dialing finished.
type poolEntry struct {
	ready chan struct{}
	conn  *wire.ClientConn
	err   error
}

// Connect connects to the cluster named by cfg.BootstrapServers: it contacts the first
// bootstrap server that answers and loads the cluster's server list.
func Connect(ctx context.Context, cfg Config) (*Connection, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	c := &Connection{
		cfg: cfg,
		wcfg: wire.ClientConfig{
			SoftwareName: "fluss-go", SoftwareVersion: clientVersion,
			MaxResponseSize: cfg.MaxResponseSize,
		},
		conns:   make(map[string]*poolEntry),
		closers: make(map[closer]struct{}),
		done:    make(chan struct{}),
	}
	c.life, c.endLife = context.WithCancel(context.Background())
	if cfg.sasl() {
		c.wcfg.Username, c.wcfg.Password = cfg.SASLUsername, cfg.SASLPassword
	}
	c.meta = newMetadataCache(c)
	if err := c.meta.bootstrap(ctx); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// Config returns the connection's effective configuration (defaults filled in).
func (c *Connection) Config() Config { return c.cfg }

// Close closes every writer and scanner created from the connection (pending writes fail
// with ErrClosed; call Flush first to deliver them) and then the network connections. It
// waits for the connection's goroutines to finish.
func (c *Connection) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	close(c.done)
	c.endLife()
	closers := make([]closer, 0, len(c.closers))
	for cl := range c.closers {
		closers = append(closers, cl)
	}
	c.mu.Unlock()
	for _, cl := range closers {
		cl.closeFromConn()
	}
	c.mu.Lock()
	entries := c.conns
	c.conns = map[string]*poolEntry{}
	c.mu.Unlock()
	for _, e := range entries {
		<-e.ready
		if e.conn != nil {
			e.conn.Close()
		}
	}
	return nil
}

func (c *Connection) register(cl closer) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return ErrClosed
	}
	c.closers[cl] = struct{}{}
	return nil
}

func (c *Connection) unregister(cl closer) {
	c.mu.Lock()
	delete(c.closers, cl)
	c.mu.Unlock()
}

// Admin returns the administrative client. It makes no request by itself.
func (c *Connection) Admin() *Admin { return &Admin{conn: c} }

// Table loads the metadata of the table at path (always refreshed from the cluster) and
// returns a handle for reading and writing it.
func (c *Connection) Table(ctx context.Context, path TablePath) (*Table, error) {
	if err := c.meta.refreshTables(ctx, []TablePath{path}); err != nil {
		// Apache Fluss answers a metadata request for a missing table with
		// UNKNOWN_SERVER_ERROR; the coordinator's GET_TABLE_INFO names the cause.
		if CodeOf(err) == ErrUnknownServerError {
			if _, infoErr := c.Admin().GetTableInfo(ctx, path); infoErr != nil && CodeOf(infoErr) != ErrUnknownServerError {
				return nil, infoErr
			}
		}
		return nil, err
	}
	info, ok := c.meta.tableInfo(path)
	if !ok {
		return nil, newError(ErrTableNotExist, "table %s does not exist", path)
	}
	return newTable(c, info)
}

// serverConn returns the pooled connection to node, dialing it (API_VERSIONS and SASL
// handshake) if needed. Broken connections are replaced. The dial runs on its own, bounded by
// ConnectTimeout and shared by every caller that needs the node meanwhile; each caller waits
// for it only as long as its own ctx allows, so a server that accepts connections but never
// answers (a paused process) costs a caller no more than its deadline.
func (c *Connection) serverConn(ctx context.Context, uid, addr string, serverType int32) (*wire.ClientConn, error) {
	for {
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return nil, ErrClosed
		}
		e, ok := c.conns[uid]
		if !ok {
			e = &poolEntry{ready: make(chan struct{})}
			c.conns[uid] = e
			go c.dial(e, uid, addr, serverType)
		}
		c.mu.Unlock()
		select {
		case <-e.ready:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if e.err != nil {
			return nil, e.err
		}
		if e.conn.Err() == nil {
			return e.conn, nil
		}
		// Broken: drop it (unless someone already replaced it) and dial again.
		c.mu.Lock()
		if c.conns[uid] == e {
			delete(c.conns, uid)
		}
		c.mu.Unlock()
		e.conn.Close()
	}
}

// dial connects e to addr and closes e.ready; a failed dial leaves the pool, so the next
// caller dials again.
func (c *Connection) dial(e *poolEntry, uid, addr string, serverType int32) {
	dctx, cancel := context.WithTimeout(c.life, c.cfg.ConnectTimeout)
	defer cancel()
	wc := c.wcfg
	wc.ExpectServerType = serverType
	e.conn, e.err = wire.Dial(dctx, addr, wc)
	if e.err != nil {
		c.mu.Lock()
		if c.conns[uid] == e {
			delete(c.conns, uid)
		}
		c.mu.Unlock()
		e.err = networkError(e.err)
	}
	close(e.ready)
}

// call sends one request to node and waits for the answer, bounded by RequestTimeout.
// Transport failures are returned as NETWORK_EXCEPTION errors (retriable).
func (c *Connection) call(ctx context.Context, node ServerNode, key wire.APIKey, req, resp proto.Message) error {
	var st int32 // unknown role: accept any
	switch node.Type {
	case CoordinatorServer:
		st = wire.ServerCoordinator
	case TabletServer:
		st = wire.ServerTablet
	}
	uid := node.uid()
	if node.ID < 0 {
		uid = "unknown-" + node.Addr()
	}
	cc, err := c.serverConn(ctx, uid, node.Addr(), st)
	if err != nil {
		return fmt.Errorf("%w: %w", errNotSent, err)
	}
	ctx, callerDeadline, cancel := c.bounded(ctx)
	defer cancel()
	err = cc.Call(ctx, key, req, resp)
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil && !errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		if !callerDeadline {
			// The server did not answer within RequestTimeout: it may be stopped or cut
			// off while its socket stays open. Close the connection, as the Java client
			// does, so the calls waiting on it fail now and the next call dials afresh.
			cc.Close()
		}
		return fmt.Errorf("%s to %s: %w", key, node.Addr(), newError(ErrRequestTimeOut, "%v", err))
	case ctx.Err() != nil:
		return err
	}
	var ie *ferr.Error
	if errors.As(err, &ie) && !errors.Is(err, wire.ErrConnClosed) {
		// An error response: the server's code and message, as the public type.
		return &Error{Code: ErrorCode(ie.Code), Message: ie.Message}
	}
	return fmt.Errorf("%s to %s: %w", key, node.Addr(), networkError(err))
}

// networkError marks a transport failure with NETWORK_EXCEPTION, keeping the cause.
func networkError(err error) error {
	if err == nil || errors.Is(err, ErrClosed) {
		return err
	}
	var fe *Error
	if errors.As(err, &fe) {
		return err
	}
	var ie *ferr.Error
	if errors.As(err, &ie) {
		// A handshake refused by the server (e.g. SASL): keep its code.
		return fmt.Errorf("%w: %w", &Error{Code: ErrorCode(ie.Code), Message: ie.Message}, err)
	}
	return fmt.Errorf("%w: %w", newError(ErrNetworkException, "network error"), err)
}

// bounded returns ctx bounded by RequestTimeout when it has no deadline of its own, and
// whether it had one.
func (c *Connection) bounded(ctx context.Context) (_ context.Context, callerDeadline bool, cancel context.CancelFunc) {
	if _, has := ctx.Deadline(); has {
		return ctx, true, func() {}
	}
	ctx, cancel = context.WithTimeout(ctx, c.cfg.RequestTimeout)
	return ctx, false, cancel
}

// errNotSent marks a call that failed before its request was written (the server could not
// be reached), so resending it cannot apply it twice.
var errNotSent = errors.New("request not sent")

// callCoordinator sends an admin request to the active coordinator. When the coordinator it
// knows cannot be reached, or answers that it is not the active one (a standby, after a
// failover), it forgets it, finds the active coordinator through the metadata of any server
// it can reach, and tries again until ctx (or RequestTimeout) ends. A request that reached a
// coordinator whose connection then broke is not resent: it may have been applied.
func (c *Connection) callCoordinator(ctx context.Context, key wire.APIKey, req, resp proto.Message) error {
	ctx, _, cancel := c.bounded(ctx)
	defer cancel()
	for attempt := 0; ; attempt++ {
		node, err := c.meta.coordinatorNode(ctx)
		if err == nil {
			err = c.call(ctx, node, key, req, resp)
			if err == nil || !coordinatorMoved(err) {
				return err
			}
			c.meta.forgetCoordinator(node)
		}
		if ctx.Err() != nil {
			return err
		}
		if berr := c.backoff(ctx, attempt); berr != nil {
			return err
		}
	}
}

// retryRouting runs call, which sends requests to bucket leaders from fresh metadata, again
// while it fails with a routing error (the leader moved or is being elected, a server is
// unreachable), with backoff, until ctx (or RequestTimeout) ends. Such calls only read, so
// resending them is safe.
func (c *Connection) retryRouting(ctx context.Context, call func() error) error {
	ctx, _, cancel := c.bounded(ctx)
	defer cancel()
	for attempt := 0; ; attempt++ {
		err := call()
		if err == nil || !isRoutingError(CodeOf(err)) || ctx.Err() != nil {
			return err
		}
		if berr := c.backoff(ctx, attempt); berr != nil {
			return err
		}
	}
}

// coordinatorMoved reports whether an admin call failed because the coordinator it was sent
// to is not (or no longer) the active one, so that it is safe and useful to resend it to the
// active coordinator.
func coordinatorMoved(err error) bool {
	switch CodeOf(err) {
	case ErrNotCoordinatorLeader, ErrInvalidCoordinator:
		return true
	}
	return errors.Is(err, errNotSent) && CodeOf(err) == ErrNetworkException
}

// callAnyTablet sends a request to a random tablet server.
func (c *Connection) callAnyTablet(ctx context.Context, key wire.APIKey, req, resp proto.Message) error {
	node, err := c.meta.anyTablet(ctx)
	if err != nil {
		return err
	}
	return c.call(ctx, node, key, req, resp)
}

// bootstrapAddrs splits BootstrapServers.
func (c *Connection) bootstrapAddrs() []string {
	var out []string
	for _, a := range strings.Split(c.cfg.BootstrapServers, ",") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}

// backoff sleeps for the attempt's retry delay (100ms doubling up to 1s, with jitter) or
// until ctx or the connection ends.
func (c *Connection) backoff(ctx context.Context, attempt int) error {
	d := 100 * time.Millisecond << min(attempt, 4)
	d = min(d, time.Second)
	d = d*4/5 + time.Duration(rand.Int64N(int64(d)*2/5+1))
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-c.done:
		return ErrClosed
	}
}
