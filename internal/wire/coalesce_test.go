package wire

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/proto/flusspb"
)

// countingListener counts the Write calls made on the connections it accepts.
type countingListener struct {
	net.Listener
	writes *atomic.Int64
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return countingConn{Conn: c, writes: l.writes}, nil
}

type countingConn struct {
	net.Conn
	writes *atomic.Int64
}

func (c countingConn) Write(p []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(p)
}

// serveCounting serves svc and returns its address and the count of socket writes.
func serveCounting(t *testing.T, svc *Service) (string, *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	writes := new(atomic.Int64)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		Serve(ctx, countingListener{ln, writes}, svc, ListenerConfig{Name: "FLUSS"}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	}()
	t.Cleanup(func() { cancel(); <-done })
	return ln.Addr().String(), writes
}

// pipelined writes the frames of the given requests in one write and returns a reader of the
// answers.
func pipelined(t *testing.T, addr string, keys []APIKey, bodies []proto.Message) (net.Conn, *bufio.Reader) {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	var buf []byte
	for i, k := range keys {
		start := len(buf)
		buf = AppendRequestHeader(buf, RequestHeader{APIKey: k, RequestID: int32(i)})
		buf, err = proto.MarshalOptions{}.MarshalAppend(buf, bodies[i])
		if err != nil {
			t.Fatal(err)
		}
		FinishFrame(buf[start:])
	}
	if _, err := nc.Write(buf); err != nil {
		t.Fatal(err)
	}
	return nc, bufio.NewReader(nc)
}

func readResponseID(t *testing.T, r *bufio.Reader) int32 {
	t.Helper()
	payload, err := ReadFrame(r, nil, 1, DefaultMaxFrameSize)
	if err != nil {
		t.Fatal(err)
	}
	h, _, err := ParseResponseHeader(payload)
	if err != nil {
		t.Fatal(err)
	}
	return h.RequestID
}

// Pipelined requests of a quick API are answered in one socket write, in order.
func TestPipelinedQuickRequestsShareAWrite(t *testing.T) {
	svc := echoService()
	svc.MarkQuick(DatabaseExists)
	addr, writes := serveCounting(t, svc)
	const n = 8
	keys := make([]APIKey, n)
	bodies := make([]proto.Message, n)
	for i := range keys {
		keys[i], bodies[i] = DatabaseExists, &flusspb.DatabaseExistsRequest{DatabaseName: proto.String("db")}
	}
	nc, r := pipelined(t, addr, keys, bodies)
	nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	for i := range n {
		if id := readResponseID(t, r); id != int32(i) {
			t.Fatalf("response %d has request id %d", i, id)
		}
	}
	// All n frames arrive in one segment on loopback, so the server reads them at once.
	if got := writes.Load(); got != 1 {
		t.Errorf("%d pipelined quick requests answered in %d socket writes, want 1", n, got)
	}
}

// A response is not held back for a following request of an API not marked quick: it goes
// out while that request's handler still runs.
func TestResponseNotHeldForSlowRequest(t *testing.T) {
	svc := echoService()
	svc.MarkQuick(DatabaseExists)
	release := make(chan struct{})
	svc.Handle(TableExists, VersionRange{}, func(ctx context.Context, req *Request) (proto.Message, error) {
		<-release // blocks the connection's loop, as a long synchronous handler does
		return &flusspb.TableExistsResponse{Exists: proto.Bool(true)}, nil
	})
	addr, _ := serveCounting(t, svc)
	defer close(release)
	nc, r := pipelined(t, addr, []APIKey{DatabaseExists, TableExists},
		[]proto.Message{&flusspb.DatabaseExistsRequest{DatabaseName: proto.String("db")}, &flusspb.TableExistsRequest{TablePath: &flusspb.PbTablePath{DatabaseName: proto.String("db"), TableName: proto.String("t")}}})
	nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	if id := readResponseID(t, r); id != 0 {
		t.Fatalf("first response has request id %d", id)
	}
}

// Calls made while another call's write is under way are written together, in one write,
// once it is done; every call gets its own answer.
func TestClientCallsShareWrites(t *testing.T) {
	clientEnd, serverEnd := net.Pipe() // a Write returns only once the other end has read it all
	writes := new(atomic.Int64)
	c := &ClientConn{nc: countingConn{Conn: clientEnd, writes: writes}, maxResp: DefaultMaxFrameSize,
		pending: make(map[int32]chan clientResult)}
	go c.readLoop()
	defer c.Close()
	defer serverEnd.Close()

	const calls = 4
	errs := make(chan error, calls)
	call := func() {
		_, err := c.CallRaw(context.Background(), DatabaseExists, 0, []byte{})
		errs <- err
	}
	go call() // blocks in its write until the server end reads
	waitFor(t, func() bool { c.qmu.Lock(); defer c.qmu.Unlock(); return c.writing })
	for range calls - 1 {
		go call()
	}
	// The other calls queue behind the write under way.
	waitFor(t, func() bool {
		c.qmu.Lock()
		defer c.qmu.Unlock()
		return len(c.out) == (calls-1)*(4+RequestHeaderSize)
	})
	r := bufio.NewReader(serverEnd)
	for range calls {
		h, ok := readRequest(r)
		if !ok {
			t.Fatal("cannot read request")
		}
		writeResponse(t, serverEnd, responseSuccess, h.RequestID, &flusspb.DatabaseExistsResponse{Exists: proto.Bool(true)})
	}
	for range calls {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if got := writes.Load(); got != 2 {
		t.Errorf("%d calls made %d socket writes, want 2 (the first, then the rest together)", calls, got)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached within 5s")
		}
		time.Sleep(time.Millisecond)
	}
}

// A stream of pipelined quick requests is answered in writes of at most maxHeldResponses
// responses: the first answers do not wait for the whole read buffer to be served.
func TestHeldResponsesAreBounded(t *testing.T) {
	svc := echoService()
	svc.MarkQuick(DatabaseExists)
	addr, writes := serveCounting(t, svc)
	const n = 4 * maxHeldResponses
	keys := make([]APIKey, n)
	bodies := make([]proto.Message, n)
	for i := range keys {
		keys[i], bodies[i] = DatabaseExists, &flusspb.DatabaseExistsRequest{DatabaseName: proto.String("db")}
	}
	nc, r := pipelined(t, addr, keys, bodies)
	nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	for i := range n {
		if id := readResponseID(t, r); id != int32(i) {
			t.Fatalf("response %d has request id %d", i, id)
		}
	}
	if got := writes.Load(); got < n/maxHeldResponses {
		t.Errorf("%d pipelined requests answered in %d writes, want at least %d", n, got, n/maxHeldResponses)
	}
}
