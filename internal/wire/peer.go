package wire

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// tlsHandshakeRecord is the first byte of every TLS connection (a handshake record). A Fluss
// frame starting with it would announce at least 0x16000000 bytes (352 MiB), above every
// frame limit, so the first byte tells a peer's TLS from a client's Fluss frame unambiguously.
const tlsHandshakeRecord = 0x16

// errClosedSilently: the peer closed the connection before sending a byte.
var errClosedSilently = errors.New("closed before its first byte")

// errNotPeer refuses a plaintext connection on a listener reserved for the servers.
var errNotPeer = errors.New("the connection did not start a TLS handshake, and this listener serves only the cluster's servers (mutual TLS from cluster.secret-file)")

// admitPeer decides, before any request is read, what a connection on the internal listener
// is: a member (its TLS handshake with a cluster certificate completes: c.stream becomes the
// TLS session and its requests are internal), an ordinary client (plaintext, unless
// PeerOnly), or refused (an error; the caller closes it). The first byte must arrive, and the
// handshake complete, within the authentication timeout (a plaintext client's first frame
// within the idle timeout).
func (c *serverConn) admitPeer() error {
	wait := c.cfg.AuthTimeout
	if !c.cfg.PeerOnly && c.cfg.IdleTimeout > wait {
		wait = c.cfg.IdleTimeout
	}
	if wait > 0 {
		c.nc.SetReadDeadline(time.Now().Add(wait))
	}
	var first [1]byte
	if _, err := io.ReadFull(c.nc, first[:]); err != nil {
		if errors.Is(err, io.EOF) {
			return errClosedSilently
		}
		return fmt.Errorf("waiting for the first byte: %w", err)
	}
	pc := &prefixConn{Conn: c.nc, prefix: first[:]}
	if first[0] != tlsHandshakeRecord {
		if c.cfg.PeerOnly {
			return errNotPeer
		}
		c.nc.SetReadDeadline(time.Time{})
		c.stream = pc
		return nil
	}
	if c.cfg.AuthTimeout > 0 {
		c.nc.SetDeadline(time.Now().Add(c.cfg.AuthTimeout))
	}
	tc := tls.Server(pc, c.cfg.PeerTLS)
	if err := tc.HandshakeContext(c.ctx); err != nil {
		return fmt.Errorf("TLS handshake: %w", err)
	}
	c.nc.SetDeadline(time.Time{})
	c.stream = tc
	c.w.Reset(tc)
	c.sendfile = false // the bytes are encrypted in user space
	c.unproven = false
	c.authenticated = true // a member's certificate is its login (no SASL between servers)
	return nil
}

// prefixConn is a connection whose first bytes were read already: Read returns them first.
type prefixConn struct {
	net.Conn
	prefix []byte
}

func (p *prefixConn) Read(b []byte) (int, error) {
	if len(p.prefix) > 0 {
		n := copy(b, p.prefix)
		p.prefix = p.prefix[n:]
		return n, nil
	}
	return p.Conn.Read(b)
}

// everySecond allows one event a second (rate-limited log lines); a nil one allows all.
type everySecond struct {
	mu   sync.Mutex
	last time.Time
}

func (e *everySecond) allow() bool {
	if e == nil {
		return true
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if now := time.Now(); now.Sub(e.last) >= time.Second {
		e.last = now
		return true
	}
	return false
}

// dialTLS starts TLS on nc as a client within ctx.
func dialTLS(ctx context.Context, nc net.Conn, cfg *tls.Config) (net.Conn, error) {
	tc := tls.Client(nc, cfg)
	if err := tc.HandshakeContext(ctx); err != nil {
		return nil, err
	}
	return tc, nil
}
