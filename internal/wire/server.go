package wire

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unicode/utf8"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/sendfile"
	"github.com/stromdb/strom/proto/flusspb"
)

// Handler serves one API. It returns the response message or an error; an error carrying a
// ferr code is sent as an ERROR_RESPONSE with that code, any other error as
// UNKNOWN_SERVER_ERROR. Handlers run one at a time per connection, in arrival order, so a
// handler that must wait (long polls) hands its waiting to Request.Defer.
type Handler func(ctx context.Context, req *Request) (proto.Message, error)

// Request is one decoded request frame and the context it arrived in.
type Request struct {
	Header   RequestHeader
	Body     []byte // protobuf body; valid only until the handler returns or Defer is called
	Listener string // name of the listener the request arrived on
	// Principal is the authenticated user ("" on plaintext listeners).
	Principal string

	// unproven: the request arrived on a listener with PeerTLS over a connection that did
	// not authenticate as a member (a plaintext client), so it is not internal.
	unproven bool
	conn     *serverConn
	deferred bool
	// holdFlush: the reading goroutine has the next request frame whole in its buffer and
	// will serve it without reading the socket, so the response may stay in the write
	// buffer and go out in one write with the next ones (see serverConn.serve).
	holdFlush bool
	charged   int64     // bytes this request holds against the connection's and node's budgets
	counted   bool      // it holds a unit of the node's request budget
	finished  bool      // its holdings were released
	received  time.Time // when the frame was read, for Observer
	size      int       // frame size in bytes, for Observer
}

// IsInternal reports whether req came from another server of the cluster, so that it may be
// a server-to-server request (NOTIFY_LEADER_AND_ISR, a replica's FETCH_LOG, ...) and is
// exempt from authorization: it arrived on internalListener (internal.listener.name) and,
// when that listener has PeerTLS, over a connection that completed the cluster's mutual TLS.
// Without PeerTLS (a cluster run insecure on purpose, or a single node) the listener name
// alone decides, as in Fluss.
func (r *Request) IsInternal(internalListener string) bool {
	return r.Listener == internalListener && !r.unproven
}

// RemoteAddr is the address of the client that sent the request (ACL host matching).
func (r *Request) RemoteAddr() net.Addr { return r.conn.nc.RemoteAddr() }

// Decode unmarshals the request body into msg. Required fields are checked, so a request the
// official clients would never send is refused with CORRUPT_MESSAGE rather than half-read. A
// body with more entries (nested messages and list elements) than the server's limit is
// refused before decoding, also with CORRUPT_MESSAGE; the entries decoded are charged to the
// connection's and node's byte budgets until the request is answered.
func (r *Request) Decode(msg proto.Message) error {
	return r.DecodeWith(msg, func(body []byte) error { return proto.Unmarshal(body, msg) })
}

// DecodeWith is Decode with decode, a handler's own decoder of msg's message type, in place of
// proto.Unmarshal; the entry limit and charge are Decode's. It exists for hot requests whose
// large bytes fields may alias the body instead of being copied: the body stays valid and
// unchanged until the request is answered (the connection reads the next frame into it only
// after a handler that did not defer has returned, and never once a handler deferred).
// decode must refuse what proto.Unmarshal refuses; its error is wrapped in CORRUPT_MESSAGE.
func (r *Request) DecodeWith(msg proto.Message, decode func(body []byte) error) error {
	if c := r.conn; c != nil {
		limit := c.cfg.Limits.cfg.MaxRequestEntries
		n := countEntries(r.Body, msg.ProtoReflect().Descriptor(), limit)
		if limit > 0 && n > limit {
			return ferr.New(ferr.CorruptMessage, "%s request has more than %d entries (nested messages and list elements), the limit of this server (netty.server.max-request-entries)", r.Header.APIKey, limit)
		}
		r.Reserve(int64(n) * decodedEntryCost)
	}
	if err := decode(r.Body); err != nil {
		return ferr.New(ferr.CorruptMessage, "cannot decode %s request: %v", r.Header.APIKey, err)
	}
	return nil
}

// Reserve charges n more bytes to the request until it is answered: memory the handler will
// hold for it, such as the response it is about to build. It never waits; once the budgets
// are exceeded the connection stops reading further requests until answers free them.
func (r *Request) Reserve(n int64) {
	if r.conn != nil && n > 0 {
		r.conn.charge(r, n, false)
	}
}

var errDeferred = errors.New("wire: response deferred")

