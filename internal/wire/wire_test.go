package wire

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"net"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/proto/flusspb"
)

// testServer serves svc on a loopback listener for the duration of the test.
func testServer(t *testing.T, svc *Service, cfg ListenerConfig) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		Serve(ctx, ln, svc, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	}()
	t.Cleanup(func() { cancel(); <-done })
	return ln.Addr().String()
}

func echoService() *Service {
	svc := NewService(2)
	svc.Handle(DatabaseExists, VersionRange{}, func(ctx context.Context, req *Request) (proto.Message, error) {
		var r flusspb.DatabaseExistsRequest
		if err := req.Decode(&r); err != nil {
			return nil, err
		}
		if r.GetDatabaseName() == "missing" {
			return nil, ferr.New(ferr.DatabaseNotExist, "Database missing does not exist.")
		}
		return &flusspb.DatabaseExistsResponse{Exists: proto.Bool(true)}, nil
	})
	// ListTables answers after a delay taken from the database name's length, off the
	// connection's request loop, so responses come back out of order.
	svc.Handle(ListTables, VersionRange{}, func(ctx context.Context, req *Request) (proto.Message, error) {
		var r flusspb.ListTablesRequest
		if err := req.Decode(&r); err != nil {
			return nil, err
		}
		name := r.GetDatabaseName()
		return req.Defer(func() (proto.Message, error) {
			time.Sleep(time.Duration(len(name)) * 5 * time.Millisecond)
			return &flusspb.ListTablesResponse{TableName: []string{name}}, nil
		})
	})
	svc.Handle(ListDatabases, VersionRange{}, func(ctx context.Context, req *Request) (proto.Message, error) {
		panic("handler bug")
	})
	return svc
}

