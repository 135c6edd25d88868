package wire

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/proto/flusspb"
)

// Server roles, as numbered by ApiVersionsResponse.server_type. Older servers report none (0).
const (
	ServerCoordinator int32 = 1
	ServerTablet      int32 = 2
)

// ClientConfig configures a client connection.
type ClientConfig struct {
	SoftwareName    string // sent in API_VERSIONS; default "strom-go"
	SoftwareVersion string // default "0.1.0"
	// SASL PLAIN credentials; empty Username means no authentication.
	Username, Password string
	// ExpectServerType, when non-zero, makes the handshake fail if the server reports
	// another role (ServerCoordinator or ServerTablet).
	ExpectServerType int32
	// MaxResponseSize bounds a response frame; a larger one breaks the connection instead of
	// being allocated. 0 means DefaultMaxFrameSize, the bound a Fluss server puts on requests.
	MaxResponseSize int
	// TLS, when set, runs the connection over TLS with it: a server dialing another's
	// internal listener presents the cluster identity (clustertls.Peer.ClientConfig).
	TLS *tls.Config
}

// ErrConnClosed is returned for calls on, or in flight when, a connection closes.
var ErrConnClosed = errors.New("wire: connection closed")

// maxKeptWriteBuffer is the largest request buffer a connection keeps for reuse: one huge
// request must not pin its memory for the connection's lifetime.
const maxKeptWriteBuffer = 1 << 20

// ClientConn is a multiplexed client connection: many calls may be in flight at once and
// responses are matched by request id. Every socket operation honours the call's context:
// dialing, queueing for the socket, writing the request and waiting for the answer.
// Requests are written whole, one at a time; a write that fails or is interrupted by its
// context leaves a partial frame on the socket, so it breaks the connection (calls in
// flight fail with ErrConnClosed).
type ClientConn struct {
	nc       net.Conn
	maxResp  int
	versions map[APIKey]VersionRange
	// ServerType is what the server reported in API_VERSIONS (0 if absent).
	ServerType int32

	// Requests are queued whole in out and written by one caller at a time, which writes
	// everything queued until out is empty: calls made while a write is under way share the
	// next write system call instead of each making one (see send).
	qmu     sync.Mutex
	out     []byte // frames queued and not yet taken by the writer; guarded by qmu
	spare   []byte // the writer's buffer, swapped with out; guarded by qmu while not writing
	writing bool   // a caller is writing; guarded by qmu
	nextID  int32  // guarded by qmu
	// wdeadline is the write deadline last set on the socket; touched only by the writer.
	wdeadline time.Time

	mu      sync.Mutex
	pending map[int32]chan clientResult
	err     error // set once the connection failed
}

type clientResult struct {
	hdr  ResponseHeader
	body []byte
	// pooled, when set, is the pooled buffer body lies in; the receiver of the result puts it
	// back once nothing refers to body (framepool.go).
	pooled *[]byte
	err    error
}

// release puts the result's buffer back into its pool: body must not be read afterwards.
func (r *clientResult) release() {
	if r.pooled != nil {
		putFrame(r.pooled)
		r.pooled, r.body = nil, nil
	}
}

// Dial connects to addr and performs the API_VERSIONS (and, if configured, SASL) handshake,
// all bounded by ctx.
func Dial(ctx context.Context, addr string, cfg ClientConfig) (*ClientConn, error) {
	if cfg.MaxResponseSize <= 0 {
		cfg.MaxResponseSize = DefaultMaxFrameSize
	}
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", addr, err)
	}
	if cfg.TLS != nil {
		tc, err := dialTLS(ctx, nc, cfg.TLS)
		if err != nil {
			nc.Close()
			return nil, fmt.Errorf("TLS handshake with %s: %w", addr, err)
		}
		nc = tc
	}
	c := &ClientConn{
		nc: nc, maxResp: cfg.MaxResponseSize,
		pending: make(map[int32]chan clientResult),
	}
	go c.readLoop()
	if err := c.handshake(ctx, cfg); err != nil {
		c.Close()
		return nil, fmt.Errorf("handshake with %s: %w", addr, err)
	}
	return c, nil
}