// Defer moves the rest of the request to its own goroutine: f runs concurrently with later
// requests of the connection and its result is sent when it returns. The handler must return
// Defer's result directly. The request body must be decoded before calling Defer.
func (r *Request) Defer(f func() (proto.Message, error)) (proto.Message, error) {
	r.deferred = true
	r.Body = nil
	c := r.conn
	c.inflight.Add(1)
	if o := c.cfg.Observer; o != nil {
		o.Deferred(r.Header.APIKey, 1)
	}
	go func() {
		defer c.inflight.Done()
		if o := c.cfg.Observer; o != nil {
			defer o.Deferred(r.Header.APIKey, -1)
		}
		msg, err := func() (msg proto.Message, err error) {
			defer func() {
				if p := recover(); p != nil {
					c.log.Error("deferred handler panic", "api", r.Header.APIKey, "panic", p)
					msg, err = nil, ferr.New(ferr.UnknownServerError, "internal error while serving %s", r.Header.APIKey)
				}
			}()
			return f()
		}()
		c.respond(r, msg, err)
	}()
	return nil, errDeferred
}

// Context returns a context that is cancelled when the connection closes.
func (r *Request) Context() context.Context { return r.conn.ctx }

// LocalAddr is the address of the listener socket the request arrived on.
func (r *Request) LocalAddr() net.Addr { return r.conn.nc.LocalAddr() }

// Service is the API table of one server role (coordinator or tablet server).
type Service struct {
	// ServerType is reported in API_VERSIONS: 1 coordinator, 2 tablet server, 0 to omit.
	ServerType int32
	handlers   map[APIKey]registered
	quick      map[APIKey]bool
}

// registered is one API of a Service: the versions it serves and its handler.
type registered struct {
	versions VersionRange
	handler  Handler
}

// NewService returns an empty API table for a server of the given type.
func NewService(serverType int32) *Service {
	return &Service{ServerType: serverType, handlers: make(map[APIKey]registered), quick: make(map[APIKey]bool)}
}

// MarkQuick declares that the handler of key answers within microseconds on the connection's
// goroutine (it never blocks there; anything slow goes through Request.Defer). When a client
// pipelines requests, the response to one request is then held back while the next one is
// already read and quick, so that the answers leave in one write instead of one each; a
// request of any other API is never waited for.
func (s *Service) MarkQuick(key APIKey) { s.quick[key] = true }

// Handle registers h for key, serving the versions in v. Only registered keys are advertised in
// API_VERSIONS, each with its own range; a request outside the range gets UNSUPPORTED_VERSION
// before h runs, so h sees only versions it declared and branches on Header.APIVersion where
// the protocol differs between them.
func (s *Service) Handle(key APIKey, v VersionRange, h Handler) {
	if v.Min < 0 || v.Min > v.Max {
		panic(fmt.Sprintf("wire: %s registered with the empty version range [%d, %d]", key, v.Min, v.Max))
	}
	s.handlers[key] = registered{versions: v, handler: h}
}

// Versions returns the version range key is registered with, and whether it is.
func (s *Service) Versions(key APIKey) (VersionRange, bool) {
	r, ok := s.handlers[key]
	return r.versions, ok
}

// Keys returns the registered API keys.
func (s *Service) Keys() []APIKey {
	keys := make([]APIKey, 0, len(s.handlers))
	for k := range s.handlers {
		keys = append(keys, k)
	}
	return keys
}

// Authenticator checks SASL credentials. Authenticate returns the principal name, or an error
// (sent to the client with AUTHENTICATE_EXCEPTION).
type Authenticator interface {
	// Mechanisms lists the enabled SASL mechanisms, upper case (e.g. "PLAIN").
	Mechanisms() []string
	Authenticate(mechanism string, token []byte) (principal string, err error)
}

// Defaults of the per-listener connection policy.
const (
	// DefaultPreAuthMaxFrameSize bounds frames on a SASL listener until the connection has
	// authenticated: API_VERSIONS and AUTHENTICATE requests are a few hundred bytes.
	DefaultPreAuthMaxFrameSize = 64 << 10
	// DefaultAuthTimeout is how long a connection to a SASL listener may take to authenticate.
	DefaultAuthTimeout = 10 * time.Second
	// DefaultAuthFailureDelay is how long a failed authentication waits before it is answered.
	DefaultAuthFailureDelay = time.Second
	// DefaultMaxAuthFailures is how many failed authentications close a connection.
	DefaultMaxAuthFailures = 3
	// DefaultIdleTimeout closes connections with no traffic and nothing in flight (Fluss's
	// netty.connection.max-idle-time default).
	DefaultIdleTimeout = 10 * time.Minute
)

