package wire

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"sync"
	"time"
)

// Admission for connection loops other than Serve's (the Kafka listeners): the same node-wide
// connection and in-flight budgets, the same accept retry on EMFILE, and the same rate-limited
// refusal, so one Limits bounds every client of a node whatever protocol it speaks.

// Admit charges one request of n bytes to the node-wide in-flight budgets, waiting until they
// fit or ctx ends; release gives them back once the request is answered.
func (l *Limits) Admit(ctx context.Context, n int64) (release func(), err error) {
	if err := l.requests.acquire(ctx, 1); err != nil {
		return nil, err
	}
	if err := l.bytes.acquire(ctx, n); err != nil {
		l.requests.release(1)
		return nil, err
	}
	var once sync.Once
	return func() { once.Do(func() { l.bytes.release(n); l.requests.release(1) }) }, nil
}

// LimitedListener wraps ln so that its Accept counts connections against l (closing the
// connections beyond MaxConnections at once, with a WARN at most once a second) and retries
// accept errors (EMFILE and the like) with backoff instead of returning them. Accept returns
// an error only once ln is closed. A returned connection's Close gives its slot back.
func LimitedListener(ln net.Listener, l *Limits, log *slog.Logger) net.Listener {
	return &limitedListener{Listener: ln, limits: l, log: log}
}

type limitedListener struct {
	net.Listener
	limits      *Limits
	log         *slog.Logger
	lastRefusal time.Time // touched only by the accepting goroutine
}

func (ll *limitedListener) Accept() (net.Conn, error) {
	var backoff time.Duration
	for {
		nc, err := ll.Listener.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil, err
			}
			backoff = min(max(2*backoff, minAcceptBackoff), maxAcceptBackoff)
			ll.log.Error("accept failed; retrying", "err", err, "retry_in", backoff)
			time.Sleep(backoff)
			continue
		}
		if backoff > 0 {
			ll.log.Info("accepting connections again")
		}
		if !ll.limits.tryOpen() {
			if time.Since(ll.lastRefusal) >= time.Second {
				ll.log.Warn("connection limit reached; refusing new connections", "limit", ll.limits.cfg.MaxConnections,
					"refused_total", ll.limits.RefusedConnections(), "remote", nc.RemoteAddr().String())
				ll.lastRefusal = time.Now()
			}
			nc.Close()
			continue
		}
		return &limitedConn{Conn: nc, limits: ll.limits}, nil
	}
}

// limitedConn holds one slot of the connection limit until its first Close.
type limitedConn struct {
	net.Conn
	limits *Limits
	once   sync.Once
}

func (c *limitedConn) Close() error {
	c.once.Do(c.limits.closed)
	return c.Conn.Close()
}
