// Package kafka serves the Kafka wire protocol on a tablet server's Kafka listeners
// (kafka.enabled, kafka.listener.names): topics are the log tables of one database
// (kafka.database), a topic's partitions the table's buckets. Messages are encoded and decoded
// with franz-go's kmsg; each API is one file that registers the versions it serves.
// docs/kafka.md describes the mapping and what is served.
package kafka

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stromdb/strom/server/auth"
)

// DefaultMaxFrameSize bounds a request when Options.MaxFrameSize is 0.
const DefaultMaxFrameSize = 100 << 20

// Server serves Kafka requests on listeners.
type Server struct {
	opts   Options
	log    *slog.Logger
	groups *groupCoordinator
	decomp *decompressor // produced batches, bounded at the frame limit

	commitMu sync.Mutex // serialises read-modify-writes of groups' committed offsets

	usersMu sync.Mutex
	users   map[string]*auth.Plain // SASL/PLAIN users by listener name

	schemaMu sync.Mutex
	schemas  map[[2]int64]*arrow.Schema // (table id, schema id)
}

// New returns a server; Serve starts it on a listener.
func New(opts Options, log *slog.Logger) *Server {
	if opts.MaxFrameSize <= 0 {
		opts.MaxFrameSize = DefaultMaxFrameSize
	}
	s := &Server{opts: opts, log: log, decomp: newDecompressor(opts.MaxFrameSize)}
	s.groups = newGroupCoordinator(s)
	return s
}

// SetUsers makes a listener a SASL/PLAIN listener with the given users: nothing but
// ApiVersions, SaslHandshake and SaslAuthenticate is served before authentication.
func (s *Server) SetUsers(listener string, users *auth.Plain) {
	s.usersMu.Lock()
	defer s.usersMu.Unlock()
	if s.users == nil {
		s.users = map[string]*auth.Plain{}
	}
	s.users[listener] = users
}

// Serve accepts connections on ln until ctx is done or ln is closed; listener is the
// listener's name (Metadata answers with that listener's endpoints).
func (s *Server) Serve(ctx context.Context, ln net.Listener, listener string) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	s.groups.once.Do(func() {
		wg.Add(1)
		go func() { defer wg.Done(); s.groups.run(ctx) }()
	})
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	for {
		nc, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return nil
			}
			return fmt.Errorf("kafka listener %s: %w", listener, err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.usersMu.Lock()
			users := s.users[listener]
			s.usersMu.Unlock()
			c := &conn{s: s, nc: nc, listener: listener, users: users}
			cctx, cancel := context.WithCancel(ctx)
			defer cancel()
			stopConn := context.AfterFunc(ctx, func() { nc.Close() })
			defer stopConn()
			if err := c.serve(cctx); err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				s.log.Debug("kafka connection closed", "remote", nc.RemoteAddr().String(), "err", err)
			}
			nc.Close()
		}()
	}
}

// conn is one client connection. Requests are answered one at a time in arrival order, as
// Kafka clients expect (responses are matched by order as well as correlation id).
type conn struct {
	s        *Server
	nc       net.Conn
	listener string
	users    *auth.Plain // nil: no SASL on this listener

	// SASL state: mechanism chosen by SaslHandshake, principal after SaslAuthenticate.
	mechanism     string
	principal     string
	authenticated bool
	// closeAfter closes the connection once the current response is written (a failed
	// SaslAuthenticate).
	closeAfter bool
}

// request is one decoded request.
type request struct {
	conn   *conn
	key    int16
	ver    int16
	corrID int32
	client *string
	msg    kmsg.Request
}

func (c *conn) serve(ctx context.Context) error {
	br := bufio.NewReaderSize(c.nc, 64<<10)
	bw := bufio.NewWriterSize(c.nc, 64<<10)
	var sizeBuf [4]byte
	// Until SaslAuthenticate succeeds every read is bounded by the authentication deadline.
	var authDeadline time.Time
	if d := c.s.opts.AuthTimeout; d > 0 && c.needsAuth() {
		authDeadline = time.Now().Add(d)
	}
	for {
		var deadline time.Time
		if d := c.s.opts.Config.MaxIdleTime; d > 0 {
			deadline = time.Now().Add(d)
		}
		if c.needsAuth() && !authDeadline.IsZero() && (deadline.IsZero() || authDeadline.Before(deadline)) {
			deadline = authDeadline
		}
		c.nc.SetReadDeadline(deadline)
		if _, err := io.ReadFull(br, sizeBuf[:]); err != nil {
			return err
		}
		size := int32(binary.BigEndian.Uint32(sizeBuf[:]))
		max := c.s.opts.MaxFrameSize
		if c.needsAuth() && max > 64<<10 {
			max = 64 << 10 // before authentication, only small frames
		}
		if size < 8 || int(size) > max {
			return fmt.Errorf("frame of %d bytes (limit %d)", size, max)
		}
		if c.needsAuth() {
			c.nc.SetReadDeadline(authDeadline)
		} else {
			c.nc.SetReadDeadline(time.Time{})
		}
		release := func() {}
		if l := c.s.opts.Limits; l != nil {
			var err error
			if release, err = l.Admit(ctx, int64(size)); err != nil {
				return err
			}
		}
		resp, ok, err := c.readAndHandle(ctx, br, size)
		if err == nil && ok {
			_, err = bw.Write(resp)
		}
		release()
		if err != nil {
			return err
		}
		if !ok {
			continue // acks=0 produce: no response
		}
		if br.Buffered() == 0 || c.closeAfter {
			if err := bw.Flush(); err != nil {
				return err
			}
		}
		if c.closeAfter {
			return errAuthFailed
		}
	}
}

