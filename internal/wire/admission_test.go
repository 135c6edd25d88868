package wire

import (
	"context"
	"io"
	"log/slog"
	"net"
	"testing"
)

// LimitedListener holds connections to the shared limit: one past it is closed at once and
// counted, and closing a held one frees its slot for the next.
func TestLimitedListenerSharesTheConnectionLimit(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	limits := NewLimits(LimitsConfig{MaxConnections: 2})
	ll := LimitedListener(ln, limits, slog.New(slog.NewTextHandler(io.Discard, nil)))
	defer ll.Close()
	accepted := make(chan net.Conn, 4)
	go func() {
		for {
			c, err := ll.Accept()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- c
		}
	}()
	var clients []net.Conn
	for range 3 {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		clients = append(clients, c)
	}
	first, second := <-accepted, <-accepted
	// The third is refused: the server closes it without a word.
	if _, err := clients[2].Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("third connection: read %v, want EOF", err)
	}
	if limits.Connections() != 2 || limits.RefusedConnections() != 1 {
		t.Fatalf("%d connections, %d refused; want 2 and 1", limits.Connections(), limits.RefusedConnections())
	}
	first.Close()
	first.Close() // a second Close frees nothing more
	if limits.Connections() != 1 {
		t.Fatalf("%d connections after closing one of two", limits.Connections())
	}
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	third := <-accepted
	defer third.Close()
	defer second.Close()
	if limits.Connections() != 2 {
		t.Fatalf("%d connections, want 2", limits.Connections())
	}
}

// Admit charges the node-wide budgets until released, and waits while they are full.
func TestAdmitChargesTheNodeBudgets(t *testing.T) {
	limits := NewLimits(LimitsConfig{MaxInflightRequests: 1})
	release, err := limits.Admit(context.Background(), 100)
	if err != nil {
		t.Fatal(err)
	}
	if limits.InflightRequests() != 1 || limits.InflightBytes() != 100 {
		t.Fatalf("in flight %d requests, %d bytes", limits.InflightRequests(), limits.InflightBytes())
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := limits.Admit(ctx, 1); err == nil {
		t.Fatal("a second request was admitted past max-inflight-requests 1")
	}
	release()
	release()
	if limits.InflightRequests() != 0 || limits.InflightBytes() != 0 {
		t.Fatalf("after release: %d requests, %d bytes", limits.InflightRequests(), limits.InflightBytes())
	}
}
