package bench

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
)

// ModeTiering appends to a lake-enabled log table and watches its rows reach Iceberg.
const ModeTiering Mode = "tiering"

// ack is one acknowledged append: the bucket's log end offset after it, and when it was
// acknowledged.
type ack struct {
	bucket int32
	end    int64
	at     time.Time
	lat    time.Duration // send to acknowledgement
}

// lakeView is one answer of GET_LAKE_SNAPSHOT that differed from the one before: the tiered
// log end offset of every bucket, and when it was seen.
type lakeView struct {
	at      time.Time
	offsets map[int32]int64
}

// runTiering creates the lake-enabled log table Table+"_lake" (table.datalake.freshness
// cfg.LakeFreshness) on a server running with datalake.format=iceberg, appends cfg.logRows() rows
// to it (at most cfg.AppendRate rows/s when set) and polls GET_LAKE_SNAPSHOT every
// cfg.LakePoll until the lake holds every appended row.
//
// Rows/s is the tiering throughput: rows divided by the time from the first append to the
// first lake snapshot holding them all. Freshness is, per append, the time from its
// acknowledgement to the first poll that found its offsets in the lake snapshot (so it
// includes up to one poll interval).
func runTiering(ctx context.Context, s *session) (Result, error) {
	cfg := s.cfg
	d := cfg.descriptor(false)
	d.Properties[metadata.PropDatalakeEnabled] = "true"
	d.Properties[metadata.PropDatalakeFreshness] = cfg.LakeFreshness
	t, err := s.create(ctx, cfg.Table+"_lake", d)
	if err != nil {
		if ferr.CodeOf(err) == ferr.InvalidTableException {
			return Result{}, fmt.Errorf("tiering: %w (start the server with --set datalake.format=iceberg)", err)
		}
		return Result{}, fmt.Errorf("tiering: %w", err)
	}
	s.extraTables = append(s.extraTables, t)
	if err := s.waitForLeaders(ctx, t); err != nil {
		return Result{}, err
	}
	if err := s.waitForBuckets(ctx, t, false); err != nil {
		return Result{}, err
	}
	reqs, err := prepareAppend(cfg, t)
	if err != nil {
		return Result{}, fmt.Errorf("tiering: prepare: %w", err)
	}
	path := &flusspb.PbTablePath{DatabaseName: proto.String(cfg.Database), TableName: proto.String(t.name)}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	start := time.Now()
	var (
		acks      []ack
		appendErr error
		appendEnd time.Time
		wg        sync.WaitGroup
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		acks, appendErr = appendPaced(ctx, cfg, t, reqs, start)
		appendEnd = time.Now()
		if appendErr != nil {
			cancel()
		}
	}()
	// Poll until every acknowledged row is in the lake, or the time is up.
	var views []lakeView
	deadline := start.Add(cfg.MaxDuration)
	var last map[int32]int64
	var finalEnds map[int32]int64
	poll := time.NewTicker(cfg.LakePoll)
	defer poll.Stop()
	appendDone := make(chan struct{})
	go func() { wg.Wait(); close(appendDone) }()
	truncated := false
	for {
		select {
		case <-ctx.Done():
		case <-poll.C:
		case <-appendDone:
			if finalEnds == nil && appendErr == nil {
				finalEnds = map[int32]int64{}
				for _, a := range acks {
					finalEnds[a.bucket] = max(finalEnds[a.bucket], a.end)
				}
			}
			appendDone = nil // seen; keep polling
			continue
		}
		if ctx.Err() != nil {
			break
		}
		offs, err := lakeOffsets(ctx, s.coord, path)
		if err != nil {
			cancel()
			wg.Wait()
			return Result{}, fmt.Errorf("tiering: %w", err)
		}
		now := time.Now()
		if offs != nil && !mapsEqual(offs, last) {
			views = append(views, lakeView{at: now, offsets: offs})
			last = offs
		}
		if finalEnds != nil && covers(last, finalEnds) {
			break
		}
		if now.After(deadline) {
			truncated = true
			break
		}
	}
	cancel()
	wg.Wait()
	if appendErr != nil {
		return Result{}, fmt.Errorf("tiering: append: %w", appendErr)
	}
	return tieringResult(cfg, t, reqs, acks, views, start, appendEnd, truncated), nil
}