func (c *ClientConn) handshake(ctx context.Context, cfg ClientConfig) error {
	name, version := cfg.SoftwareName, cfg.SoftwareVersion
	if name == "" {
		name = "strom-go"
	}
	if version == "" {
		version = "0.1.0"
	}
	var resp flusspb.ApiVersionsResponse
	req := &flusspb.ApiVersionsRequest{ClientSoftwareName: &name, ClientSoftwareVersion: &version}
	if err := c.callVersion(ctx, APIVersions, 0, req, &resp); err != nil {
		return err
	}
	c.versions = make(map[APIKey]VersionRange, len(resp.ApiVersions))
	for _, v := range resp.ApiVersions {
		c.versions[APIKey(v.GetApiKey())] = VersionRange{int16(v.GetMinVersion()), int16(v.GetMaxVersion())}
	}
	c.ServerType = resp.GetServerType()
	if cfg.ExpectServerType != 0 && c.ServerType != 0 && c.ServerType != cfg.ExpectServerType {
		return fmt.Errorf("server reports type %d, expected %d", c.ServerType, cfg.ExpectServerType)
	}
	if cfg.Username == "" {
		return nil
	}
	token := append(append(append([]byte{0}, cfg.Username...), 0), cfg.Password...)
	var ar flusspb.AuthenticateResponse
	return c.Call(ctx, Authenticate, &flusspb.AuthenticateRequest{Protocol: proto.String("PLAIN"), Token: token}, &ar)
}

// clientVersions is the range of versions of key this client speaks; keys not listed have only
// version 0. The later versions differ only in what the server expects of the client
// (upstream fluss-rpc ApiKeys.java): PUT_KV, LOOKUP and PREFIX_LOOKUP v1 encode the key with
// the compacted key encoder when the bucket key differs from the primary key, which is what
// package row does; PUT_KV v2 understands STORAGE_BACKPRESSURE_EXCEPTION (72), which package
// fluss retries.
func clientVersions(key APIKey) VersionRange {
	switch key {
	case PutKv:
		return VersionRange{0, 2}
	case Lookup, PrefixLookup:
		return VersionRange{0, 1}
	}
	return VersionRange{0, 0}
}

// Version returns the version to use for key (the highest both sides support), or an
// UNSUPPORTED_VERSION error if the server does not serve key.
func (c *ClientConn) Version(key APIKey) (int16, error) {
	sv, ok := c.versions[key]
	if !ok {
		return 0, ferr.New(ferr.UnsupportedVersion, "the server does not support %s", key)
	}
	cv := clientVersions(key)
	lo, hi := max(sv.Min, cv.Min), min(sv.Max, cv.Max)
	if lo > hi {
		return 0, ferr.New(ferr.UnsupportedVersion, "the server supports %s versions [%d, %d], this client [%d, %d]", key, sv.Min, sv.Max, cv.Min, cv.Max)
	}
	return hi, nil
}

// Call sends req as API key and decodes the response into resp. An ERROR_RESPONSE is returned
// as a *ferr.Error; ctx bounds queueing for the socket, the write and the wait.
func (c *ClientConn) Call(ctx context.Context, key APIKey, req, resp proto.Message) error {
	v, err := c.Version(key)
	if err != nil {
		return err
	}
	return c.callVersion(ctx, key, v, req, resp)
}

// AliasingDecoder is a response message that decodes its body itself and may keep references
// into it (fetchresp.Aligned: FETCH_LOG records): Call hands it the body instead of calling
// proto.Unmarshal. If it reports retained, the body's buffer is never reused; otherwise it is
// reused once DecodeAliasing returns, which must then have copied whatever it keeps.
type AliasingDecoder interface {
	proto.Message
	DecodeAliasing(body []byte) (retained bool, err error)
}

// CallDecode sends req as API key and hands the response body to decode. body is valid only
// until decode returns: its buffer is reused afterwards, so decode must copy whatever it
// keeps. decode's error is returned as it is.
func (c *ClientConn) CallDecode(ctx context.Context, key APIKey, req proto.Message, decode func(body []byte) error) error {
	v, err := c.Version(key)
	if err != nil {
		return err
	}
	ch, id, err := c.send(ctx, key, v, func(dst []byte) ([]byte, error) {
		return proto.MarshalOptions{}.MarshalAppend(dst, req)
	})
	if err != nil {
		return err
	}
	res, err := c.wait(ctx, id, ch)
	if err != nil {
		return err
	}
	defer res.release()
	return decode(res.body)
}

