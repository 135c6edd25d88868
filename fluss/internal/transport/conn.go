// Package transport is the Go client's side of the Fluss RPC transport: one multiplexed TCP
// connection per server, with the API_VERSIONS and SASL/PLAIN handshake, request ids matched
// to responses, a bound on response frame size, and contexts honoured by every socket
// operation — dialing, writing a request and waiting for its answer.
//
// Framing (lengths, headers, API keys) comes from internal/wire; this package owns only the
// client's connection state machine, so that the client's limits and timeouts can differ
// from the server's.
package transport

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
)

// ServerType is the role a server reports in its API_VERSIONS answer.
type ServerType int32

// Server roles, as numbered by the protocol's ApiVersionsResponse.server_type.
const (
	ServerUnknown     ServerType = 0 // older servers do not report a role
	ServerCoordinator ServerType = 1
	ServerTablet      ServerType = 2
)

// Response frame types (the byte after the length prefix).
const (
	responseSuccess       byte = 0
	responseError         byte = 1
	responseServerFailure byte = 2 // the server gives up on the whole connection
)

// DefaultMaxResponseSize bounds a response frame when Config.MaxResponseSize is 0: the same
// 100 MiB a Fluss server accepts for a request (netty.server.max-request-size).
const DefaultMaxResponseSize = wire.DefaultMaxFrameSize

// Config configures a connection.
type Config struct {
	SoftwareName, SoftwareVersion string // sent in API_VERSIONS
	// Username and Password are SASL/PLAIN credentials; empty Username: no authentication.
	Username, Password string
	// ExpectServerType, unless ServerUnknown, fails the handshake when the server reports
	// another role.
	ExpectServerType ServerType
	// MaxResponseSize bounds a response frame; a larger one breaks the connection.
	MaxResponseSize int
}

// ErrConnClosed is returned for calls on, or in flight when, a connection closes.
var ErrConnClosed = errors.New("connection closed")

// Conn is a multiplexed client connection: any number of calls may be in flight, answers are
// matched by request id. Requests are written whole, one at a time; a write that fails or is
// interrupted by its context leaves a partial frame on the socket, so it breaks the
// connection (calls in flight fail with ErrConnClosed and the pool dials a new one).
type Conn struct {
	nc       net.Conn
	cfg      Config
	versions map[wire.APIKey]wire.VersionRange
	// ServerType is what the server reported in API_VERSIONS.
	ServerType ServerType

	wsem   chan struct{} // one writer at a time; a channel so that waiting honours ctx
	wbuf   []byte        // guarded by wsem
	nextID int32         // guarded by wsem

	mu      sync.Mutex
	pending map[int32]chan result
	err     error // set once the connection failed
}

type result struct {
	typ  byte
	body []byte
	err  error
}

// Dial connects to addr and performs the handshake, all bounded by ctx.
func Dial(ctx context.Context, addr string, cfg Config) (*Conn, error) {
	if cfg.MaxResponseSize <= 0 {
		cfg.MaxResponseSize = DefaultMaxResponseSize
	}
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", addr, err)
	}
	c := &Conn{nc: nc, cfg: cfg, wsem: make(chan struct{}, 1), pending: make(map[int32]chan result)}
	go c.readLoop()
	if err := c.handshake(ctx); err != nil {
		c.Close()
		return nil, fmt.Errorf("handshake with %s: %w", addr, err)
	}
	return c, nil
}

func (c *Conn) handshake(ctx context.Context) error {
	name, version := c.cfg.SoftwareName, c.cfg.SoftwareVersion
	var resp flusspb.ApiVersionsResponse
	req := &flusspb.ApiVersionsRequest{ClientSoftwareName: &name, ClientSoftwareVersion: &version}
	if err := c.callVersion(ctx, wire.APIVersions, 0, req, &resp); err != nil {
		return err
	}
	c.versions = make(map[wire.APIKey]wire.VersionRange, len(resp.ApiVersions))
	for _, v := range resp.ApiVersions {
		c.versions[wire.APIKey(v.GetApiKey())] = wire.VersionRange{Min: int16(v.GetMinVersion()), Max: int16(v.GetMaxVersion())}
	}
	c.ServerType = ServerType(resp.GetServerType())
	if c.cfg.ExpectServerType != ServerUnknown && c.ServerType != ServerUnknown && c.ServerType != c.cfg.ExpectServerType {
		return fmt.Errorf("server reports type %d, expected %d", c.ServerType, c.cfg.ExpectServerType)
	}
	if c.cfg.Username == "" {
		return nil
	}
	token := append(append(append([]byte{0}, c.cfg.Username...), 0), c.cfg.Password...)
	var ar flusspb.AuthenticateResponse
	return c.Call(ctx, wire.Authenticate, &flusspb.AuthenticateRequest{Protocol: proto.String("PLAIN"), Token: token}, &ar)
}

// version returns the version to use for key (the highest both sides support), or an
// UNSUPPORTED_VERSION error.
func (c *Conn) version(key wire.APIKey) (int16, error) {
	sv, ok := c.versions[key]
	if !ok {
		return 0, ferr.New(ferr.UnsupportedVersion, "the server does not support %s", key)
	}
	cv := wire.VersionsOf(key)
	lo, hi := max(sv.Min, cv.Min), min(sv.Max, cv.Max)
	if lo > hi {
		return 0, ferr.New(ferr.UnsupportedVersion, "the server supports %s versions [%d, %d], this client [%d, %d]", key, sv.Min, sv.Max, cv.Min, cv.Max)
	}
	return hi, nil
}

