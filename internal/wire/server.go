package wire

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/ferr"
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

	conn     *serverConn
	deferred bool
	received time.Time // when the frame was read, for Observer
	size     int       // frame size in bytes, for Observer
}

// Decode unmarshals the request body into msg. Required fields are checked, so a request the
// official clients would never send is refused with CORRUPT_MESSAGE rather than half-read.
func (r *Request) Decode(msg proto.Message) error {
	if err := proto.Unmarshal(r.Body, msg); err != nil {
		return ferr.New(ferr.CorruptMessage, "cannot decode %s request: %v", r.Header.APIKey, err)
	}
	return nil
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
	handlers   map[APIKey]Handler
}

// NewService returns an empty API table for a server of the given type.
func NewService(serverType int32) *Service {
	return &Service{ServerType: serverType, handlers: make(map[APIKey]Handler)}
}

// Handle registers h for key. Only registered keys are advertised in API_VERSIONS.
func (s *Service) Handle(key APIKey, h Handler) { s.handlers[key] = h }

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

// ListenerConfig describes how a listener treats its connections.
type ListenerConfig struct {
	Name string
	// Auth, when non-nil, makes the listener a SASL listener: nothing but API_VERSIONS and
	// AUTHENTICATE is served before authentication completes.
	Auth         Authenticator
	MaxFrameSize int // 0 means DefaultMaxFrameSize
	// Observer, when non-nil, is told about every connection and answered request (metrics).
	Observer Observer
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

// Serve accepts connections on ln and serves svc on each until ctx is cancelled or ln fails.
// It waits for the connections' handlers to finish before returning.
func Serve(ctx context.Context, ln net.Listener, svc *Service, cfg ListenerConfig, log *slog.Logger) error {
	if cfg.MaxFrameSize <= 0 {
		cfg.MaxFrameSize = DefaultMaxFrameSize
	}
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
	var err error
	for {
		nc, aerr := ln.Accept()
		if aerr != nil {
			if ctx.Err() == nil && !errors.Is(aerr, net.ErrClosed) {
				err = fmt.Errorf("accept on %s: %w", cfg.Name, aerr)
			}
			break
		}
		c := newServerConn(ctx, nc, svc, cfg, log)
		mu.Lock()
		conns[c] = struct{}{}
		mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
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
	return err
}

type serverConn struct {
	nc     net.Conn
	svc    *Service
	cfg    ListenerConfig
	log    *slog.Logger
	ctx    context.Context
	cancel context.CancelFunc

	wmu  sync.Mutex // guards w and wbuf; a frame is written whole under it
	w    *bufio.Writer
	wbuf []byte

	// Authentication state; touched only by the reading goroutine.
	authenticated bool
	principal     string

	inflight sync.WaitGroup
}

func newServerConn(ctx context.Context, nc net.Conn, svc *Service, cfg ListenerConfig, log *slog.Logger) *serverConn {
	cctx, cancel := context.WithCancel(ctx)
	return &serverConn{
		nc: nc, svc: svc, cfg: cfg, ctx: cctx, cancel: cancel,
		log:           log.With("listener", cfg.Name, "remote", nc.RemoteAddr().String()),
		w:             bufio.NewWriterSize(nc, 64<<10),
		authenticated: cfg.Auth == nil,
	}
}

// serve reads requests until the connection fails. A malformed frame closes this connection
// only; the peer gets no SERVER_FAILURE frame because the Rust client mis-parses those.
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
	r := bufio.NewReaderSize(c.nc, 64<<10)
	var buf []byte
	for {
		payload, err := ReadFrame(r, buf, RequestHeaderSize, c.cfg.MaxFrameSize)
		if err != nil {
			switch {
			case errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed), errors.Is(err, syscall.ECONNRESET), c.ctx.Err() != nil:
				c.log.Debug("connection closed", "err", err)
			default:
				c.log.Warn("closing connection", "err", err)
			}
			return
		}
		hdr, body, _ := ParseRequestHeader(payload)
		req := &Request{Header: hdr, Body: body, Listener: c.cfg.Name, conn: c, received: time.Now(), size: len(payload)}
		c.dispatch(req)
		if req.deferred {
			buf = nil // the deferred handler may still hold the old buffer
		} else {
			buf = payload[:0]
		}
	}
}

