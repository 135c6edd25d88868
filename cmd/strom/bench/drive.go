package bench

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stromdb/strom/internal/wire"
)

// prepared is one fully encoded request and what it carries.
type prepared struct {
	addr  string // tablet server to send it to
	body  []byte // protobuf request body
	rows  int64  // rows (or keys) it carries
	bytes int64  // record bytes it carries
	raw   int64  // uncompressed value bytes of its rows
	want  int    // lookup: values expected in the answer
}

// checkFunc decodes and verifies one response body, adding any mode-specific counts to t.
type checkFunc func(body []byte, req *prepared, t *tally) error

// drive sends reqs with cfg.Concurrency workers, each keeping one request in flight, and
// times the whole. Workers stop taking requests once cfg.MaxDuration has passed (truncated
// is then true); requests already sent are awaited. The first error stops every worker.
func drive(ctx context.Context, cfg *Config, servers []string, key wire.APIKey, reqs []prepared, check checkFunc) (t tally, elapsed time.Duration, truncated bool, err error) {
	workers := min(cfg.Concurrency, max(len(reqs), 1))
	p, err := dialPool(ctx, cfg, workers, servers)
	if err != nil {
		return t, 0, false, err
	}
	defer p.close()
	versions := map[string]int16{}
	for addr, c := range p.conns[0] {
		if versions[addr], err = c.Version(key); err != nil {
			return t, 0, false, fmt.Errorf("%s on %s: %w", key, addr, err)
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		next     atomic.Int64
		stopped  atomic.Bool
		firstErr error
		errOnce  sync.Once
		wg       sync.WaitGroup
		start    = make(chan struct{})
	)
	tallies := make([]tally, workers)
	for w := range workers {
		tallies[w].lat = make([]time.Duration, 0, len(reqs)/workers+1)
	}
	var total int64
	for i := range reqs {
		total += reqs[i].rows
	}
	bar := cfg.startProgress(key.String(), total)
	defer finish(bar)
	var deadline time.Time
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tl := &tallies[w]
			<-start
			for !stopped.Load() {
				i := next.Add(1) - 1
				if i >= int64(len(reqs)) {
					return
				}
				if time.Now().After(deadline) {
					stopped.Store(true)
					return
				}
				r := &reqs[i]
				t0 := time.Now()
				body, err := p.conns[w][r.addr].CallRaw(ctx, key, versions[r.addr], r.body)
				if err == nil {
					err = check(body, r, tl)
				}
				if err != nil {
					errOnce.Do(func() { firstErr = fmt.Errorf("%s request %d: %w", key, i, err) })
					stopped.Store(true)
					cancel()
					return
				}
				tl.lat = append(tl.lat, time.Since(t0))
				tl.rows += r.rows
				tl.bytes += r.bytes
				tl.raw += r.raw
				tl.requests++
				advance(bar, r.rows, r.bytes)
			}
		}()
	}
	clock := startCPU(cfg)
	t0 := time.Now()
	deadline = t0.Add(cfg.MaxDuration)
	close(start)
	wg.Wait()
	elapsed = time.Since(t0)
	clock.stop(&t)
	if firstErr != nil {
		return t, elapsed, false, firstErr
	}
	for w := range tallies {
		t.merge(&tallies[w])
	}
	return t, elapsed, t.requests < int64(len(reqs)), nil
}