// Call sends req as API key and decodes the answer into resp. An error response is returned
// as a *ferr.Error; ctx bounds queueing for the socket, the write and the wait.
func (c *Conn) Call(ctx context.Context, key wire.APIKey, req, resp proto.Message) error {
	v, err := c.version(key)
	if err != nil {
		return err
	}
	return c.callVersion(ctx, key, v, req, resp)
}

func (c *Conn) callVersion(ctx context.Context, key wire.APIKey, version int16, req, resp proto.Message) error {
	id, ch, err := c.send(ctx, key, version, req)
	if err != nil {
		return err
	}
	var res result
	select {
	case res = <-ch:
	case <-ctx.Done():
		c.forget(id)
		return ctx.Err()
	}
	if res.err != nil {
		return res.err
	}
	if res.typ != responseSuccess {
		var em flusspb.ErrorResponse
		if err := (proto.UnmarshalOptions{AllowPartial: true}).Unmarshal(res.body, &em); err != nil {
			return fmt.Errorf("undecodable error response to %s: %w", key, err)
		}
		return &ferr.Error{Code: ferr.Code(em.GetErrorCode()), Message: em.GetErrorMessage()}
	}
	if err := (proto.UnmarshalOptions{AllowPartial: true}).Unmarshal(res.body, resp); err != nil {
		return fmt.Errorf("decode %s response: %w", key, err)
	}
	return nil
}

// send writes one request frame and registers its answer channel.
func (c *Conn) send(ctx context.Context, key wire.APIKey, version int16, req proto.Message) (int32, chan result, error) {
	select {
	case c.wsem <- struct{}{}:
	case <-ctx.Done():
		return 0, nil, ctx.Err()
	}
	defer func() { <-c.wsem }()
	id := c.nextID & 0x7fffffff
	c.nextID++
	buf := wire.AppendRequestHeader(c.wbuf[:0], wire.RequestHeader{APIKey: key, APIVersion: version, RequestID: id})
	buf, err := proto.MarshalOptions{}.MarshalAppend(buf, req)
	if err != nil {
		return 0, nil, fmt.Errorf("encode %s request: %w", key, err)
	}
	wire.FinishFrame(buf)
	if cap(buf) <= 1<<20 {
		c.wbuf = buf // keep moderate buffers only: one huge request must not pin its memory
	}
	ch := make(chan result, 1)
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return 0, nil, c.err
	}
	c.pending[id] = ch
	c.mu.Unlock()

	// The write honours ctx: its deadline becomes the socket's, and cancellation moves the
	// deadline to now, which interrupts a write blocked on a full socket buffer.
	deadline, _ := ctx.Deadline()
	_ = c.nc.SetWriteDeadline(deadline)
	interrupted := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		_ = c.nc.SetWriteDeadline(time.Now())
		close(interrupted)
	})
	_, err = c.nc.Write(buf)
	if !stop() {
		<-interrupted // the next writer must not inherit a deadline set after its own
	}
	if err != nil {
		// The socket deadline is the context's (or now, on cancellation), so a timed-out
		// write is the context ending even if its timer has not fired yet.
		cause := ctx.Err()
		if cause == nil && errors.Is(err, os.ErrDeadlineExceeded) {
			cause = context.DeadlineExceeded
		}
		if cause != nil {
			err = fmt.Errorf("%w (write of %s interrupted: %w)", cause, key, err)
		}
		c.fail(err)
		return 0, nil, err
	}
	return id, ch, nil
}

func (c *Conn) forget(id int32) {
	c.mu.Lock()
	delete(c.pending, id)
	c.mu.Unlock()
}

func (c *Conn) readLoop() {
	r := bufio.NewReaderSize(c.nc, 64<<10)
	for {
		payload, err := wire.ReadFrame(r, nil, 1, c.cfg.MaxResponseSize)
		if err != nil {
			c.fail(err)
			return
		}
		hdr, body, err := wire.ParseResponseHeader(payload)
		if err != nil {
			c.fail(err)
			return
		}
		if hdr.Type == responseServerFailure {
			var em flusspb.ErrorResponse
			_ = proto.Unmarshal(body, &em)
			c.fail(&ferr.Error{Code: ferr.Code(em.GetErrorCode()), Message: em.GetErrorMessage()})
			return
		}
		c.mu.Lock()
		ch, ok := c.pending[hdr.RequestID]
		delete(c.pending, hdr.RequestID)
		c.mu.Unlock()
		if ok {
			ch <- result{typ: hdr.Type, body: body}
		}
	}
}

// fail marks the connection broken and fails every pending call.
func (c *Conn) fail(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return
	}
	c.err = fmt.Errorf("%w: %w", ErrConnClosed, err)
	for id, ch := range c.pending {
		ch <- result{err: c.err}
		delete(c.pending, id)
	}
	c.nc.Close()
}

// Err returns the error that broke the connection, or nil while it is usable.
func (c *Conn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Close closes the connection, failing calls in flight.
func (c *Conn) Close() error {
	c.fail(errors.New("closed by client"))
	return nil
}