// ListenerConfig describes how a listener treats its connections. Zero durations and sizes
// take the defaults; negative ones disable that limit.
type ListenerConfig struct {
	Name string
	// Auth, when non-nil, makes the listener a SASL listener: nothing but API_VERSIONS and
	// AUTHENTICATE is served before authentication completes.
	Auth                Authenticator
	MaxFrameSize        int           // 0 means DefaultMaxFrameSize
	PreAuthMaxFrameSize int           // frame limit before authentication (SASL listeners)
	AuthTimeout         time.Duration // time from accept to a successful AUTHENTICATE
	AuthFailureDelay    time.Duration // delay before answering a failed AUTHENTICATE
	MaxAuthFailures     int           // failed AUTHENTICATEs after which the connection closes
	IdleTimeout         time.Duration // no traffic and nothing in flight for this long closes
	// Limits is shared by the listeners of a node; nil gives this listener its own, with the
	// defaults.
	Limits *Limits
	// Observer, when non-nil, is told about every connection and answered request (metrics).
	Observer Observer
	// ZeroCopy streams the file ranges of FileBody responses instead of reading them into
	// the frame: with sendfile(2) on plain sockets, through a bounded buffer on connections
	// that wrap the socket (filebody.go).
	ZeroCopy bool
	// PeerTLS, on the internal listener (internal.listener.name), is the members' mutual TLS (internal/clustertls): a
	// connection whose first byte starts a TLS handshake must complete it with a
	// certificate PeerTLS verifies, or it is closed before any request is read; its
	// requests are then internal (Request.IsInternal). A connection that does not start with
	// TLS is an ordinary client connection (its requests are not internal), unless PeerOnly.
	PeerTLS *tls.Config
	// PeerOnly reserves a PeerTLS listener for the servers: a connection that does not start
	// a TLS handshake is closed before any request is read.
	PeerOnly bool
}

// Observer watches a listener's traffic. Its methods are called from connection goroutines
// and must be cheap and safe for concurrent use.
type Observer interface {
	ConnectionOpened()
	ConnectionClosed()
	// RequestDone is called once per answered request: frame sizes in and out (bytes), time
	// from reading the request to writing the response, and the error code sent (0 = none).
	RequestDone(api APIKey, bytesIn, bytesOut int, elapsed time.Duration, code ferr.Code)
	// Deferred is called with +1 when a handler hands its request to Request.Defer (a long
	// poll, a write waiting for its fsync) and with -1 when that deferred work has finished.
	Deferred(api APIKey, delta int)
}

func (cfg ListenerConfig) withDefaults() ListenerConfig {
	if cfg.MaxFrameSize <= 0 {
		cfg.MaxFrameSize = DefaultMaxFrameSize
	}
	if cfg.PreAuthMaxFrameSize == 0 {
		cfg.PreAuthMaxFrameSize = DefaultPreAuthMaxFrameSize
	}
	if cfg.PreAuthMaxFrameSize < 0 || cfg.PreAuthMaxFrameSize > cfg.MaxFrameSize {
		cfg.PreAuthMaxFrameSize = cfg.MaxFrameSize
	}
	dur := func(d *time.Duration, def time.Duration) {
		if *d == 0 {
			*d = def
		}
	}
	dur(&cfg.AuthTimeout, DefaultAuthTimeout)
	dur(&cfg.AuthFailureDelay, DefaultAuthFailureDelay)
	dur(&cfg.IdleTimeout, DefaultIdleTimeout)
	if cfg.MaxAuthFailures == 0 {
		cfg.MaxAuthFailures = DefaultMaxAuthFailures
	}
	if cfg.Limits == nil {
		cfg.Limits = NewLimits(LimitsConfig{})
	}
	return cfg
}

// Accept retry backoff: doubled from the minimum after each consecutive failure.
const (
	minAcceptBackoff = 5 * time.Millisecond
	maxAcceptBackoff = time.Second
)

// Serve accepts connections on ln and serves svc on each until ctx is cancelled or ln is
// closed. An accept error never ends it: running out of file descriptors (EMFILE), aborted
// handshakes and the like are logged and retried with backoff, since the listening socket is
// intact and the condition clears when connections or files close. A connection beyond the
// connection limit is closed at once. Serve waits for the connections' handlers to finish
// before returning.
func Serve(ctx context.Context, ln net.Listener, svc *Service, cfg ListenerConfig, log *slog.Logger) error {
	cfg = cfg.withDefaults()
	log = log.With("listener", cfg.Name)
	var wg sync.WaitGroup
	conns := make(map[*serverConn]struct{})
	var mu sync.Mutex
	stop := context.AfterFunc(ctx, func() {
		ln.Close()
		mu.Lock()
		for c := range conns {
			c.nc.Close()
		}
		mu.Unlock()
	})
	defer stop()
	var backoff time.Duration
	var lastRefusal time.Time
	refusals := &everySecond{}
	for {
		nc, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				break
			}
			backoff = min(max(2*backoff, minAcceptBackoff), maxAcceptBackoff)
			log.Error("accept failed; retrying", "err", err, "retry_in", backoff)
			select {
			case <-time.After(backoff):
			case <-ctx.Done():
			}
			continue
		}
		if backoff > 0 {
			log.Info("accepting connections again")
			backoff = 0
		}
		if !cfg.Limits.tryOpen() {
			if time.Since(lastRefusal) >= time.Second {
				log.Warn("connection limit reached; refusing new connections", "limit", cfg.Limits.cfg.MaxConnections, "remote", nc.RemoteAddr().String())
				lastRefusal = time.Now()
			}
			nc.Close()
			continue
		}
		c := newServerConn(ctx, nc, svc, cfg, log)
		c.refusals = refusals
		mu.Lock()
		conns[c] = struct{}{}
		mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer cfg.Limits.closed()
			c.serve()
			mu.Lock()
			delete(conns, c)
			mu.Unlock()
		}()
	}
	mu.Lock()
	for c := range conns {
		c.nc.Close()
	}
	mu.Unlock()
	wg.Wait()
	return nil
}