// tieringResult summarises a run: throughput up to the view that held every row, and the
// freshness of each acknowledged append.
func tieringResult(cfg *Config, t *tableInfo, reqs []prepared, acks []ack, views []lakeView, start, appendEnd time.Time, truncated bool) Result {
	var tl tally
	for i := range reqs[:len(acks)] {
		tl.rows += reqs[i].rows
		tl.bytes += reqs[i].bytes
		tl.raw += reqs[i].raw
		tl.requests++
		tl.lat = append(tl.lat, acks[i].lat)
	}
	end := appendEnd
	if len(views) > 0 && !truncated {
		end = views[len(views)-1].at
	}
	r := tl.result(ModeTiering, end.Sub(start))
	r.Truncated = truncated
	r.fill(cfg, t)
	r.BatchRows = cfg.BatchRows
	r.Compression = cfg.Compression.String()
	if s := appendEnd.Sub(start).Seconds(); s > 0 {
		r.AppendRowsPerSec = float64(tl.rows) / s
	}
	r.LakeSnapshots = len(views)
	var fresh []time.Duration
	for _, a := range acks {
		for _, v := range views {
			if v.offsets[a.bucket] >= a.end {
				fresh = append(fresh, max(v.at.Sub(a.at), 0))
				break
			}
		}
	}
	if len(fresh) > 0 {
		slices.Sort(fresh)
		r.FreshnessP50Ms = quantileMs(fresh, 0.50)
		r.FreshnessP99Ms = quantileMs(fresh, 0.99)
		r.FreshnessMaxMs = quantileMs(fresh, 1)
	}
	return r
}

// appendPaced sends reqs one after another per worker (cfg.Concurrency workers), starting
// request i no earlier than start + i*BatchRows/AppendRate when AppendRate is set, and
// returns the acknowledgements in request order.
func appendPaced(ctx context.Context, cfg *Config, t *tableInfo, reqs []prepared, start time.Time) ([]ack, error) {
	workers := min(cfg.Concurrency, max(len(reqs), 1))
	p, err := dialPool(ctx, cfg, workers, t.servers)
	if err != nil {
		return nil, err
	}
	defer p.close()
	versions := map[string]int16{}
	for addr, c := range p.conns[0] {
		if versions[addr], err = c.Version(wire.ProduceLog); err != nil {
			return nil, fmt.Errorf("%s on %s: %w", wire.ProduceLog, addr, err)
		}
	}
	acks := make([]ack, len(reqs))
	var (
		mu       sync.Mutex
		next     int
		firstErr error
		wg       sync.WaitGroup
	)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				i := next
				next++
				stop := firstErr != nil
				mu.Unlock()
				if stop || i >= len(reqs) || ctx.Err() != nil {
					return
				}
				if cfg.AppendRate > 0 {
					due := start.Add(time.Duration(float64(i*cfg.BatchRows) / float64(cfg.AppendRate) * float64(time.Second)))
					if wait := time.Until(due); wait > 0 {
						select {
						case <-ctx.Done():
							return
						case <-time.After(wait):
						}
					}
				}
				r := &reqs[i]
				sent := time.Now()
				body, err := p.conns[w][r.addr].CallRaw(ctx, wire.ProduceLog, versions[r.addr], r.body)
				var a ack
				if err == nil {
					a, err = produceAck(body, r.rows)
				}
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = fmt.Errorf("request %d: %w", i, err)
					}
					mu.Unlock()
					return
				}
				a.lat = a.at.Sub(sent)
				acks[i] = a
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return acks, nil
}

func produceAck(body []byte, rows int64) (ack, error) {
	var resp flusspb.ProduceLogResponse
	if err := proto.Unmarshal(body, &resp); err != nil {
		return ack{}, fmt.Errorf("decode response: %w", err)
	}
	if len(resp.BucketsResp) != 1 {
		return ack{}, fmt.Errorf("%d bucket answers for 1 bucket", len(resp.BucketsResp))
	}
	b := resp.BucketsResp[0]
	if err := bucketError("produce", b.GetBucketId(), b.ErrorCode, b.ErrorMessage); err != nil {
		return ack{}, err
	}
	if b.BaseOffset == nil {
		return ack{}, fmt.Errorf("produce: bucket %d: no base offset in the answer", b.GetBucketId())
	}
	return ack{bucket: b.GetBucketId(), end: b.GetBaseOffset() + rows, at: time.Now()}, nil
}

// lakeOffsets is the table's latest lake snapshot as tiered offset per bucket; nil while the
// table has none.
func lakeOffsets(ctx context.Context, coord *wire.ClientConn, path *flusspb.PbTablePath) (map[int32]int64, error) {
	var resp flusspb.GetLakeSnapshotResponse
	err := coord.Call(ctx, wire.GetLakeSnapshot, &flusspb.GetLakeSnapshotRequest{TablePath: path}, &resp)
	if ferr.CodeOf(err) == ferr.LakeSnapshotNotExist {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("get lake snapshot: %w", err)
	}
	out := make(map[int32]int64, len(resp.BucketSnapshots))
	for _, b := range resp.BucketSnapshots {
		out[b.GetBucketId()] = b.GetLogOffset()
	}
	return out, nil
}

func mapsEqual(a, b map[int32]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// covers reports whether the lake offsets reach every bucket's log end.
func covers(lake, ends map[int32]int64) bool {
	for b, end := range ends {
		if lake[b] < end {
			return false
		}
	}
	return true
}

// ModesForAll are the modes `strom bench all` runs: every mode but tiering, which needs a
// server started with a data lake.
func ModesForAll() []Mode {
	return slices.DeleteFunc(slices.Clone(AllModes), func(m Mode) bool { return m == ModeTiering })
}