// readAndHandle reads a frame of size bytes and serves it.
func (c *conn) readAndHandle(ctx context.Context, br *bufio.Reader, size int32) ([]byte, bool, error) {
	frame := make([]byte, size)
	if _, err := io.ReadFull(br, frame); err != nil {
		return nil, false, err
	}
	return c.handleFrame(ctx, frame)
}

// needsAuth reports whether the connection must still authenticate.
func (c *conn) needsAuth() bool { return c.users != nil && !c.authenticated }

// handleFrame decodes one request frame, serves it and returns the response frame. An error
// closes the connection: a frame whose header cannot be read (there is no correlation id to
// answer).
func (c *conn) handleFrame(ctx context.Context, frame []byte) (out []byte, respond bool, err error) {
	req, api, err := decodeRequest(frame)
	if errors.Is(err, errUnknownAPIVersions) {
		// As Kafka: an ApiVersions of a version we do not know is answered at v0 with
		// UNSUPPORTED_VERSION and the versions we serve.
		resp := apiVersionsResponse(0)
		resp.ErrorCode = errUnsupportedVersion
		return encodeResponse(req.corrID, resp, false), true, nil
	}
	if err != nil {
		return nil, false, err
	}
	req.conn = c
	if c.needsAuth() && req.key != apiVersionsKey && req.key != saslHandshakeKey && req.key != saslAuthenticateKey {
		return nil, false, fmt.Errorf("api %d before SASL authentication", req.key)
	}
	resp, err := c.serveRequest(ctx, api, req)
	if err != nil {
		return nil, false, err
	}
	if resp == nil {
		return nil, false, nil
	}
	resp.SetVersion(req.ver)
	return encodeResponse(req.corrID, resp, req.key != apiVersionsKey && resp.IsFlexible()), true, nil
}

var errUnknownAPIVersions = errors.New("ApiVersions of an unknown version")

// decodeRequest reads a request frame (without its size): the header, then the body with
// kmsg. A frame that cannot be read is an error, and the connection is closed, as Kafka does
// (there may be no correlation id to answer).
func decodeRequest(frame []byte) (*request, apiEntry, error) {
	r := kbin.Reader{Src: frame}
	req := &request{key: r.Int16(), ver: r.Int16(), corrID: r.Int32()}
	req.client = r.NullableString()
	if !r.Ok() {
		return nil, apiEntry{}, errors.New("request header is truncated")
	}
	api, known := apis[req.key]
	msg := kmsg.RequestForKey(req.key)
	if !known || msg == nil || req.ver < api.min || req.ver > api.max {
		if req.key == apiVersionsKey {
			return req, api, errUnknownAPIVersions
		}
		return nil, api, fmt.Errorf("unsupported api %d version %d", req.key, req.ver)
	}
	msg.SetVersion(req.ver)
	body := r.Src
	if msg.IsFlexible() {
		// The header's tagged fields (header v2).
		tr := kbin.Reader{Src: body}
		n := tr.Uvarint()
		for i := uint32(0); i < n && tr.Ok(); i++ {
			tr.Uvarint()
			tr.Span(int(tr.Uvarint()))
		}
		if !tr.Ok() {
			return nil, api, errors.New("request header tags are truncated")
		}
		body = tr.Src
	}
	if err := msg.ReadFrom(body); err != nil {
		return nil, api, fmt.Errorf("decode api %d v%d: %w", req.key, req.ver, err)
	}
	req.msg = msg
	return req, api, nil
}

// serveRequest runs a handler; a panic is logged and closes the connection instead of the
// process.
func (c *conn) serveRequest(ctx context.Context, api apiEntry, req *request) (resp kmsg.Response, err error) {
	defer func() {
		if p := recover(); p != nil {
			c.s.log.Error("kafka handler panic", "api", req.key, "version", req.ver, "panic", p)
			resp, err = nil, fmt.Errorf("handler panic: %v", p)
		}
	}()
	return api.handle(ctx, c.s, req)
}

// encodeResponse frames a response: size, correlation id, header tags when flexible, body.
func encodeResponse(corrID int32, resp kmsg.Response, flexibleHeader bool) []byte {
	out := make([]byte, 8, 256+fetchedBytes(resp))
	binary.BigEndian.PutUint32(out[4:], uint32(corrID))
	if flexibleHeader {
		out = append(out, 0)
	}
	out = resp.AppendTo(out)
	binary.BigEndian.PutUint32(out, uint32(len(out)-4))
	return out
}

// fetchedBytes is the record bytes of a Fetch response (0 for other responses), so its frame
// is allocated once rather than grown through copies of megabytes.
func fetchedBytes(resp kmsg.Response) int {
	f, ok := resp.(*kmsg.FetchResponse)
	if !ok {
		return 0
	}
	n := 0
	for _, t := range f.Topics {
		n += 64 + len(t.Topic)
		for _, p := range t.Partitions {
			n += 64 + len(p.RecordBatches)
		}
	}
	return n
}

// apiEntry is one served API.
type apiEntry struct {
	min, max int16
	handle   func(ctx context.Context, s *Server, req *request) (kmsg.Response, error)
}

var apis = map[int16]apiEntry{}

// register serves versions min..max of an API; each API's file calls it from init.
func register(key, min, max int16, handle func(ctx context.Context, s *Server, req *request) (kmsg.Response, error)) {
	apis[key] = apiEntry{min: min, max: max, handle: handle}
}