func dial(t *testing.T, addr string) *ClientConn {
	t.Helper()
	c, err := Dial(context.Background(), addr, ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestAPIVersionsAdvertisesRegisteredKeys(t *testing.T) {
	c := dial(t, testServer(t, echoService(), ListenerConfig{Name: "FLUSS"}))
	if c.ServerType != 2 {
		t.Fatalf("server type %d, want 2", c.ServerType)
	}
	for _, k := range []APIKey{APIVersions, Authenticate, DatabaseExists, ListTables, ListDatabases} {
		if _, err := c.Version(k); err != nil {
			t.Errorf("%s not advertised: %v", k, err)
		}
	}
	if _, err := c.Version(CreateTable); ferr.CodeOf(err) != ferr.UnsupportedVersion {
		t.Errorf("CREATE_TABLE must not be advertised, got %v", err)
	}
}

func TestErrorsKeepTheConnectionUsable(t *testing.T) {
	c := dial(t, testServer(t, echoService(), ListenerConfig{Name: "FLUSS"}))
	ctx := context.Background()
	var resp flusspb.DatabaseExistsResponse
	err := c.Call(ctx, DatabaseExists, &flusspb.DatabaseExistsRequest{DatabaseName: proto.String("missing")}, &resp)
	if ferr.CodeOf(err) != ferr.DatabaseNotExist {
		t.Fatalf("got %v, want DATABASE_NOT_EXIST", err)
	}
	// A panicking handler fails its request only.
	var ldr flusspb.ListDatabasesResponse
	if err := c.Call(ctx, ListDatabases, &flusspb.ListDatabasesRequest{}, &ldr); ferr.CodeOf(err) != ferr.UnknownServerError {
		t.Fatalf("panicking handler: got %v, want UNKNOWN_SERVER_ERROR", err)
	}
	// A key the service does not serve, and a version out of range.
	if _, err := c.CallRaw(ctx, CreateTable, 0, nil); ferr.CodeOf(err) != ferr.UnsupportedVersion {
		t.Fatalf("unserved key: got %v", err)
	}
	if _, err := c.CallRaw(ctx, DatabaseExists, 5, nil); ferr.CodeOf(err) != ferr.UnsupportedVersion {
		t.Fatalf("bad version: got %v", err)
	}
	// A body that is not the message (missing required field / garbage).
	if _, err := c.CallRaw(ctx, DatabaseExists, 0, []byte{0xff, 0xff}); ferr.CodeOf(err) != ferr.CorruptMessage {
		t.Fatalf("garbage body: got %v", err)
	}
	if _, err := c.CallRaw(ctx, DatabaseExists, 0, nil); ferr.CodeOf(err) != ferr.CorruptMessage {
		t.Fatalf("missing required field: got %v", err)
	}
	if err := c.Call(ctx, DatabaseExists, &flusspb.DatabaseExistsRequest{DatabaseName: proto.String("db")}, &resp); err != nil || !resp.GetExists() {
		t.Fatalf("connection unusable after errors: %v", err)
	}
}

func TestPipelinedRequestsAnswerByID(t *testing.T) {
	c := dial(t, testServer(t, echoService(), ListenerConfig{Name: "FLUSS"}))
	names := []string{"aaaaaaaaaa", "aaaaa", "a", "aaaaaaa", "aa"}
	var wg sync.WaitGroup
	errs := make(chan error, len(names))
	for _, n := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var resp flusspb.ListTablesResponse
			if err := c.Call(context.Background(), ListTables, &flusspb.ListTablesRequest{DatabaseName: proto.String(n)}, &resp); err != nil {
				errs <- err
				return
			}
			if len(resp.TableName) != 1 || resp.TableName[0] != n {
				errs <- errors.New("response matched to the wrong request: " + n + " got " + resp.TableName[0])
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestMalformedFrameClosesOnlyThatConnection(t *testing.T) {
	addr := testServer(t, echoService(), ListenerConfig{Name: "FLUSS", MaxFrameSize: 1 << 10})
	good := dial(t, addr)
	for _, frame := range [][]byte{
		{0xff, 0xff, 0xff, 0xff},       // negative length
		{0x00, 0x00, 0x10, 0x00},       // above the 1 KiB limit
		{0x00, 0x00, 0x00, 0x03, 1, 2}, // shorter than a request header
	} {
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		nc.Write(frame)
		nc.SetReadDeadline(time.Now().Add(5 * time.Second))
		if n, err := nc.Read(make([]byte, 16)); err == nil {
			t.Errorf("frame %x: server answered %d bytes instead of closing", frame, n)
		}
		nc.Close()
	}
	var resp flusspb.DatabaseExistsResponse
	if err := good.Call(context.Background(), DatabaseExists, &flusspb.DatabaseExistsRequest{DatabaseName: proto.String("db")}, &resp); err != nil {
		t.Fatalf("other connection broken: %v", err)
	}
}

type staticAuth struct{}

func (staticAuth) Mechanisms() []string { return []string{"PLAIN"} }
func (staticAuth) Authenticate(m string, token []byte) (string, error) {
	if !bytes.Equal(token, []byte("\x00u\x00p")) {
		return "", errors.New("Authentication failed: Invalid username or password")
	}
	return "User:u", nil
}

func TestSASLListenerGatesRequests(t *testing.T) {
	addr := testServer(t, echoService(), ListenerConfig{Name: "CLIENT", Auth: staticAuth{}})
	ctx := context.Background()
	anon := dial(t, addr)
	var resp flusspb.DatabaseExistsResponse
	req := &flusspb.DatabaseExistsRequest{DatabaseName: proto.String("db")}
	if err := anon.Call(ctx, DatabaseExists, req, &resp); ferr.CodeOf(err) != ferr.AuthenticateException {
		t.Fatalf("unauthenticated request: got %v, want AUTHENTICATE_EXCEPTION", err)
	}
	if _, err := Dial(ctx, addr, ClientConfig{Username: "u", Password: "wrong"}); ferr.CodeOf(err) != ferr.AuthenticateException {
		t.Fatalf("wrong password: got %v", err)
	}
	c, err := Dial(ctx, addr, ClientConfig{Username: "u", Password: "p"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// A second AUTHENTICATE after success is answered (the Rust client sends one).
	var ar flusspb.AuthenticateResponse
	if err := c.Call(ctx, Authenticate, &flusspb.AuthenticateRequest{Protocol: proto.String("PLAIN"), Token: []byte{}}, &ar); err != nil {
		t.Fatalf("second AUTHENTICATE: %v", err)
	}
	if err := c.Call(ctx, DatabaseExists, req, &resp); err != nil {
		t.Fatalf("authenticated request: %v", err)
	}
}

func TestReadFrameLimits(t *testing.T) {
	frame := func(n int32, body []byte) []byte {
		return append(binary.BigEndian.AppendUint32(nil, uint32(n)), body...)
	}
	if _, err := ReadFrame(bytes.NewReader(frame(-1, nil)), nil, 8, 100); !errors.Is(err, ErrFrameTooLarge) {
		t.Errorf("negative length: %v", err)
	}
	if _, err := ReadFrame(bytes.NewReader(frame(101, nil)), nil, 8, 100); !errors.Is(err, ErrFrameTooLarge) {
		t.Errorf("too large: %v", err)
	}
	if _, err := ReadFrame(bytes.NewReader(frame(10, []byte{1, 2})), nil, 8, 100); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("truncated: %v", err)
	}
	got, err := ReadFrame(bytes.NewReader(frame(8, []byte{3, 0xe8, 0, 0, 0, 0, 0, 9})), nil, 8, 100)
	if err != nil {
		t.Fatal(err)
	}
	h, body, err := ParseRequestHeader(got)
	if err != nil || h.APIKey != APIVersions || h.RequestID != 9 || len(body) != 0 {
		t.Fatalf("header %+v body %x err %v", h, body, err)
	}
}

// FuzzServerConn feeds arbitrary bytes to a server connection: whatever arrives, the server
// must not panic, and it must finish with the connection (answer or close) without hanging.
func FuzzServerConn(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0x1b, 0x03, 0xe8, 0, 0, 0, 0, 0, 0, 0x0a, 0x0a, 'f', 'l', 'u', 's', 's', '-', 'r', 'u', 's', 't', 0x12, 0x05, '1', '.', '0', '.', '0'})
	f.Add([]byte{0, 0, 0, 8, 0x03, 0xec, 0, 0, 0, 0, 0, 1})
	f.Add([]byte{0, 0, 0, 10, 0x03, 0xec, 0, 0, 0, 0, 0, 1, 0x0a, 0xff})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff})
	svc := echoService()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	f.Fuzz(func(t *testing.T, data []byte) {
		client, server := net.Pipe()
		c := newServerConn(context.Background(), server, svc, ListenerConfig{Name: "F", MaxFrameSize: 1 << 16}, log)
		done := make(chan struct{})
		go func() { c.serve(); close(done) }()
		go io.Copy(io.Discard, client)
		client.SetWriteDeadline(time.Now().Add(2 * time.Second))
		client.Write(data)
		client.Close()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatal("server connection did not finish")
		}
	})
}

