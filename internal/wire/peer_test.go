package wire

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/clustertls"
	"github.com/stromdb/strom/proto/flusspb"
)

// internalService answers DATABASE_EXISTS with whether the request was internal.
func internalService() *Service {
	svc := NewService(2)
	svc.Handle(DatabaseExists, VersionRange{}, func(ctx context.Context, req *Request) (proto.Message, error) {
		return &flusspb.DatabaseExistsResponse{Exists: proto.Bool(req.IsInternal("FLUSS"))}, nil
	})
	return svc
}

func peerOf(t *testing.T, secret string) *clustertls.Peer {
	t.Helper()
	f, err := clustertls.Issue([]byte(secret), t.TempDir(), "m", nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err := clustertls.LoadPeer(f)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// On the internal listener with PeerTLS: a member's TLS connection is internal; a plaintext
// client is served but not internal (or refused before any request when PeerOnly); a TLS
// client of another secret, or without a certificate, is refused, with a WARN naming it.
func TestInternalListenerAuthenticatesPeers(t *testing.T) {
	member, stranger := peerOf(t, "the cluster's secret 0123456789"), peerOf(t, "some other cluster's secret 0123")
	exists := func(addr string, cfg ClientConfig) (bool, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		cc, err := Dial(ctx, addr, cfg)
		if err != nil {
			return false, err
		}
		defer cc.Close()
		var resp flusspb.DatabaseExistsResponse
		err = cc.Call(ctx, DatabaseExists, &flusspb.DatabaseExistsRequest{DatabaseName: proto.String("x")}, &resp)
		return resp.GetExists(), err
	}
	for _, peerOnly := range []bool{false, true} {
		var logs syncBuffer
		addr := serveOn(t, loopback(t), internalService(), ListenerConfig{Name: "FLUSS", PeerTLS: member.ServerConfig(), PeerOnly: peerOnly, AuthTimeout: 2 * time.Second},
			slog.New(slog.NewTextHandler(&logs, nil)))
		if internal, err := exists(addr, ClientConfig{TLS: member.ClientConfig()}); err != nil || !internal {
			t.Fatalf("peerOnly=%v: a member: internal=%v err=%v", peerOnly, internal, err)
		}
		internal, err := exists(addr, ClientConfig{})
		if peerOnly {
			if err == nil {
				t.Fatal("a plaintext client was served on a servers-only internal listener")
			}
		} else if err != nil || internal {
			t.Fatalf("a plaintext client on the shared internal listener: internal=%v err=%v", internal, err)
		}
		for name, cfg := range map[string]*tls.Config{
			"another secret's certificate": stranger.ClientConfig(),
			"no certificate":               {InsecureSkipVerify: true, MinVersion: tls.VersionTLS13},
		} {
			if _, err := exists(addr, ClientConfig{TLS: cfg}); err == nil {
				t.Errorf("peerOnly=%v: a TLS client with %s was served", peerOnly, name)
			}
		}
		deadline := time.Now().Add(2 * time.Second)
		for !strings.Contains(logs.String(), "without the cluster's credentials") && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if !strings.Contains(logs.String(), "without the cluster's credentials") || !strings.Contains(logs.String(), "remote=127.0.0.1") {
			t.Errorf("peerOnly=%v: no WARN with the peer's address:\n%s", peerOnly, logs.String())
		}
	}
	// Without PeerTLS the listener name alone decides, as before.
	addr := serveOn(t, loopback(t), internalService(), ListenerConfig{Name: "FLUSS"}, nil)
	if internal, err := exists(addr, ClientConfig{}); err != nil || !internal {
		t.Fatalf("plaintext internal listener: internal=%v err=%v", internal, err)
	}
}

// tlsCountingConn counts the writes that reach the connection.
type tlsCountingConn struct {
	net.Conn
	writes atomic.Int64
}

func (c *tlsCountingConn) Write(p []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(p)
}

// Under a server's TLS session the records of one buffered flush go out in one write, not
// one write per record, and every byte arrives, in order, by the time the write returns.
func TestTLSRecordsOfOneWriteAreCoalesced(t *testing.T) {
	member := peerOf(t, "the cluster's secret 0123456789")
	serverEnd, clientEnd := net.Pipe()
	defer serverEnd.Close()
	defer clientEnd.Close()
	under := &tlsCountingConn{Conn: serverEnd}
	rc := &recordCoalescer{Conn: under}
	srv := tls.Server(rc, member.ServerConfig())
	cli := tls.Client(clientEnd, member.ClientConfig())
	const size = 1 << 20
	want := make([]byte, size)
	for i := range want {
		want[i] = byte(i * 7)
	}
	got := make(chan []byte, 1)
	go func() {
		if err := cli.Handshake(); err != nil {
			got <- nil
			return
		}
		b := make([]byte, size)
		if _, err := io.ReadFull(cli, b); err != nil {
			got <- nil
			return
		}
		got <- b
	}()
	if err := srv.Handshake(); err != nil {
		t.Fatal(err)
	}
	rc.coalesce()
	handshakeWrites := under.writes.Load()
	w := bufio.NewWriterSize(flushingWriter{tc: srv, rc: rc}, 64<<10)
	for off := 0; off < size; off += 1000 {
		if _, err := w.Write(want[off:min(off+1000, size)]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if b := <-got; !bytes.Equal(b, want) {
		t.Fatalf("the client read %d bytes, not the %d written", len(b), size)
	}
	// 16 flushes of 64 KiB: 16 writes (a few more where a flush passes coalesceLimit), where
	// one write per record would be at least 64.
	if n := under.writes.Load() - handshakeWrites; n > 2*size/(64<<10) {
		t.Fatalf("%d writes for %d bytes in 64 KiB flushes, want at most %d", n, size, 2*size/(64<<10))
	}
}