func (c *serverConn) dispatch(req *Request) {
	key := req.Header.APIKey
	req.Principal = c.principal
	var msg proto.Message
	var err error
	switch {
	case key == APIVersions:
		msg = c.apiVersions()
	case key == Authenticate:
		msg, err = c.authenticate(req)
	case !c.authenticated:
		err = ferr.New(ferr.AuthenticateException, "The connection has not completed authentication yet. This may be caused by a missing or incorrect configuration of 'client.security.protocol' on the client side.")
	default:
		h, ok := c.svc.handlers[key]
		if !ok {
			err = ferr.New(ferr.UnsupportedVersion, "the %s does not support API %s (key %d)", serverTypeName(c.svc.ServerType), key, int16(key))
			break
		}
		if v := VersionsOf(key); req.Header.APIVersion < v.Min || req.Header.APIVersion > v.Max {
			err = ferr.New(ferr.UnsupportedVersion, "%s version %d is not in the supported range [%d, %d]", key, req.Header.APIVersion, v.Min, v.Max)
			break
		}
		msg, err = c.call(h, req)
	}
	if errors.Is(err, errDeferred) {
		return
	}
	c.respond(req, msg, err)
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
	add := func(k APIKey) {
		v := VersionsOf(k)
		resp.ApiVersions = append(resp.ApiVersions, &flusspb.PbApiVersion{
			ApiKey: proto.Int32(int32(k)), MinVersion: proto.Int32(int32(v.Min)), MaxVersion: proto.Int32(int32(v.Max)),
		})
	}
	add(APIVersions)
	add(Authenticate)
	for _, k := range sortedKeys(c.svc.handlers) {
		add(k)
	}
	if c.svc.ServerType != 0 {
		resp.ServerType = proto.Int32(c.svc.ServerType)
	}
	return resp
}

// authenticate implements the server side of AUTHENTICATE as the Java network layer does: the
// first successful exchange answers with a present-but-empty challenge (the Rust client then
// sends one more AUTHENTICATE), later ones answer with no challenge.
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
		return &flusspb.AuthenticateResponse{}, nil
	}
	principal, err := c.cfg.Auth.Authenticate(mech, ar.GetToken())
	if err != nil {
		return nil, ferr.New(ferr.AuthenticateException, "%s", Sanitize(err.Error()))
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

// respond sends the response for req. It is safe for concurrent use.
func (c *serverConn) respond(req *Request, msg proto.Message, err error) {
	if r, ok := msg.(Releaser); ok {
		defer r.Release()
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	start := len(c.wbuf)
	if err == nil {
		c.wbuf = appendResponseHeader(c.wbuf, responseSuccess, req.Header.RequestID)
		var merr error
		if ba, ok := msg.(BodyAppender); ok {
			c.wbuf, merr = ba.AppendBody(c.wbuf)
		} else {
			c.wbuf, merr = proto.MarshalOptions{}.MarshalAppend(c.wbuf, msg)
		}
		if merr != nil {
			c.log.Error("cannot encode response", "api", req.Header.APIKey, "err", merr)
			c.wbuf = c.wbuf[:start]
			err = ferr.New(ferr.UnknownServerError, "cannot encode %s response", req.Header.APIKey)
		}
	}
	if err != nil {
		code := ferr.CodeOf(err)
		if code == ferr.UnknownServerError {
			c.log.Error("request failed", "api", req.Header.APIKey, "err", err)
		}
		em := &flusspb.ErrorResponse{ErrorCode: proto.Int32(int32(code))}
		if m := ferr.MessageOf(err); m != "" {
			em.ErrorMessage = proto.String(Sanitize(m))
		}
		c.wbuf = appendResponseHeader(c.wbuf, responseError, req.Header.RequestID)
		c.wbuf, _ = proto.MarshalOptions{}.MarshalAppend(c.wbuf, em)
	}
	FinishFrame(c.wbuf[start:])
	if o := c.cfg.Observer; o != nil {
		o.RequestDone(req.Header.APIKey, req.size, len(c.wbuf)-start, time.Since(req.received), ferr.CodeOf(err))
	}
	_, werr := c.w.Write(c.wbuf)
	if werr == nil {
		werr = c.w.Flush()
	}
	c.wbuf = c.wbuf[:0]
	if cap(c.wbuf) > 1<<20 {
		c.wbuf = nil // do not pin a large fetch buffer to an idle connection
	}
	if werr != nil {
		c.nc.Close()
	}
}

// Sanitize makes s safe for a protobuf string field: the Rust client panics on invalid UTF-8.
func Sanitize(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return strings.ToValidUTF8(s, "?")
}
