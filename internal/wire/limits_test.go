package wire

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/proto/flusspb"
)

// serveOn serves svc on ln for the duration of the test and returns ln's address.
func serveOn(t *testing.T, ln net.Listener, svc *Service, cfg ListenerConfig, log *slog.Logger) string {
	t.Helper()
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		Serve(ctx, ln, svc, cfg, log)
	}()
	t.Cleanup(func() { cancel(); <-done })
	return ln.Addr().String()
}

func loopback(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

// rawFrame encodes one request frame.
func rawFrame(key APIKey, version int16, id int32, body []byte) []byte {
	f := AppendRequestHeader(nil, RequestHeader{APIKey: key, APIVersion: version, RequestID: id})
	f = append(f, body...)
	FinishFrame(f)
	return f
}

// expectClosed asserts that the server closes nc (a read ends in EOF or reset) within 5 s,
// after any answers it sends.
func expectClosed(t *testing.T, nc net.Conn, why string) {
	t.Helper()
	expectClosedWithin(t, nc, 5*time.Second, why)
}

func expectClosedWithin(t *testing.T, nc net.Conn, wait time.Duration, why string) {
	t.Helper()
	nc.SetReadDeadline(time.Now().Add(wait))
	_, err := io.Copy(io.Discard, nc)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("%s: server kept the connection open", why)
	}
}

// emfileListener fails Accept with EMFILE while failing is set, as a process out of file
// descriptors does; the pending connections wait in the kernel's backlog meanwhile.
type emfileListener struct {
	net.Listener
	failing  atomic.Bool
	failures atomic.Int32
}