type serverConn struct {
	nc     net.Conn
	svc    *Service
	cfg    ListenerConfig
	log    *slog.Logger
	ctx    context.Context
	cancel context.CancelFunc

	wmu       sync.Mutex // guards w, wbuf and unflushed; a frame is written whole under it
	w         *bufio.Writer
	wbuf      []byte
	unflushed bool         // w holds responses not yet written to the socket
	held      int          // responses in w since the last flush
	lastWrite atomic.Int64 // unix nanoseconds of the last response written

	// Guarded by wmu too: scratch for FileBody responses, and whether their file ranges go
	// to nc with sendfile(2) (a plain socket on a ZeroCopy listener).
	ranges   []FileRange
	sendfile bool

	// stream is what requests are read from and answers written to: nc, or the TLS session
	// on it of a peer of the internal listener (set by serve before the first request).
	stream net.Conn
	// unproven: PeerTLS is set and the connection did not authenticate as a member
	// (Request.IsInternal).
	unproven bool
	// refusals limits the WARN lines of refused peer connections to one a second per
	// listener; nil logs every one.
	refusals *everySecond

	// Authentication state; touched only by the reading goroutine.
	authenticated bool
	principal     string
	authFailures  int
	closeAfter    bool // close once the current response is written

	// Requests read and not yet answered, and the bytes they hold, on this connection. The
	// node-wide counterparts are in cfg.Limits.
	requests *budget
	bytes    *budget

	inflight sync.WaitGroup
}

func newServerConn(ctx context.Context, nc net.Conn, svc *Service, cfg ListenerConfig, log *slog.Logger) *serverConn {
	cfg = cfg.withDefaults()
	cctx, cancel := context.WithCancel(ctx)
	return &serverConn{
		nc: nc, stream: nc, svc: svc, cfg: cfg, ctx: cctx, cancel: cancel,
		unproven:      cfg.PeerTLS != nil,
		log:           log.With("remote", nc.RemoteAddr().String()),
		w:             bufio.NewWriterSize(nc, 64<<10),
		sendfile:      cfg.ZeroCopy && sendfile.Supported(nc),
		authenticated: cfg.Auth == nil,
		requests:      newBudget(int64(cfg.Limits.cfg.MaxConnInflightRequests)),
		bytes:         newBudget(cfg.Limits.cfg.MaxConnInflightBytes),
	}
}

var (
	errIdle        = errors.New("connection idle")
	errAuthTimeout = errors.New("authentication timed out")
)

// serve reads requests until the connection fails. A malformed frame closes this connection
// only; the peer gets no SERVER_FAILURE frame because the Rust client mis-parses those.
//
// Before reading a request it waits for room in the connection's and the node's budgets of
// requests in flight, and before reading a request's body for room for its bytes: a client
// that sends faster than its answers are produced, or does not read them, stops being read.
func (c *serverConn) serve() {
	if o := c.cfg.Observer; o != nil {
		o.ConnectionOpened()
		defer o.ConnectionClosed()
	}
	defer func() {
		c.cancel()
		c.inflight.Wait()
		c.nc.Close()
	}()
	if c.cfg.PeerTLS != nil {
		if err := c.admitPeer(); err != nil {
			switch {
			case errors.Is(err, errClosedSilently):
				// A connection closed before sending a byte: the coordinator's liveness
				// probe (a bare TCP connect), a port check. Nothing was attempted.
				c.log.Debug("internal listener: connection closed before its first byte")
			case c.ctx.Err() == nil && c.refusals.allow():
				c.log.Warn("internal listener: refused a connection without the cluster's credentials (at most one such line a second)", "err", err)
			}
			return
		}
	}
	var authDeadline time.Time
	if !c.authenticated && c.cfg.AuthTimeout > 0 {
		authDeadline = time.Now().Add(c.cfg.AuthTimeout)
	}
	r := bufio.NewReaderSize(c.stream, 64<<10)
	var buf []byte
	for {
		// Responses of requests served from the read buffer wait in the write buffer while
		// the next request is also there already (pipelining clients send several at once);
		// they are written, in one system call, before this goroutine may block: before a
		// read of the socket here, and before waiting for budget in readRequest.
		more := frameBuffered(r)
		if !more {
			c.flushPending()
		}
		req, payload, err := c.readRequest(r, buf, authDeadline)
		if err != nil {
			c.flushPending() // the answers to the requests before a bad frame
			switch {
			case errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed), errors.Is(err, syscall.ECONNRESET), c.ctx.Err() != nil:
				c.log.Debug("connection closed", "err", err)
			case errors.Is(err, errIdle):
				c.log.Info("closing idle connection", "idle_timeout", c.cfg.IdleTimeout)
			default:
				c.log.Warn("closing connection", "err", err)
			}
			return
		}
		req.received, req.size = time.Now(), len(payload)
		req.holdFlush = c.quickFrameBuffered(r)
		c.dispatch(req)
		if req.deferred {
			buf = nil // the deferred handler may still hold the old buffer
		} else {
			buf = payload[:0]
		}
		if c.closeAfter {
			c.flushPending()
			return
		}
	}
}

