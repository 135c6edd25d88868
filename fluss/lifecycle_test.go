package fluss_test

import (
	"context"
	"errors"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stromdb/strom/fluss"
	"github.com/stromdb/strom/fluss/internal/testserver"
	"github.com/stromdb/strom/server/config"
)

func TestSASL(t *testing.T) {
	needsStrom(t)
	srv := testserver.Start(t, func(c *config.Config) {
		c.SecurityProtocolMap = map[string]string{"FLUSS": "SASL"}
		c.PlainJAASConfig = `org.apache.fluss.security.auth.sasl.plain.PlainLoginModule required user_admin="secret";`
	})
	ctx := t.Context()
	good := fluss.Config{BootstrapServers: srv.Bootstrap, SecurityProtocol: "sasl", SASLUsername: "admin", SASLPassword: "secret"}
	conn, err := fluss.Connect(ctx, good)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Admin().ListDatabases(ctx); err != nil {
		t.Fatal(err)
	}
	bad := good
	bad.SASLPassword = "wrong"
	_, err = fluss.Connect(ctx, bad)
	mustCode(t, err, fluss.ErrAuthenticate)
}

// After Close, no goroutine of the client (writers, scanners, connections) is left.
func TestNoGoroutineLeakAfterClose(t *testing.T) {
	srv := testserver.Start(t, nil)
	ctx := t.Context()
	base := clientGoroutines()
	conn, err := fluss.Connect(ctx, fluss.Config{BootstrapServers: srv.Bootstrap})
	if err != nil {
		t.Fatal(err)
	}
	tbl := createTable(t, ctx, conn, "leak", logDesc(2))
	w, err := tbl.NewAppend().CreateWriter()
	if err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		if _, err := w.Append(ctx, fluss.Row{int32(i), "x", 1.0}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	pending, err := w.Append(ctx, fluss.Row{int32(99), "y", 2.0})
	if err != nil {
		t.Fatal(err)
	}
	sc, err := tbl.NewScan().CreateLogScanner()
	if err != nil {
		t.Fatal(err)
	}
	if err := sc.Subscribe(ctx, 0, fluss.EarliestOffset); err != nil {
		t.Fatal(err)
	}
	if _, err := sc.Poll(ctx, 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if open := clientGoroutines(); open <= base {
		t.Fatalf("%d client goroutines with a connection, writer and scanner open, %d before: the count misses the client", open, base)
	}
	conn.Close()
	// The pending write either made it before Close or failed with ErrClosed.
	if err := pending.Wait(ctx); err != nil && !errors.Is(err, fluss.ErrClosed) {
		t.Fatalf("pending write: %v", err)
	}
	if _, err := w.Append(ctx, fluss.Row{int32(1), "z", 0.0}); !errors.Is(err, fluss.ErrClosed) {
		t.Fatalf("Append after Close = %v", err)
	}
	var n int
	for range 100 {
		if n = clientGoroutines(); n <= base {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	buf := make([]byte, 1<<20)
	t.Fatalf("%d client goroutines after Close, %d before Connect\n%s", n, base, buf[:runtime.Stack(buf, true)])
}

// serverFrames mark a goroutine of the in-process test server, whose own background work
// (etcd's file purges, the scrubber, connection handlers winding down) comes and goes on its
// schedule and is not the client's to leak.
var serverFrames = []string{
	"github.com/stromdb/strom/server", "go.etcd.io/", "github.com/cockroachdb/pebble",
	"github.com/stromdb/strom/internal/wire.(*serverConn)", "github.com/stromdb/strom/internal/wire.(*Server)",
	"google.golang.org/grpc",
}

// clientGoroutines counts the goroutines of this process that run no frame of the test server.
func clientGoroutines() int {
	buf := make([]byte, 8<<20)
	buf = buf[:runtime.Stack(buf, true)]
	n := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.TrimSpace(g) == "" {
			continue
		}
		server := false
		for _, f := range serverFrames {
			if strings.Contains(g, f) {
				server = true
				break
			}
		}
		if !server {
			n++
		}
	}
	return n
}

// A full buffer blocks Append (backpressure) until the context ends or space frees up.
func TestBackpressureAndCancellation(t *testing.T) {
	ctx := t.Context()
	conn, err := fluss.Connect(ctx, fluss.Config{
		BootstrapServers: cluster(t), WriterBufferMemorySize: 1, WriterBatchTimeout: time.Hour,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	tbl := createTable(t, ctx, conn, "bp", logDesc(1))
	w, err := tbl.NewAppend().CreateWriter()
	if err != nil {
		t.Fatal(err)
	}
	// With a 1-byte buffer every Append waits for the previous batch to be acknowledged; the
	// sender ships batches early under memory pressure despite the one-hour linger.
	var last *fluss.WriteResult
	for i := range 20 {
		if last, err = w.Append(ctx, fluss.Row{int32(i), "x", 1.0}); err != nil {
			t.Fatal(err)
		}
	}
	// The last batch lingers (an hour) until flushed.
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := last.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	// A cancelled context aborts waiting.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := last.Wait(cctx); err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	sc, err := tbl.NewScan().CreateLogScanner()
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	if err := sc.Subscribe(ctx, 0, fluss.EarliestOffset); err != nil {
		t.Fatal(err)
	}
	if _, err := sc.Poll(cctx, time.Minute); !errors.Is(err, context.Canceled) {
		t.Fatalf("Poll with cancelled context = %v", err)
	}
	pollAll(t, ctx, sc, 20)
}

// A server that accepts connections but never answers (a paused process) costs a caller no
// more than its own deadline: the dial runs on its own, bounded by ConnectTimeout, and the
// caller stops waiting for it when its context ends. Close aborts the dial instead of
// waiting it out.
func TestSilentServerCostsACallerOnlyItsDeadline(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var mu sync.Mutex
	var held []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c) // accepted, never answered
			mu.Unlock()
		}
	}()
	defer func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range held {
			c.Close()
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = fluss.Connect(ctx, fluss.Config{BootstrapServers: ln.Addr().String(), ConnectTimeout: time.Minute})
	if err == nil {
		t.Fatal("connected to a server that never answers")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("Connect with a 200 ms deadline returned after %s (%v)", d, err)
	}
}
