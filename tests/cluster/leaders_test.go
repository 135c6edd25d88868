package cluster_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stromdb/strom/fluss"
	"github.com/stromdb/strom/tests/clustertest"
)

// leaderlessBound is the documented bound (docs/cluster.md, "Timings") on how long a bucket
// stays without a live leader after its leader's server dies: the server's lease runs out
// within tablet-server.lease-ttl of its last keepalive, but a lease can be renewed once by a
// change of etcd leader (the victim may lead etcd too), so twice the lease TTL, plus the
// election and the active coordinator's takeover when the victim was also the coordinator
// (whose lease runs alongside), and a few seconds for a loaded machine. The scenarios run with
// 2 s leases.
const leaderlessBound = 2*2*time.Second + 3*time.Second

// leaderWatch polls the bucket leaders of tables, as a client sees them in metadata, and
// records for each bucket the longest time it had no live leader: no leader named, or one
// the test has taken down (killed, paused).
type leaderWatch struct {
	c      *clustertest.Cluster
	conn   *fluss.Connection // replaced, bootstrapped from the nodes up, when a poll fails
	tables []*fluss.Table

	mu     sync.Mutex
	down   map[int32]bool
	last   map[watchedBucket]int32     // leader last seen live
	since  map[watchedBucket]time.Time // start of the current leaderless spell
	worst  time.Duration
	worstB watchedBucket
	polls  int

	stop chan struct{}
	done chan struct{}
}

type watchedBucket struct {
	table  string
	bucket int32
}

// watchLeaders starts polling every 50 ms until the returned watch is ended. It has a
// connection of its own: a poll that fails (the node asked may be the one down, and a paused
// one never answers) reconnects through the nodes that are up, so the watch measures the
// cluster, not one client's wait for a silent server.
func watchLeaders(ctx context.Context, c *clustertest.Cluster, tables ...*fluss.Table) *leaderWatch {
	w := &leaderWatch{
		c: c, tables: tables,
		down: map[int32]bool{}, last: map[watchedBucket]int32{}, since: map[watchedBucket]time.Time{},
		stop: make(chan struct{}), done: make(chan struct{}),
	}
	go func() {
		defer close(w.done)
		defer func() {
			if w.conn != nil {
				w.conn.Close()
			}
		}()
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			w.poll(ctx)
			select {
			case <-w.stop:
				return
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return w
}

// markDown records that server id was taken down now: the buckets it was last seen leading
// are leaderless from this moment (not from the next poll).
func (w *leaderWatch) markDown(id int32) {
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.down[id] = true
	for b, l := range w.last {
		if l == id && w.since[b].IsZero() {
			w.since[b] = now
		}
	}
}

// markUp records that server id serves again.
func (w *leaderWatch) markUp(id int32) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.down, id)
}

// reconnect replaces the watch's connection with one bootstrapped from the nodes not down.
func (w *leaderWatch) reconnect(ctx context.Context) {
	if w.conn != nil {
		w.conn.Close()
		w.conn = nil
	}
	w.mu.Lock()
	var addrs []string
	for _, n := range w.c.Nodes {
		if !w.down[n.ID] {
			addrs = append(addrs, n.CoordinatorAddr)
		}
	}
	w.mu.Unlock()
	cctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	conn, err := fluss.Connect(cctx, fluss.Config{BootstrapServers: strings.Join(addrs, ","), RequestTimeout: time.Second})
	if err == nil {
		w.conn = conn
	}
}

func (w *leaderWatch) poll(ctx context.Context) {
	for _, table := range w.tables {
		if w.conn == nil {
			if w.reconnect(ctx); w.conn == nil {
				return // no node answered; the next poll tries again
			}
		}
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		leaders, err := w.conn.Admin().BucketLeaders(pctx, table.Path(), "")
		cancel()
		if err != nil {
			w.reconnect(ctx) // the node asked may be the one down
			continue
		}
		now := time.Now()
		w.mu.Lock()
		w.polls++
		for b := range table.Info().NumBuckets() {
			key := watchedBucket{table.Path().String(), b}
			n, ok := leaders[b]
			live := ok && !w.down[n.ID]
			switch {
			case live:
				w.last[key] = n.ID
				if s := w.since[key]; !s.IsZero() {
					w.record(key, now.Sub(s))
					delete(w.since, key)
				}
			case w.since[key].IsZero():
				w.since[key] = now
			}
		}
		w.mu.Unlock()
	}
}

func (w *leaderWatch) record(b watchedBucket, d time.Duration) {
	if d > w.worst {
		w.worst, w.worstB = d, b
	}
}

// end stops polling and fails t if a bucket went without a live leader for longer than
// bound (a spell still running counts up to now).
func (w *leaderWatch) end(t *testing.T, bound time.Duration) {
	t.Helper()
	close(w.stop)
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	now := time.Now()
	for b, s := range w.since {
		w.record(b, now.Sub(s))
	}
	if w.polls == 0 {
		t.Fatal("leader watch: no metadata answer at all")
	}
	if w.worst == 0 {
		t.Logf("every bucket had a live leader at every poll (%d polls)", w.polls)
		return
	}
	t.Logf("longest time a bucket had no live leader: %s (%s bucket %d; bound %s)", w.worst.Round(time.Millisecond), w.worstB.table, w.worstB.bucket, bound)
	if w.worst > bound {
		t.Fatalf("%s bucket %d had no live leader for %s, beyond the documented bound %s", w.worstB.table, w.worstB.bucket, w.worst.Round(time.Millisecond), bound)
	}
}