// frameBuffered reports whether r holds a whole request frame (length prefix and body), which
// can then be read without touching the socket.
func frameBuffered(r *bufio.Reader) bool {
	n := r.Buffered()
	if n < 4 {
		return false
	}
	p, _ := r.Peek(4)
	size := int(int32(binary.BigEndian.Uint32(p)))
	return size >= 0 && n-4 >= size
}

// maxHeldResponses bounds how many responses wait in the write buffer for the next one: a
// client streaming requests faster than they are answered keeps whole frames in the read
// buffer, and its first answers must not wait for the whole buffer to be served.
const maxHeldResponses = 16

// quickFrameBuffered reports whether r holds a whole request frame of an API the service
// marked quick: a response may wait for that request's answer in the write buffer without
// delaying it by more than a few microseconds.
func (c *serverConn) quickFrameBuffered(r *bufio.Reader) bool {
	if !frameBuffered(r) || r.Buffered() < 4+2 {
		return false // none, or too short to have an API key (readRequest refuses it)
	}
	p, _ := r.Peek(4 + 2)
	return c.svc.quick[APIKey(binary.BigEndian.Uint16(p[4:]))]
}

// flushPending writes the responses held back in the write buffer.
func (c *serverConn) flushPending() {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.unflushed {
		c.flushLocked()
	}
}

// flushLocked writes the write buffer to the socket; c.wmu is held. A failed write closes
// the connection.
func (c *serverConn) flushLocked() {
	if c.cfg.IdleTimeout > 0 {
		// A peer that stops reading its answers must not hold this connection's memory
		// forever: a write blocked for the idle timeout fails and closes the connection.
		c.nc.SetWriteDeadline(time.Now().Add(c.cfg.IdleTimeout))
	}
	werr := c.w.Flush()
	c.unflushed, c.held = false, 0
	c.lastWrite.Store(time.Now().UnixNano())
	if werr != nil {
		c.nc.Close()
	}
}

// acquire takes n from b, first writing any held-back responses if it has to wait for them.
func (c *serverConn) acquire(b *budget, n int64) error {
	if b.tryAcquire(n) {
		return nil
	}
	c.flushPending()
	return b.acquire(c.ctx, n)
}

// readRequest admits and reads one request frame.
func (c *serverConn) readRequest(r *bufio.Reader, buf []byte, authDeadline time.Time) (*Request, []byte, error) {
	if err := c.acquire(c.requests, 1); err != nil {
		return nil, nil, err
	}
	req := &Request{Listener: c.cfg.Name, unproven: c.unproven, conn: c}
	ok := false
	defer func() {
		if !ok {
			c.finish(req)
		}
	}()
	if err := c.awaitFrame(r, authDeadline); err != nil {
		return nil, nil, err
	}
	// The node-wide unit is taken once a request is arriving, so idle connections hold none.
	if err := c.acquire(c.cfg.Limits.requests, 1); err != nil {
		return nil, nil, err
	}
	req.counted = true
	var lenBuf [4]byte
	if _, err := io.ReadFull(r, lenBuf[:]); err != nil {
		return nil, nil, c.readErr(err, authDeadline)
	}
	limit := c.cfg.MaxFrameSize
	if !c.authenticated {
		limit = c.cfg.PreAuthMaxFrameSize
	}
	n := int(int32(binary.BigEndian.Uint32(lenBuf[:])))
	if n < RequestHeaderSize || n > limit {
		if !c.authenticated && n <= c.cfg.MaxFrameSize {
			return nil, nil, fmt.Errorf("%w: %d bytes before authentication (allowed %d..%d)", ErrFrameTooLarge, n, RequestHeaderSize, limit)
		}
		return nil, nil, fmt.Errorf("%w: %d bytes (allowed %d..%d)", ErrFrameTooLarge, n, RequestHeaderSize, limit)
	}
	if err := c.charge(req, int64(n), true); err != nil {
		return nil, nil, err
	}
	payload, err := readBody(r, buf, n)
	if err != nil {
		return nil, nil, c.readErr(err, authDeadline)
	}
	req.Header, req.Body, _ = ParseRequestHeader(payload)
	ok = true
	return req, payload, nil
}

