package bench

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stromdb/strom/internal/wire"
)

// mixedReq is one request of the mixed workload: a PUT_KV (write) or a LOOKUP.
type mixedReq struct {
	p     *prepared
	write bool
}

// interleave spreads lookups evenly among writes, so that both kinds are in flight for the
// whole timed section: request i of the result is a write whenever the writes issued so far
// fall behind their share.
func interleave(writes, lookups []prepared) []mixedReq {
	out := make([]mixedReq, 0, len(writes)+len(lookups))
	w, l := 0, 0
	for w < len(writes) || l < len(lookups) {
		// write next if its share of the output so far is behind its share of the total
		if l == len(lookups) || (w < len(writes) && w*(len(writes)+len(lookups)) <= len(out)*len(writes)) {
			out = append(out, mixedReq{p: &writes[w], write: true})
			w++
		} else {
			out = append(out, mixedReq{p: &lookups[l]})
			l++
		}
	}
	return out
}

// runMixed updates every loaded key again (all columns, new values) while looking up random
// keys, over the same connections: cfg.Concurrency workers take requests from one list in
// which LOOKUPs are spread evenly among the PUT_KVs. It measures whether reads wait behind
// writes. The Result's rows/s are the written rows; its QPS and latency percentiles are the
// lookups'; WriteP50Ms/WriteP99Ms are the PUT_KVs' latencies.
func runMixed(ctx context.Context, s *session) (Result, error) {
	cfg := s.cfg
	t, err := s.table(ctx, true)
	if err != nil {
		return Result{}, err
	}
	if t.loaded < cfg.Rows {
		return Result{}, fmt.Errorf("mixed: the primary-key table holds %d of the %d keys (run upsert first)", t.loaded, cfg.Rows)
	}
	writes, err := prepareKv(cfg, t, kvWrite{seed: cfg.Seed + mixedSeedOffset})
	if err != nil {
		return Result{}, fmt.Errorf("mixed: prepare writes: %w", err)
	}
	lookups, err := prepareLookup(cfg, t, t.loaded)
	if err != nil {
		return Result{}, fmt.Errorf("mixed: prepare lookups: %w", err)
	}
	reqs := interleave(writes, lookups)
	wt, lt, elapsed, truncated, err := driveMixed(ctx, cfg, t.servers, reqs)
	if err != nil {
		return Result{}, fmt.Errorf("mixed: %w", err)
	}
	if lt.misses > 0 {
		return Result{}, fmt.Errorf("mixed: %d lookups found no row for a written key", lt.misses)
	}
	wr := wt.result(ModeMixed, elapsed)
	lr := lt.result(ModeMixed, elapsed)
	r := lr
	r.Rows, r.RowsPerSec, r.Bytes, r.MBPerSec, r.RawBytes, r.RawMBPerSec = wr.Rows, wr.RowsPerSec, wr.Bytes, wr.MBPerSec, wr.RawBytes, wr.RawMBPerSec
	r.Requests = wr.Requests + lr.Requests
	r.WriteP50Ms, r.WriteP99Ms = wr.P50Ms, wr.P99Ms
	r.ServerCPUSeconds = wr.ServerCPUSeconds // of the lookups and the writes together
	r.Truncated = truncated
	r.fill(cfg, t)
	r.BatchRows = cfg.BatchRows
	r.LookupBatch = cfg.LookupBatch
	return r, nil
}

// driveMixed is drive for a list of PUT_KV and LOOKUP requests, with one tally per kind.
func driveMixed(ctx context.Context, cfg *Config, servers []string, reqs []mixedReq) (writes, lookups tally, elapsed time.Duration, truncated bool, err error) {
	workers := min(cfg.Concurrency, max(len(reqs), 1))
	p, err := dialPool(ctx, cfg, workers, servers)
	if err != nil {
		return writes, lookups, 0, false, err
	}
	defer p.close()
	type versions struct{ put, lookup int16 }
	vs := map[string]versions{}
	for addr, c := range p.conns[0] {
		var v versions
		if v.put, err = c.Version(wire.PutKv); err == nil {
			v.lookup, err = c.Version(wire.Lookup)
		}
		if err != nil {
			return writes, lookups, 0, false, fmt.Errorf("%s: %w", addr, err)
		}
		vs[addr] = v
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
		deadline time.Time
	)
	wts, lts := make([]tally, workers), make([]tally, workers)
	var total int64
	for _, m := range reqs {
		total += m.p.rows
	}
	bar := cfg.startProgress("PUT_KV+LOOKUP", total)
	defer finish(bar)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
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
				m := reqs[i]
				key, v, check, tl := wire.Lookup, vs[m.p.addr].lookup, checkLookup, &lts[w]
				if m.write {
					key, v, check, tl = wire.PutKv, vs[m.p.addr].put, checkPutKv, &wts[w]
				}
				t0 := time.Now()
				body, err := p.conns[w][m.p.addr].CallRaw(ctx, key, v, m.p.body)
				if err == nil {
					err = check(body, m.p, tl)
				}
				if err != nil {
					errOnce.Do(func() { firstErr = fmt.Errorf("%s request %d: %w", key, i, err) })
					stopped.Store(true)
					cancel()
					return
				}
				tl.lat = append(tl.lat, time.Since(t0))
				tl.rows += m.p.rows
				tl.bytes += m.p.bytes
				tl.raw += m.p.raw
				tl.requests++
				advance(bar, m.p.rows, m.p.bytes)
			}
		}()
	}
	clock := startCPU(cfg)
	t0 := time.Now()
	deadline = t0.Add(cfg.MaxDuration)
	close(start)
	wg.Wait()
	elapsed = time.Since(t0)
	clock.stop(&writes) // the server's CPU of both kinds of request is counted once, here
	if firstErr != nil {
		return writes, lookups, elapsed, false, firstErr
	}
	for w := range workers {
		writes.merge(&wts[w])
		lookups.merge(&lts[w])
	}
	return writes, lookups, elapsed, writes.requests+lookups.requests < int64(len(reqs)), nil
}