// CallRaw is Call with an already encoded request body; it returns the raw response body,
// which the caller owns.
func (c *ClientConn) CallRaw(ctx context.Context, key APIKey, version int16, body []byte) ([]byte, error) {
	ch, id, err := c.send(ctx, key, version, func(dst []byte) ([]byte, error) { return append(dst, body...), nil })
	if err != nil {
		return nil, err
	}
	res, err := c.wait(ctx, id, ch)
	if err != nil {
		return nil, err
	}
	return res.body, nil
}

func (c *ClientConn) callVersion(ctx context.Context, key APIKey, version int16, req, resp proto.Message) error {
	ch, id, err := c.send(ctx, key, version, func(dst []byte) ([]byte, error) {
		return proto.MarshalOptions{}.MarshalAppend(dst, req)
	})
	if err != nil {
		return err
	}
	res, err := c.wait(ctx, id, ch)
	if err != nil {
		return err
	}
	if ad, ok := resp.(AliasingDecoder); ok {
		// A retained body's buffer is left to the collector, never reused.
		retained, err := ad.DecodeAliasing(res.body)
		if !retained {
			res.release()
		}
		if err != nil {
			return fmt.Errorf("decode %s response: %w", key, err)
		}
		return nil
	}
	// proto.Unmarshal copies every field it keeps, so the buffer can be reused after it.
	defer res.release()
	if err := (proto.UnmarshalOptions{AllowPartial: true}).Unmarshal(res.body, resp); err != nil {
		return fmt.Errorf("decode %s response: %w", key, err)
	}
	return nil
}

// send queues one request frame, registers its answer channel and, unless another caller is
// writing (that caller then writes this frame too, in its next write), writes the queue.
//
// The writer's ctx bounds its writes: its deadline becomes the socket's and cancellation
// interrupts a blocked write. A write that fails or is interrupted leaves a partial frame on
// the socket, so it breaks the connection, failing every call in flight, including those
// whose frames it carried. A caller whose frame another caller writes is bounded by its own
// ctx while it waits for the answer (wait).
func (c *ClientConn) send(ctx context.Context, key APIKey, version int16, body func([]byte) ([]byte, error)) (chan clientResult, int32, error) {
	if err := ctx.Err(); err != nil {
		return nil, 0, err
	}
	ch := make(chan clientResult, 1)
	c.qmu.Lock()
	id := c.nextID & 0x7fffffff
	start := len(c.out)
	buf := AppendRequestHeader(c.out, RequestHeader{APIKey: key, APIVersion: version, RequestID: id})
	buf, err := body(buf)
	if err != nil {
		c.out = c.out[:start]
		c.qmu.Unlock()
		return nil, 0, fmt.Errorf("encode %s request: %w", key, err)
	}
	FinishFrame(buf[start:])
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		c.out = buf[:start]
		c.qmu.Unlock()
		return nil, 0, c.err
	}
	c.pending[id] = ch
	c.mu.Unlock()
	c.nextID++
	c.out = buf
	if c.writing {
		c.qmu.Unlock()
		return ch, id, nil
	}
	c.writing = true
	c.qmu.Unlock()
	if c.inFlight() > 1 {
		// Other calls on this connection are in flight; their answers often arrive in one
		// read and wake their callers together, who then send again. Letting those that are
		// ready run first puts their frames into this write.
		runtime.Gosched()
	}
	if err := c.writeQueued(ctx, key); err != nil {
		return nil, 0, err
	}
	return ch, id, nil
}

// inFlight returns the number of calls awaiting their answers.
func (c *ClientConn) inFlight() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.pending)
}