// awaitFrame waits for the first byte of the next frame. The wait ends in errIdle after
// IdleTimeout with nothing in flight and nothing written, in errAuthTimeout once an
// unauthenticated connection passes its deadline. The rest of the frame must then arrive
// within the same deadline.
func (c *serverConn) awaitFrame(r *bufio.Reader, authDeadline time.Time) error {
	if frameBuffered(r) {
		return nil // nothing to wait for (the deadline of the last wait still stands)
	}
	for {
		c.setReadDeadline(authDeadline)
		if _, err := r.Peek(1); err == nil {
			return nil
		} else if !errors.Is(err, os.ErrDeadlineExceeded) {
			return err
		}
		if !c.authenticated && !authDeadline.IsZero() && !time.Now().Before(authDeadline) {
			return errAuthTimeout
		}
		// Busy if another request is in flight (this one holds one unit) or an answer went
		// out within the idle timeout.
		if c.requests.inUse() > 1 || time.Since(time.Unix(0, c.lastWrite.Load())) < c.cfg.IdleTimeout {
			continue
		}
		return errIdle
	}
}

func (c *serverConn) setReadDeadline(authDeadline time.Time) {
	var d time.Time
	if c.cfg.IdleTimeout > 0 {
		d = time.Now().Add(c.cfg.IdleTimeout)
	}
	if !c.authenticated && !authDeadline.IsZero() && (d.IsZero() || authDeadline.Before(d)) {
		d = authDeadline
	}
	c.nc.SetReadDeadline(d)
}

