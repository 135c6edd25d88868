package wire

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"sync"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/proto/flusspb"
)

// ClientConfig configures a client connection.
type ClientConfig struct {
	SoftwareName    string // sent in API_VERSIONS; default "strom-go"
	SoftwareVersion string // default "0.1.0"
	// SASL PLAIN credentials; empty Username means no authentication.
	Username, Password string
	// ExpectServerType, when non-zero, makes the handshake fail if the server reports
	// another role (1 coordinator, 2 tablet server).
	ExpectServerType int32
}

// ErrConnClosed is returned for calls on, or in flight when, a connection closes.
var ErrConnClosed = errors.New("wire: connection closed")

// ClientConn is a multiplexed client connection: many calls may be in flight at once and
// responses are matched by request id.
type ClientConn struct {
	nc       net.Conn
	versions map[APIKey]VersionRange
	// ServerType is what the server reported in API_VERSIONS (0 if absent).
	ServerType int32

	wmu    sync.Mutex
	w      *bufio.Writer
	wbuf   []byte
	nextID int32

	mu      sync.Mutex
	pending map[int32]chan clientResult
	err     error // set once the connection failed
	done    chan struct{}
}

type clientResult struct {
	hdr  ResponseHeader
	body []byte
	err  error
}

// Dial connects to addr and performs the API_VERSIONS (and, if configured, SASL) handshake.
func Dial(ctx context.Context, addr string, cfg ClientConfig) (*ClientConn, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", addr, err)
	}
	c := &ClientConn{
		nc: nc, w: bufio.NewWriterSize(nc, 64<<10),
		pending: make(map[int32]chan clientResult), done: make(chan struct{}),
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
	if err := c.Call(ctx, Authenticate, &flusspb.AuthenticateRequest{Protocol: proto.String("PLAIN"), Token: token}, &ar); err != nil {
		return err
	}
	return nil
}

// Version returns the version to use for key (the highest both sides support), or an
// UNSUPPORTED_VERSION error if the server does not serve key.
func (c *ClientConn) Version(key APIKey) (int16, error) {
	sv, ok := c.versions[key]
	if !ok {
		return 0, ferr.New(ferr.UnsupportedVersion, "the server does not support %s", key)
	}
	cv := VersionsOf(key)
	lo, hi := max(sv.Min, cv.Min), min(sv.Max, cv.Max)
	if lo > hi {
		return 0, ferr.New(ferr.UnsupportedVersion, "the server supports %s versions [%d, %d], this client [%d, %d]", key, sv.Min, sv.Max, cv.Min, cv.Max)
	}
	return hi, nil
}

// Call sends req as API key and decodes the response into resp. An ERROR_RESPONSE is returned
// as a *ferr.Error.
func (c *ClientConn) Call(ctx context.Context, key APIKey, req, resp proto.Message) error {
	v, err := c.Version(key)
	if err != nil {
		return err
	}
	return c.callVersion(ctx, key, v, req, resp)
}

// CallRaw is Call with an already encoded request body; it returns the raw response body.
func (c *ClientConn) CallRaw(ctx context.Context, key APIKey, version int16, body []byte) ([]byte, error) {
	ch, id, err := c.send(key, version, func(dst []byte) ([]byte, error) { return append(dst, body...), nil })
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
	ch, id, err := c.send(key, version, func(dst []byte) ([]byte, error) {
		return proto.MarshalOptions{}.MarshalAppend(dst, req)
	})
	if err != nil {
		return err
	}
	res, err := c.wait(ctx, id, ch)
	if err != nil {
		return err
	}
	if err := (proto.UnmarshalOptions{AllowPartial: true}).Unmarshal(res.body, resp); err != nil {
		return fmt.Errorf("decode %s response: %w", key, err)
	}
	return nil
}

func (c *ClientConn) send(key APIKey, version int16, body func([]byte) ([]byte, error)) (chan clientResult, int32, error) {
	ch := make(chan clientResult, 1)
	c.wmu.Lock()
	defer c.wmu.Unlock()
	id := c.nextID & 0x7fffffff
	c.nextID++
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return nil, 0, c.err
	}
	c.pending[id] = ch
	c.mu.Unlock()
	buf := AppendRequestHeader(c.wbuf[:0], RequestHeader{APIKey: key, APIVersion: version, RequestID: id})
	buf, err := body(buf)
	if err != nil {
		c.forget(id)
		return nil, 0, fmt.Errorf("encode %s request: %w", key, err)
	}
	FinishFrame(buf)
	c.wbuf = buf
	if _, err := c.w.Write(buf); err == nil {
		err = c.w.Flush()
		if err != nil {
			c.fail(err)
		}
	} else {
		c.fail(err)
	}
	return ch, id, nil
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
		switch res.hdr.Type {
		case responseSuccess:
			return res, nil
		default:
			var em flusspb.ErrorResponse
			if err := (proto.UnmarshalOptions{AllowPartial: true}).Unmarshal(res.body, &em); err != nil {
				return res, fmt.Errorf("undecodable error response: %w", err)
			}
			return res, &ferr.Error{Code: ferr.Code(em.GetErrorCode()), Message: em.GetErrorMessage()}
		}
	case <-ctx.Done():
		c.forget(id)
		return clientResult{}, ctx.Err()
	}
}

func (c *ClientConn) readLoop() {
	r := bufio.NewReaderSize(c.nc, 64<<10)
	for {
		payload, err := ReadFrame(r, nil, 1, 1<<31-1)
		if err != nil {
			c.fail(err)
			return
		}
		hdr, body, err := ParseResponseHeader(payload)
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
			ch <- clientResult{hdr: hdr, body: body}
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
	c.err = fmt.Errorf("%w: %v", ErrConnClosed, err)
	for id, ch := range c.pending {
		ch <- clientResult{err: c.err}
		delete(c.pending, id)
	}
	close(c.done)
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
