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
	rc := &recordCoalescer{Conn: pc}
	tc := tls.Server(rc, c.cfg.PeerTLS)
	if err := tc.HandshakeContext(c.ctx); err != nil {
		return fmt.Errorf("TLS handshake: %w", err)
	}
	c.nc.SetDeadline(time.Time{})
	rc.coalesce()
	c.stream = tc
	c.w.Reset(flushingWriter{tc: tc, rc: rc})
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

// recordCoalescer sits under a server's TLS session and gathers the records of one write
// into one write(2). crypto/tls writes every record (at most 16 KiB of payload) with its
// own Write on the connection, so a 64 KiB flush of the response buffer — a follower's
// FETCH_LOG answer — cost four system calls, most of the TLS write time of a leader
// (docs/security.md, "What the TLS costs").
//
// Invariant: before coalesce (the handshake) every Write goes straight through; after it,
// bytes written are held in buf until flush, which flushingWriter calls after each write
// of the TLS session, so nothing the session wrote for a response outlives that write's
// return unsent. buf never holds more than coalesceLimit bytes (a Write that would pass
// it flushes first; one larger than it goes straight through after that).
type recordCoalescer struct {
	net.Conn
	mu   sync.Mutex
	on   bool
	buf  []byte
	werr error // the first write error: every later write and flush returns it
}

// coalesceLimit bounds buf: four full TLS records and their headers and tags.
const coalesceLimit = 4 * (16<<10 + 256)

func (r *recordCoalescer) coalesce() {
	r.mu.Lock()
	r.on = true
	r.mu.Unlock()
}

func (r *recordCoalescer) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.on {
		return r.Conn.Write(p)
	}
	if r.werr != nil {
		return 0, r.werr
	}
	if len(r.buf)+len(p) > coalesceLimit {
		if err := r.flushLocked(); err != nil {
			return 0, err
		}
		if len(p) > coalesceLimit {
			n, err := r.Conn.Write(p)
			if err != nil {
				r.werr = err
			}
			return n, err
		}
	}
	r.buf = append(r.buf, p...)
	return len(p), nil
}

// flush sends what Write held.
func (r *recordCoalescer) flush() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.flushLocked()
}

func (r *recordCoalescer) flushLocked() error {
	if r.werr != nil {
		return r.werr
	}
	if len(r.buf) == 0 {
		return nil
	}
	_, err := r.Conn.Write(r.buf)
	r.buf = r.buf[:0]
	if err != nil {
		r.werr = err
	}
	return err
}

// flushingWriter writes to a TLS session over a recordCoalescer and sends the records at
// the end of each write: the buffered writer of a serverConn writes through it.
type flushingWriter struct {
	tc *tls.Conn
	rc *recordCoalescer
}

func (w flushingWriter) Write(p []byte) (int, error) {
	n, err := w.tc.Write(p)
	if ferr := w.rc.flush(); err == nil {
		err = ferr
	}
	return n, err
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