func (c *serverConn) readErr(err error, authDeadline time.Time) error {
	if errors.Is(err, os.ErrDeadlineExceeded) {
		if !c.authenticated && !authDeadline.IsZero() && !time.Now().Before(authDeadline) {
			return errAuthTimeout
		}
		return fmt.Errorf("frame not received within %s: %w", c.cfg.IdleTimeout, err)
	}
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// charge adds n bytes to what req holds on the connection and the node. With wait, it first
// waits until they fit (backpressure on the reading goroutine); without, it records bytes
// already spent, and the next read waits instead.
func (c *serverConn) charge(req *Request, n int64, wait bool) error {
	if wait {
		if err := c.acquire(c.bytes, n); err != nil {
			return err
		}
		if err := c.acquire(c.cfg.Limits.bytes, n); err != nil {
			c.bytes.release(n)
			return err
		}
	} else {
		c.bytes.add(n)
		c.cfg.Limits.bytes.add(n)
	}
	req.charged += n
	return nil
}

// finish releases what req holds; it runs once, when req is answered or abandoned.
func (c *serverConn) finish(req *Request) {
	if req.finished {
		return
	}
	req.finished = true
	c.bytes.release(req.charged)
	c.cfg.Limits.bytes.release(req.charged)
	c.requests.release(1)
	if req.counted {
		c.cfg.Limits.requests.release(1)
	}
}

// exactBodyBytes is the largest frame body read into a buffer of its announced size at once.
// Larger bodies grow their buffer with the bytes that actually arrive, so a length prefix
// alone costs at most this much (and the frame's size is charged to the connection's and
// node's byte budgets before it is read). Below it, one allocation of exactly n bytes and no
// copies replace the 64 KiB steps: a 140 KB PRODUCE_LOG cost 332 KB of allocations and
// 192 KB of copying in steps (docs/benchmarks.md, "Append: what the server's CPU goes to").
const exactBodyBytes = 1 << 20

// readBody reads an n-byte frame body into buf. Unless buf is already large enough or the
// body is at most exactBodyBytes, the buffer grows with the bytes that actually arrive, so a
// length prefix alone costs little.
func readBody(r io.Reader, buf []byte, n int) ([]byte, error) {
	if cap(buf) < n && n <= exactBodyBytes {
		buf = make([]byte, n)
	}
	if cap(buf) >= n {
		buf = buf[:n]
		_, err := io.ReadFull(r, buf)
		return buf, err
	}
	buf = buf[:0]
	for len(buf) < n {
		chunk := min(n-len(buf), max(len(buf), 64<<10))
		if cap(buf)-len(buf) < chunk {
			grown := make([]byte, len(buf), len(buf)+chunk)
			copy(grown, buf)
			buf = grown
		}
		m, err := io.ReadFull(r, buf[len(buf):len(buf)+chunk])
		buf = buf[:len(buf)+m]
		if err != nil {
			return nil, err
		}
	}
	return buf, nil
}

func (c *serverConn) dispatch(req *Request) {
	key := req.Header.APIKey
	req.Principal = c.principal
	var msg proto.Message
	var err error
	switch {
	case key == APIVersions || key == Authenticate:
		if err = checkVersion(req.Header, connectionVersions); err != nil {
			break
		}
		if key == APIVersions {
			msg = c.apiVersions()
		} else {
			msg, err = c.authenticate(req)
		}
	case !c.authenticated:
		err = ferr.New(ferr.AuthenticateException, "The connection has not completed authentication yet. This may be caused by a missing or incorrect configuration of 'client.security.protocol' on the client side.")
	default:
		api, ok := c.svc.handlers[key]
		if !ok {
			err = ferr.New(ferr.UnsupportedVersion, "the %s does not support API %s (key %d)", serverTypeName(c.svc.ServerType), key, int16(key))
			break
		}
		if err = checkVersion(req.Header, api.versions); err != nil {
			break
		}
		msg, err = c.call(api.handler, req)
	}
	if errors.Is(err, errDeferred) {
		return
	}
	c.respond(req, msg, err)
}

// connectionVersions is the range of the two APIs the connection layer serves itself,
// API_VERSIONS and AUTHENTICATE; both have only version 0.
var connectionVersions = VersionRange{0, 0}

func checkVersion(h RequestHeader, v VersionRange) error {
	if h.APIVersion < v.Min || h.APIVersion > v.Max {
		return ferr.New(ferr.UnsupportedVersion, "%s version %d is not in the supported range [%d, %d]", h.APIKey, h.APIVersion, v.Min, v.Max)
	}
	return nil
}

// call runs a handler, turning a panic into UNKNOWN_SERVER_ERROR for that request alone.
func (c *serverConn) call(h Handler, req *Request) (msg proto.Message, err error) {
	defer func() {
		if p := recover(); p != nil {
			c.log.Error("handler panic", "api", req.Header.APIKey, "panic", p)
			msg, err = nil, ferr.New(ferr.UnknownServerError, "internal error while serving %s", req.Header.APIKey)
		}
	}()
	return h(c.ctx, req)
}

func serverTypeName(t int32) string {
	switch t {
	case 1:
		return "coordinator server"
	case 2:
		return "tablet server"
	}
	return "server"
}

func (c *serverConn) apiVersions() proto.Message {
	resp := &flusspb.ApiVersionsResponse{}
	add := func(k APIKey, v VersionRange) {
		resp.ApiVersions = append(resp.ApiVersions, &flusspb.PbApiVersion{
			ApiKey: proto.Int32(int32(k)), MinVersion: proto.Int32(int32(v.Min)), MaxVersion: proto.Int32(int32(v.Max)),
		})
	}
	add(APIVersions, connectionVersions)
	add(Authenticate, connectionVersions)
	for _, k := range sortedKeys(c.svc.handlers) {
		add(k, c.svc.handlers[k].versions)
	}
	if c.svc.ServerType != 0 {
		resp.ServerType = proto.Int32(c.svc.ServerType)
	}
	return resp
}

// authenticate implements the server side of AUTHENTICATE as the Java network layer does: the
// first successful exchange answers with a present-but-empty challenge (the Rust client then
// sends one more AUTHENTICATE, with an empty token), later empty ones answer with no challenge.
//
// Beyond the Java server: a failed attempt is answered only after AuthFailureDelay, and the
// MaxAuthFailures-th closes the connection once answered, so one connection cannot guess
// passwords quickly; a token sent after a successful login is refused (re-authentication,
// which could change the principal, is not supported) and the connection keeps its login.
func (c *serverConn) authenticate(req *Request) (proto.Message, error) {
	var ar flusspb.AuthenticateRequest
	if err := req.Decode(&ar); err != nil {
		return nil, err
	}
	mech := strings.ToUpper(ar.GetProtocol())
	if c.cfg.Auth == nil {
		if mech != "PLAINTEXT" {
			return nil, ferr.New(ferr.AuthenticateException, "listener %s accepts only PLAINTEXT, but the client requested %s", c.cfg.Name, ar.GetProtocol())
		}
		return &flusspb.AuthenticateResponse{}, nil
	}
	enabled := false
	for _, m := range c.cfg.Auth.Mechanisms() {
		enabled = enabled || m == mech
	}
	if !enabled {
		return nil, ferr.New(ferr.AuthenticateException, "SASL mechanism %s is not enabled on listener %s (enabled: %s)", ar.GetProtocol(), c.cfg.Name, strings.Join(c.cfg.Auth.Mechanisms(), ","))
	}
	if c.authenticated {
		if len(ar.GetToken()) == 0 {
			return &flusspb.AuthenticateResponse{}, nil
		}
		return nil, ferr.New(ferr.AuthenticateException, "this connection is already authenticated as %s; re-authentication is not supported, open a new connection", c.principal)
	}
	principal, err := c.cfg.Auth.Authenticate(mech, ar.GetToken())
	if err != nil {
		c.authFailures++
		c.log.Warn("authentication failed", "mechanism", mech, "attempt", c.authFailures, "err", err)
		if c.cfg.MaxAuthFailures > 0 && c.authFailures >= c.cfg.MaxAuthFailures {
			c.closeAfter = true
		}
		if c.cfg.AuthFailureDelay > 0 {
			t := time.NewTimer(c.cfg.AuthFailureDelay)
			select {
			case <-t.C:
			case <-c.ctx.Done():
				t.Stop()
			}
		}
		return nil, ferr.New(ferr.AuthenticateException, "%s", err.Error())
	}
	c.authenticated, c.principal = true, principal
	return &flusspb.AuthenticateResponse{Challenge: []byte{}}, nil
}

// BodyAppender is implemented by responses that encode themselves, for instance to copy
// large record payloads from files straight into the response frame. AppendBody must append
// a valid protobuf encoding of the response message.
type BodyAppender interface {
	AppendBody(dst []byte) ([]byte, error)
}

// Releaser is implemented by responses that hold resources until they are written.
type Releaser interface {
	Release()
}

// respond sends the response for req and releases what req holds. It is safe for concurrent
// use. Error messages are scrubbed of absolute file paths (logged here in full instead).
func (c *serverConn) respond(req *Request, msg proto.Message, err error) {
	defer c.finish(req)
	if r, ok := msg.(Releaser); ok {
		defer r.Release()
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	start := len(c.wbuf)
	var streamed []FileRange // file ranges written after the heap bytes (filebody.go)
	if err == nil {
		var merr error
		if fb, ok := msg.(FileBody); ok {
			streamed, merr = c.encodeFileBody(fb, start, req.Header.RequestID)
		} else {
			c.wbuf = appendResponseHeader(c.wbuf, responseSuccess, req.Header.RequestID)
			if ba, ok := msg.(BodyAppender); ok {
				c.wbuf, merr = ba.AppendBody(c.wbuf)
			} else {
				c.wbuf, merr = proto.MarshalOptions{}.MarshalAppend(c.wbuf, msg)
			}
		}
		if merr != nil {
			streamed = nil
			c.log.Error("cannot encode response", "api", req.Header.APIKey, "err", merr)
			c.wbuf = c.wbuf[:start]
			err = ferr.New(ferr.UnknownServerError, "cannot encode %s response", req.Header.APIKey)
		}
	}
	if err != nil {
		code := ferr.CodeOf(err)
		m := ferr.MessageOf(err)
		safe, scrubbed := scrubPaths(m)
		switch {
		case code == ferr.UnknownServerError:
			c.log.Error("request failed", "api", req.Header.APIKey, "err", err)
		case scrubbed:
			c.log.Warn("request failed; file paths withheld from the client", "api", req.Header.APIKey, "code", code, "err", err)
		}
		em := &flusspb.ErrorResponse{ErrorCode: proto.Int32(int32(code))}
		if m != "" {
			em.ErrorMessage = proto.String(Sanitize(safe))
		}
		c.wbuf = appendResponseHeader(c.wbuf, responseError, req.Header.RequestID)
		c.wbuf, _ = proto.MarshalOptions{}.MarshalAppend(c.wbuf, em)
	}
	if streamed != nil {
		c.respondStreamed(req, start, streamed)
		return
	}
	FinishFrame(c.wbuf[start:])
	if o := c.cfg.Observer; o != nil {
		o.RequestDone(req.Header.APIKey, req.size, len(c.wbuf)-start, time.Since(req.received), ferr.CodeOf(err))
	}
	if c.cfg.IdleTimeout > 0 && len(c.wbuf) > c.w.Available() {
		// The frame does not fit in the write buffer, so writing it reaches the socket:
		// bound that write as flushLocked does.
		c.nc.SetWriteDeadline(time.Now().Add(c.cfg.IdleTimeout))
	}
	_, werr := c.w.Write(c.wbuf)
	c.wbuf = c.wbuf[:0]
	if cap(c.wbuf) > 1<<20 {
		c.wbuf = nil // do not pin a large fetch buffer to an idle connection
	}
	if werr != nil {
		c.lastWrite.Store(time.Now().UnixNano())
		c.nc.Close()
		return
	}
	// A deferred response, or one whose next request is not yet here, goes out now; the
	// reading goroutine writes held-back ones before it can block (serve).
	c.unflushed = true
	c.held++
	if req.deferred || !req.holdFlush || c.held >= maxHeldResponses {
		c.flushLocked()
	}
}

// Sanitize makes s safe for a protobuf string field sent to a client: absolute file paths
// are cut to their last element (clients must not learn the server's layout) and invalid
// UTF-8 is replaced (the Rust client panics on it).
func Sanitize(s string) string {
	s, _ = scrubPaths(s)
	if utf8.ValidString(s) {
		return s
	}
	return strings.ToValidUTF8(s, "?")
}

// absPath matches an absolute path of at least two elements that starts a word: after the
// start of the text or a character that cannot be part of a path or URL.
var absPath = regexp.MustCompile(`(^|[\s"'(\[=,;<>{])((?:/[\w.@+~%-]+){2,}/?)`)

// scrubPaths replaces each absolute path in s by ".../" and its last element, and reports
// whether it changed anything.
func scrubPaths(s string) (string, bool) {
	if !strings.Contains(s, "/") {
		return s, false
	}
	changed := false
	out := absPath.ReplaceAllStringFunc(s, func(m string) string {
		sub := absPath.FindStringSubmatch(m)
		changed = true
		return sub[1] + ".../" + path.Base(sub[2])
	})
	return out, changed
}