// FuzzParseResponseHeader checks the client's response header parsing on arbitrary input.
func FuzzParseResponseHeader(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0, 5, 8, 7})
	f.Add([]byte{2, 8, 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		h, body, err := ParseResponseHeader(data)
		if err == nil && len(body) > len(data) {
			t.Fatalf("body longer than payload: %+v", h)
		}
	})
}

// Each API is served in the range it registers: API_VERSIONS advertises that range, a version
// outside it is refused before the handler runs, and the handler sees the version it serves.
func TestHandlerServesItsRegisteredVersions(t *testing.T) {
	svc := NewService(2)
	svc.Handle(PutKv, VersionRange{Min: 1, Max: 3}, func(ctx context.Context, req *Request) (proto.Message, error) {
		return &flusspb.DatabaseExistsResponse{Exists: proto.Bool(req.Header.APIVersion == 2)}, nil
	})
	c := dial(t, testServer(t, svc, ListenerConfig{Name: "FLUSS"}))
	if got := c.versions[PutKv]; got != (VersionRange{Min: 1, Max: 3}) {
		t.Fatalf("PUT_KV advertised as %v, want [1, 3]", got)
	}
	if got := c.versions[APIVersions]; got != (VersionRange{}) {
		t.Fatalf("API_VERSIONS advertised as %v, want [0, 0]", got)
	}
	for _, v := range []int16{0, 4} {
		if _, err := c.CallRaw(context.Background(), PutKv, v, nil); ferr.CodeOf(err) != ferr.UnsupportedVersion {
			t.Errorf("version %d: got %v, want UNSUPPORTED_VERSION", v, err)
		}
	}
	body, err := c.CallRaw(context.Background(), PutKv, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	var resp flusspb.DatabaseExistsResponse
	if err := proto.Unmarshal(body, &resp); err != nil || !resp.GetExists() {
		t.Fatalf("the handler did not see version 2: %v %v", &resp, err)
	}
}

func TestHandleRefusesAnEmptyVersionRange(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("registering [2, 1] did not panic")
		}
	}()
	NewService(2).Handle(PutKv, VersionRange{Min: 2, Max: 1}, nil)
}