// writeQueued writes the queued frames until none are left; the caller set c.writing.
func (c *ClientConn) writeQueued(ctx context.Context, key APIKey) error {
	for {
		c.qmu.Lock()
		if len(c.out) == 0 || c.err != nil {
			c.writing = false
			c.out = c.out[:0]
			c.qmu.Unlock()
			return nil
		}
		buf := c.out
		c.out = c.spare[:0]
		c.spare = nil
		c.qmu.Unlock()

		err := c.write(ctx, key, buf)

		c.qmu.Lock()
		if cap(buf) <= maxKeptWriteBuffer {
			c.spare = buf[:0]
		}
		if err != nil {
			c.writing = false
			c.qmu.Unlock()
			c.fail(err)
			return err
		}
		c.qmu.Unlock()
	}
}

// write writes buf to the socket within ctx.
func (c *ClientConn) write(ctx context.Context, key APIKey, buf []byte) error {
	// The write honours ctx: its deadline becomes the socket's, and cancellation moves the
	// deadline to now, which interrupts a write blocked on a full socket buffer.
	deadline, _ := ctx.Deadline()
	if !deadline.Equal(c.wdeadline) {
		_ = c.nc.SetWriteDeadline(deadline)
		c.wdeadline = deadline
	}
	var stop func() bool
	var interrupted chan struct{}
	if ctx.Done() != nil {
		interrupted = make(chan struct{})
		stop = context.AfterFunc(ctx, func() {
			_ = c.nc.SetWriteDeadline(time.Now())
			close(interrupted)
		})
	}
	_, err := c.nc.Write(buf)
	if stop != nil && !stop() {
		<-interrupted // the next writer must not inherit a deadline set after its own
		c.wdeadline = time.Time{}
		_ = c.nc.SetWriteDeadline(time.Time{})
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
	}
	return err
}

func (c *ClientConn) forget(id int32) {
	c.mu.Lock()
	delete(c.pending, id)
	c.mu.Unlock()
}

func (c *ClientConn) wait(ctx context.Context, id int32, ch chan clientResult) (clientResult, error) {
	select {
	case res := <-ch:
		if res.err != nil {
			return res, res.err
		}
		if res.hdr.Type != responseSuccess {
			var em flusspb.ErrorResponse
			err := (proto.UnmarshalOptions{AllowPartial: true}).Unmarshal(res.body, &em)
			res.release()
			if err != nil {
				return res, fmt.Errorf("undecodable error response: %w", err)
			}
			return res, &ferr.Error{Code: ferr.Code(em.GetErrorCode()), Message: em.GetErrorMessage()}
		}
		return res, nil
	case <-ctx.Done():
		c.forget(id)
		return clientResult{}, ctx.Err()
	}
}

func (c *ClientConn) readLoop() {
	r := bufio.NewReaderSize(c.nc, 64<<10)
	for {
		payload, pooled, err := readResponseFrame(r, c.maxResp)
		if err != nil {
			c.fail(err)
			return
		}
		res := clientResult{pooled: pooled}
		hdr, body, err := ParseResponseHeader(payload)
		if err != nil {
			res.release()
			c.fail(err)
			return
		}
		if hdr.Type == responseServerFailure {
			var em flusspb.ErrorResponse
			_ = proto.Unmarshal(body, &em)
			res.release()
			c.fail(&ferr.Error{Code: ferr.Code(em.GetErrorCode()), Message: em.GetErrorMessage()})
			return
		}
		c.mu.Lock()
		ch, ok := c.pending[hdr.RequestID]
		delete(c.pending, hdr.RequestID)
		c.mu.Unlock()
		res.hdr, res.body = hdr, body
		if ok {
			ch <- res
		} else {
			res.release() // the caller gave up waiting
		}
	}
}

// fail marks the connection broken and fails every pending call.
func (c *ClientConn) fail(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return
	}
	c.err = fmt.Errorf("%w: %w", ErrConnClosed, err)
	for id, ch := range c.pending {
		ch <- clientResult{err: c.err}
		delete(c.pending, id)
	}
	c.nc.Close()
}

// Err returns the error that broke the connection, or nil while it is usable.
func (c *ClientConn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Close closes the connection, failing calls in flight.
func (c *ClientConn) Close() error {
	c.fail(errors.New("closed by client"))
	return nil
}