func (l *emfileListener) Accept() (net.Conn, error) {
	if l.failing.Load() {
		l.failures.Add(1)
		return nil, &net.OpError{Op: "accept", Net: "tcp", Addr: l.Addr(), Err: os.NewSyscallError("accept4", syscall.EMFILE)}
	}
	return l.Listener.Accept()
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

func TestAcceptErrorsAreRetriedAndLogged(t *testing.T) {
	ln := &emfileListener{Listener: loopback(t)}
	ln.failing.Store(true)
	var logs syncBuffer
	addr := serveOn(t, ln, echoService(), ListenerConfig{Name: "FLUSS"}, slog.New(slog.NewTextHandler(&logs, nil)))
	for start := time.Now(); ln.failures.Load() < 3 && time.Since(start) < 2*time.Second; {
		time.Sleep(time.Millisecond)
	}
	// The error clears: a client that connected meanwhile, and a new one, are served.
	dialed := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		c, err := Dial(ctx, addr, ClientConfig{})
		if err == nil {
			c.Close()
		}
		dialed <- err
	}()
	time.Sleep(20 * time.Millisecond)
	ln.failing.Store(false)
	if err := <-dialed; err != nil {
		t.Fatalf("connection during EMFILE: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := Dial(ctx, addr, ClientConfig{})
	if err != nil {
		t.Fatalf("listener not serving after the accept errors: %v", err)
	}
	defer c.Close()
	var resp flusspb.DatabaseExistsResponse
	if err := c.Call(ctx, DatabaseExists, &flusspb.DatabaseExistsRequest{DatabaseName: proto.String("db")}, &resp); err != nil {
		t.Fatalf("listener not serving after the accept errors: %v", err)
	}
	if out := logs.String(); !strings.Contains(out, "accept failed") || !strings.Contains(out, "too many open files") {
		t.Fatalf("accept errors were not logged:\n%s", out)
	}
}

func TestConnectionLimitRefusesCleanly(t *testing.T) {
	lim := NewLimits(LimitsConfig{MaxConnections: 2})
	addr := serveOn(t, loopback(t), echoService(), ListenerConfig{Name: "FLUSS", Limits: lim}, nil)
	a := dial(t, addr)
	dial(t, addr)
	over, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer over.Close()
	expectClosed(t, over, "connection beyond the limit")
	a.Close()
	for lim.Connections() > 1 {
		time.Sleep(time.Millisecond)
	}
	c := dial(t, addr) // room again
	var resp flusspb.DatabaseExistsResponse
	if err := c.Call(context.Background(), DatabaseExists, &flusspb.DatabaseExistsRequest{DatabaseName: proto.String("db")}, &resp); err != nil {
		t.Fatal(err)
	}
}

// heapGrowth runs f and returns how much the live heap grew while f's effects are held.
func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

func TestLengthPrefixAloneAllocatesNothing(t *testing.T) {
	const conns, frame = 8, 16 << 20
	lim := NewLimits(LimitsConfig{MaxConnInflightBytes: -1, MaxInflightBytes: -1})
	addr := serveOn(t, loopback(t), echoService(), ListenerConfig{Name: "FLUSS", MaxFrameSize: frame + 1, Limits: lim}, nil)
	before := heapInUse()
	for range conns {
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		// A frame announced at 16 MiB of which 1 KiB arrives.
		nc.Write(append(binary.BigEndian.AppendUint32(nil, frame), make([]byte, 1<<10)...))
	}
	// Wait until the server has read every length prefix (it charges the frame then).
	for start := time.Now(); lim.InflightBytes() < conns*frame; {
		if time.Since(start) > 10*time.Second {
			t.Fatalf("server read %d bytes of prefixes", lim.InflightBytes())
		}
		time.Sleep(time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond) // and the 1 KiB that followed
	if grown := int64(heapInUse()) - int64(before); grown > 4<<20 {
		t.Fatalf("%d partial frames grew the heap by %d MiB; want it to hold only the bytes received", conns, grown>>20)
	}
}

func TestSASLListenerBoundsUnauthenticatedClients(t *testing.T) {
	// A frame above the pre-authentication limit closes the connection at its length prefix,
	// long before the (default, 10 s) authentication timeout.
	bigAddr := serveOn(t, loopback(t), echoService(), ListenerConfig{Name: "CLIENT", Auth: staticAuth{}}, nil)
	big, err := net.Dial("tcp", bigAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer big.Close()
	big.Write(binary.BigEndian.AppendUint32(nil, 99<<20))
	expectClosedWithin(t, big, 2*time.Second, "99 MiB frame before authentication")

	cfg := ListenerConfig{Name: "CLIENT", Auth: staticAuth{}, AuthTimeout: 200 * time.Millisecond}
	addr := serveOn(t, loopback(t), echoService(), cfg, nil)

	// A connection that does not authenticate in time is closed, whether silent or not.
	silent, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	start := time.Now()
	expectClosed(t, silent, "silent unauthenticated connection")
	if time.Since(start) < 150*time.Millisecond {
		t.Fatalf("closed after %v, before the authentication timeout", time.Since(start))
	}
	chatty := dial(t, addr) // API_VERSIONS only
	time.Sleep(time.Second)
	var resp flusspb.DatabaseExistsResponse
	if err := chatty.Call(context.Background(), DatabaseExists, &flusspb.DatabaseExistsRequest{DatabaseName: proto.String("db")}, &resp); !errors.Is(err, ErrConnClosed) {
		t.Fatalf("unauthenticated connection after the timeout: got %v, want it closed", err)
	}

	// After authentication the timeout no longer applies and the normal frame limit does.
	c, err := Dial(context.Background(), addr, ClientConfig{Username: "u", Password: "p"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	time.Sleep(300 * time.Millisecond)
	long := strings.Repeat("d", DefaultPreAuthMaxFrameSize+1)
	if err := c.Call(context.Background(), DatabaseExists, &flusspb.DatabaseExistsRequest{DatabaseName: proto.String(long)}, &resp); err != nil {
		t.Fatalf("authenticated request above the pre-auth limit: %v", err)
	}
}

func TestIdleConnectionsAreClosed(t *testing.T) {
	addr := serveOn(t, loopback(t), echoService(), ListenerConfig{Name: "FLUSS", IdleTimeout: 100 * time.Millisecond}, nil)
	ctx := context.Background()
	busy := dial(t, addr)
	// ListTables answers after 5 ms per name byte: 400 ms in flight, longer than the idle
	// timeout, does not make the connection idle.
	var lt flusspb.ListTablesResponse
	if err := busy.Call(ctx, ListTables, &flusspb.ListTablesRequest{DatabaseName: proto.String(strings.Repeat("x", 80))}, &lt); err != nil {
		t.Fatalf("request in flight longer than the idle timeout: %v", err)
	}
	idle := dial(t, addr)
	time.Sleep(time.Second)
	var resp flusspb.DatabaseExistsResponse
	if err := idle.Call(ctx, DatabaseExists, &flusspb.DatabaseExistsRequest{DatabaseName: proto.String("db")}, &resp); !errors.Is(err, ErrConnClosed) {
		t.Fatalf("idle connection: got %v, want it closed", err)
	}
}

// parkingService answers LIST_TABLES only when release is closed, off the request loop, as a
// FETCH_LOG long poll waits; parked counts the requests that reached the handler.
func parkingService(release <-chan struct{}, parked *atomic.Int64) *Service {
	svc := NewService(2)
	svc.Handle(ListTables, VersionRange{}, func(ctx context.Context, req *Request) (proto.Message, error) {
		var r flusspb.ListTablesRequest
		if err := req.Decode(&r); err != nil {
			return nil, err
		}
		parked.Add(1)
		return req.Defer(func() (proto.Message, error) {
			select {
			case <-release:
			case <-req.Context().Done():
			}
			return &flusspb.ListTablesResponse{}, nil
		})
	})
	return svc
}

func TestPipelinedDeferredRequestsAreBounded(t *testing.T) {
	release := make(chan struct{})
	var parked atomic.Int64
	lim := NewLimits(LimitsConfig{MaxInflightRequests: 1500})
	addr := serveOn(t, loopback(t), parkingService(release, &parked), ListenerConfig{Name: "FLUSS", Limits: lim}, nil)
	before := heapInUse()

	// Two clients pipeline 20,000 long polls each and never read an answer.
	const perClient = 20000
	body, _ := proto.Marshal(&flusspb.ListTablesRequest{DatabaseName: proto.String("fluss")})
	var conns []net.Conn
	waitParked := func(want int64) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for parked.Load() < want && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		time.Sleep(100 * time.Millisecond)
		if got := parked.Load(); got != want {
			t.Fatalf("%d requests reached handlers, want exactly %d", got, want)
		}
		if got := lim.InflightRequests(); got != int(want) {
			t.Fatalf("in flight %d, want %d", got, want)
		}
	}
	for i := range 2 {
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		conns = append(conns, nc)
		go func() {
			var buf []byte
			for i := range perClient {
				buf = append(buf, rawFrame(ListTables, 0, int32(i), body)...)
			}
			nc.Write(buf)
		}()
		// The first stops at the connection limit (1000), the second at the node limit (1500).
		waitParked([]int64{DefaultMaxConnInflightRequests, 1500}[i])
	}
	if grown := int64(heapInUse()) - int64(before); grown > 32<<20 {
		t.Fatalf("40,000 pipelined long polls grew the heap by %d MiB", grown>>20)
	}
	// Answers free the budgets and reading resumes.
	close(release)
	for _, nc := range conns {
		go io.Copy(io.Discard, nc)
	}
	deadline := time.Now().Add(20 * time.Second)
	for parked.Load() < 2*perClient && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if got := parked.Load(); got != 2*perClient {
		t.Fatalf("after release %d of %d requests were served", got, 2*perClient)
	}
}

func TestRequestBytesInFlightAreBounded(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	var parked atomic.Int64
	lim := NewLimits(LimitsConfig{MaxConnInflightBytes: 1 << 20})
	addr := serveOn(t, loopback(t), parkingService(release, &parked), ListenerConfig{Name: "FLUSS", Limits: lim}, nil)
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	// 64 KiB requests: 16 fit in the connection's 1 MiB.
	body, _ := proto.Marshal(&flusspb.ListTablesRequest{DatabaseName: proto.String(strings.Repeat("n", 64<<10))})
	go func() {
		for i := range 100 {
			if _, err := nc.Write(rawFrame(ListTables, 0, int32(i), body)); err != nil {
				return
			}
		}
	}()
	for start := time.Now(); parked.Load() < 15 && time.Since(start) < 10*time.Second; {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond)
	if got := parked.Load(); got < 15 || got > 16 {
		t.Fatalf("%d requests of 64 KiB read with 1 MiB allowed in flight", got)
	}
	if b := lim.InflightBytes(); b > 1<<20+64<<10 {
		t.Fatalf("%d bytes in flight, above the 1 MiB bound", b)
	}
}

func TestRequestEntriesAreBounded(t *testing.T) {
	svc := NewService(2)
	svc.Handle(ProduceLog, VersionRange{}, func(ctx context.Context, req *Request) (proto.Message, error) {
		var r flusspb.ProduceLogRequest
		if err := req.Decode(&r); err != nil {
			return nil, err
		}
		return &flusspb.ProduceLogResponse{}, nil
	})
	addr := serveOn(t, loopback(t), svc, ListenerConfig{Name: "FLUSS"}, nil)
	c := dial(t, addr)

	// A 6 MB PRODUCE_LOG with a million bucket entries, encoded by hand (building it as a Go
	// message would cost what the server must not spend).
	var entry []byte
	entry = protowire.AppendTag(entry, 2, protowire.VarintType)
	entry = protowire.AppendVarint(entry, 1)
	entry = protowire.AppendTag(entry, 3, protowire.BytesType)
	entry = protowire.AppendBytes(entry, nil)
	body := []byte{0x08, 0x01, 0x10, 0x01, 0x18, 0x01}
	for range 1_000_000 {
		body = protowire.AppendTag(body, 4, protowire.BytesType)
		body = protowire.AppendBytes(body, entry)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := c.CallRaw(context.Background(), ProduceLog, 0, body)
	runtime.ReadMemStats(&after)
	if ferr.CodeOf(err) != ferr.CorruptMessage || !strings.Contains(err.Error(), "entries") {
		t.Fatalf("got %v, want CORRUPT_MESSAGE naming the entry limit", err)
	}
	// The frame itself is copied a few times (client buffer, server buffer); decoding would
	// have allocated hundreds of MB.
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 64<<20 {
		t.Fatalf("refusing the request allocated %d MiB", alloc>>20)
	}
	// A request within the limit decodes.
	ok := &flusspb.ProduceLogRequest{Acks: proto.Int32(1), TableId: proto.Int64(1), TimeoutMs: proto.Int32(1)}
	for range 1000 {
		ok.BucketsReq = append(ok.BucketsReq, &flusspb.PbProduceLogReqForBucket{BucketId: proto.Int32(1), Records: []byte{}})
	}
	var resp flusspb.ProduceLogResponse
	if err := c.Call(context.Background(), ProduceLog, ok, &resp); err != nil {
		t.Fatal(err)
	}
}

func TestCountEntries(t *testing.T) {
	m := &flusspb.FetchLogRequest{MaxBytes: proto.Int32(1), FollowerServerId: proto.Int32(-1)}
	for range 3 {
		tr := &flusspb.PbFetchLogReqForTable{TableId: proto.Int64(1), ProjectionPushdownEnabled: proto.Bool(true), ProjectedFields: []int32{0, 1, 300}}
		for range 4 {
			tr.BucketsReq = append(tr.BucketsReq, &flusspb.PbFetchLogReqForBucket{BucketId: proto.Int32(1), FetchOffset: proto.Int64(0), MaxFetchBytes: proto.Int32(1)})
		}
		m.TablesReq = append(m.TablesReq, tr)
	}
	b, _ := proto.Marshal(m)
	// 3 tables + 12 buckets + 9 projected fields.
	if n := countEntries(b, m.ProtoReflect().Descriptor(), 0); n != 24 {
		t.Fatalf("countEntries = %d, want 24", n)
	}
	if n := countEntries(b, m.ProtoReflect().Descriptor(), 5); n <= 5 || n > 24 {
		t.Fatalf("countEntries with limit 5 = %d, want it to stop just past 5", n)
	}
}

func TestAuthenticationFailuresAreSlowedAndEndTheConnection(t *testing.T) {
	cfg := ListenerConfig{Name: "CLIENT", Auth: staticAuth{}, AuthFailureDelay: 100 * time.Millisecond, MaxAuthFailures: 3}
	addr := serveOn(t, loopback(t), echoService(), cfg, nil)
	ctx := context.Background()
	c := dial(t, addr)
	wrong := &flusspb.AuthenticateRequest{Protocol: proto.String("PLAIN"), Token: []byte("\x00u\x00nope")}
	for i := 1; i <= 3; i++ {
		start := time.Now()
		var ar flusspb.AuthenticateResponse
		if err := c.Call(ctx, Authenticate, wrong, &ar); ferr.CodeOf(err) != ferr.AuthenticateException {
			t.Fatalf("attempt %d: got %v", i, err)
		}
		if d := time.Since(start); d < 100*time.Millisecond {
			t.Fatalf("attempt %d answered after %v, before the failure delay", i, d)
		}
	}
	var ar flusspb.AuthenticateResponse
	right := &flusspb.AuthenticateRequest{Protocol: proto.String("PLAIN"), Token: []byte("\x00u\x00p")}
	if err := c.Call(ctx, Authenticate, right, &ar); !errors.Is(err, ErrConnClosed) {
		t.Fatalf("after 3 failures: got %v, want the connection closed", err)
	}
}

func TestReauthenticationIsRefused(t *testing.T) {
	addr := serveOn(t, loopback(t), echoService(), ListenerConfig{Name: "CLIENT", Auth: staticAuth{}}, nil)
	ctx := context.Background()
	c, err := Dial(ctx, addr, ClientConfig{Username: "u", Password: "p"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var ar flusspb.AuthenticateResponse
	// The Rust client's closing round (empty token) is answered.
	if err := c.Call(ctx, Authenticate, &flusspb.AuthenticateRequest{Protocol: proto.String("PLAIN"), Token: []byte{}}, &ar); err != nil {
		t.Fatalf("empty-token round after login: %v", err)
	}
	// New credentials, valid or not, are refused and the login stays.
	for _, tok := range []string{"\x00u\x00p", "\x00other\x00x"} {
		err := c.Call(ctx, Authenticate, &flusspb.AuthenticateRequest{Protocol: proto.String("PLAIN"), Token: []byte(tok)}, &ar)
		if ferr.CodeOf(err) != ferr.AuthenticateException || !strings.Contains(err.Error(), "re-authentication") {
			t.Fatalf("re-authentication with %q: got %v", tok, err)
		}
	}
	var resp flusspb.DatabaseExistsResponse
	if err := c.Call(ctx, DatabaseExists, &flusspb.DatabaseExistsRequest{DatabaseName: proto.String("db")}, &resp); err != nil {
		t.Fatalf("connection after refused re-authentication: %v", err)
	}
}

func TestAPIVersionsChecksItsVersion(t *testing.T) {
	c := dial(t, testServer(t, echoService(), ListenerConfig{Name: "FLUSS"}))
	for _, v := range []int16{-1, 1, 7} {
		if _, err := c.CallRaw(context.Background(), APIVersions, v, nil); ferr.CodeOf(err) != ferr.UnsupportedVersion {
			t.Errorf("API_VERSIONS v%d: got %v, want UNSUPPORTED_VERSION", v, err)
		}
	}
	if _, err := c.CallRaw(context.Background(), Authenticate, 3, nil); ferr.CodeOf(err) != ferr.UnsupportedVersion {
		t.Errorf("AUTHENTICATE v3: got %v, want UNSUPPORTED_VERSION", err)
	}
}

func TestErrorMessagesCarryNoServerPaths(t *testing.T) {
	svc := NewService(2)
	svc.Handle(DatabaseExists, VersionRange{}, func(ctx context.Context, req *Request) (proto.Message, error) {
		return nil, ferr.New(ferr.LogStorageException, "append to /var/lib/strom/tablet/log/7-0/00000000000000000000.log: no space left on device")
	})
	var logs syncBuffer
	addr := serveOn(t, loopback(t), svc, ListenerConfig{Name: "FLUSS"}, slog.New(slog.NewTextHandler(&logs, nil)))
	c := dial(t, addr)
	_, err := c.CallRaw(context.Background(), DatabaseExists, 0, nil)
	if ferr.CodeOf(err) != ferr.LogStorageException {
		t.Fatalf("got %v", err)
	}
	if msg := ferr.MessageOf(err); strings.Contains(msg, "/var/lib") || !strings.Contains(msg, "00000000000000000000.log: no space left") {
		t.Fatalf("client message %q", msg)
	}
	if !strings.Contains(logs.String(), "/var/lib/strom/tablet/log/7-0/00000000000000000000.log") {
		t.Fatalf("full path not logged:\n%s", logs.String())
	}
}

func TestScrubPaths(t *testing.T) {
	for in, want := range map[string]string{
		"open /data/strom/meta/x.db: permission denied": "open .../x.db: permission denied",
		"read \"/a/b/c\" failed":                        "read \".../c\" failed",
		"/root/seg.log":                                 ".../seg.log",
		"Table fluss/users does not exist":              "Table fluss/users does not exist",
		"see http://host/a/b":                           "see http://host/a/b",
		"ratio 1/2/3":                                   "ratio 1/2/3",
		"bucket /1 only":                                "bucket /1 only",
	} {
		if got, _ := scrubPaths(in); got != want {
			t.Errorf("scrubPaths(%q) = %q, want %q", in, got, want)
		}
	}
}

// reflectEntries counts what countEntries counts, on a decoded message.
func reflectEntries(m protoreflect.Message) int {
	n := 0
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.IsList():
			l := v.List()
			n += l.Len()
			if fd.Message() != nil {
				for i := range l.Len() {
					n += reflectEntries(l.Get(i).Message())
				}
			}
		case fd.Message() != nil && !fd.IsMap():
			n += 1 + reflectEntries(v.Message())
		}
		return true
	})
	return n
}

// FuzzCountEntries checks the entry count of request bodies against a decode: on any input it
// must not panic, and for a body that decodes, it must count what the decoded message holds
// (it may count more, for repeated occurrences of a singular message field, never less).
func FuzzCountEntries(f *testing.F) {
	seed := &flusspb.FetchLogRequest{MaxBytes: proto.Int32(1), FollowerServerId: proto.Int32(-1),
		TablesReq: []*flusspb.PbFetchLogReqForTable{{TableId: proto.Int64(1), ProjectionPushdownEnabled: proto.Bool(true), ProjectedFields: []int32{0, 200, 3},
			BucketsReq: []*flusspb.PbFetchLogReqForBucket{{BucketId: proto.Int32(1), FetchOffset: proto.Int64(0), MaxFetchBytes: proto.Int32(1)}}}}}
	b, _ := proto.Marshal(seed)
	f.Add(b)
	b, _ = proto.MarshalOptions{}.Marshal(&flusspb.ProduceLogRequest{Acks: proto.Int32(1), TableId: proto.Int64(1), TimeoutMs: proto.Int32(1),
		BucketsReq: []*flusspb.PbProduceLogReqForBucket{{BucketId: proto.Int32(0), Records: []byte{1, 2}}}})
	f.Add(b)
	f.Fuzz(func(t *testing.T, data []byte) {
		m := &flusspb.FetchLogRequest{}
		n := countEntries(data, m.ProtoReflect().Descriptor(), 0)
		if err := (proto.UnmarshalOptions{AllowPartial: true}).Unmarshal(data, m); err != nil {
			return
		}
		if want := reflectEntries(m.ProtoReflect()); n < want {
			t.Fatalf("countEntries = %d, the decoded message holds %d", n, want)
		}
	})
}
