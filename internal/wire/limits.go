package wire

import (
	"context"
	"sync"
	"sync/atomic"
)

// Defaults of the limits a node places on its clients. docs/configuration.md lists them with
// their option names; docs/security.md states what they guarantee.
const (
	// DefaultMaxConnections bounds open client connections over all listeners of a node.
	DefaultMaxConnections = 4096
	// DefaultMaxConnInflightRequests bounds the requests of one connection that were read but
	// not yet answered, deferred long polls included.
	DefaultMaxConnInflightRequests = 1000
	// DefaultMaxConnInflightBytes bounds the request bytes of one connection that were read but
	// not yet answered. A single frame larger than this is still read when the connection has
	// nothing else in flight, so it must not be below the frame limit to be useful.
	DefaultMaxConnInflightBytes = 128 << 20
	// DefaultMaxInflightRequests bounds requests read but not answered over all connections.
	DefaultMaxInflightRequests = 20000
	// DefaultMaxInflightBytes bounds request bytes (and reserved response bytes) held over all
	// connections.
	DefaultMaxInflightBytes = 512 << 20
	// DefaultMaxRequestEntries bounds the repeated elements and nested messages of one request
	// body. It is above the largest bucket count of a table (max.bucket.num, 128000), so any
	// request about one table's buckets fits.
	DefaultMaxRequestEntries = 200000
	// decodedEntryCost is what one decoded entry is charged against the byte budgets, on top of
	// the frame's bytes: a nested Go protobuf message costs a few hundred bytes of heap.
	decodedEntryCost = 256
)

// LimitsConfig configures Limits. Zero fields take the defaults above; negative ones disable
// that limit.
type LimitsConfig struct {
	MaxConnections          int
	MaxConnInflightRequests int
	MaxConnInflightBytes    int64
	MaxInflightRequests     int
	MaxInflightBytes        int64
	MaxRequestEntries       int
}

// Limits is the resource accounting shared by every listener of a node: open connections,
// and requests and bytes held between reading a request and writing its answer. When a budget
// is exhausted the connection that wants more stops reading (TCP backpressure) until answers
// free it; it is never failed for it.
type Limits struct {
	cfg      LimitsConfig
	conns    atomic.Int64
	refused  atomic.Int64 // connections closed at accept because MaxConnections was reached
	requests *budget
	bytes    *budget
}

// NewLimits returns limits with cfg's values, defaults filled in.
func NewLimits(cfg LimitsConfig) *Limits {
	def := func(v, d int64) int64 {
		switch {
		case v == 0:
			return d
		case v < 0:
			return 0 // unlimited
		}
		return v
	}
	cfg.MaxConnections = int(def(int64(cfg.MaxConnections), DefaultMaxConnections))
	cfg.MaxConnInflightRequests = int(def(int64(cfg.MaxConnInflightRequests), DefaultMaxConnInflightRequests))
	cfg.MaxConnInflightBytes = def(cfg.MaxConnInflightBytes, DefaultMaxConnInflightBytes)
	cfg.MaxInflightRequests = int(def(int64(cfg.MaxInflightRequests), DefaultMaxInflightRequests))
	cfg.MaxInflightBytes = def(cfg.MaxInflightBytes, DefaultMaxInflightBytes)
	cfg.MaxRequestEntries = int(def(int64(cfg.MaxRequestEntries), DefaultMaxRequestEntries))
	return &Limits{
		cfg:      cfg,
		requests: newBudget(int64(cfg.MaxInflightRequests)),
		bytes:    newBudget(cfg.MaxInflightBytes),
	}
}

// Connections is the number of open connections counted against MaxConnections.
func (l *Limits) Connections() int { return int(l.conns.Load()) }

// InflightRequests is the number of requests read and not yet answered, over all connections.
func (l *Limits) InflightRequests() int { return int(l.requests.inUse()) }

// InflightBytes is the number of request (and reserved response) bytes held, over all
// connections.
func (l *Limits) InflightBytes() int64 { return l.bytes.inUse() }

// MaxConnections is the connection limit in force (0: unlimited).
func (l *Limits) MaxConnections() int { return l.cfg.MaxConnections }

// RefusedConnections is the number of connections closed at accept because the connection
// limit was reached, since the limits were made.
func (l *Limits) RefusedConnections() int64 { return l.refused.Load() }

// tryOpen counts a new connection, or reports that the limit is reached.
func (l *Limits) tryOpen() bool {
	if l.conns.Add(1) > int64(l.cfg.MaxConnections) && l.cfg.MaxConnections > 0 {
		l.conns.Add(-1)
		l.refused.Add(1)
		return false
	}
	return true
}

func (l *Limits) closed() { l.conns.Add(-1) }

// budget is a counting limit whose acquisitions wait until enough is free. An acquisition
// larger than the whole budget succeeds when nothing else is held, so every request that
// passed the frame limit makes progress. max <= 0 means unlimited (usage is still counted).
type budget struct {
	max  int64
	mu   sync.Mutex
	used int64
	wake chan struct{} // closed and replaced when usage drops
}

func newBudget(max int64) *budget { return &budget{max: max} }

func (b *budget) inUse() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// acquire takes n, waiting until it fits or ctx ends.
func (b *budget) acquire(ctx context.Context, n int64) error {
	for {
		b.mu.Lock()
		if b.max <= 0 || b.used == 0 || b.used+n <= b.max {
			b.used += n
			b.mu.Unlock()
			return nil
		}
		if b.wake == nil {
			b.wake = make(chan struct{})
		}
		wake := b.wake
		b.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// tryAcquire takes n if it fits now, without waiting.
func (b *budget) tryAcquire(n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.max <= 0 || b.used == 0 || b.used+n <= b.max {
		b.used += n
		return true
	}
	return false
}

// add takes n without waiting, possibly beyond max.
func (b *budget) add(n int64) {
	b.mu.Lock()
	b.used += n
	b.mu.Unlock()
}

// release returns n and wakes waiters.
func (b *budget) release(n int64) {
	if n == 0 {
		return
	}
	b.mu.Lock()
	b.used -= n
	if b.wake != nil {
		close(b.wake)
		b.wake = nil
	}
	b.mu.Unlock()
}
