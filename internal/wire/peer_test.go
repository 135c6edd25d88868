package wire

import (
	"context"
	"crypto/tls"
	"log/slog"
	"strings"
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
