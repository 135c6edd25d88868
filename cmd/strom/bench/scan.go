package bench

import (
	"context"
	"fmt"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/cmd/strom/progress"
	"github.com/stromdb/strom/internal/fetchresp"
	"github.com/stromdb/strom/internal/record"
	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
)

// fetchFromEarliest is the fetch offset meaning "the log start offset".
const fetchFromEarliest = -2

// maxStalls bounds the empty answers a bucket below its high watermark may get in a row.
const maxStalls = 100

// scanBucket is one bucket's read position.
type scanBucket struct {
	id     int32
	offset int64
	done   bool
	stalls int
}

// runScan reads the whole log table back from the earliest offset. min(Concurrency,
// Buckets) workers each own a subset of the buckets and keep one FETCH_LOG per leader in
// flight, asking for every unfinished bucket of theirs at once (as clients do). A bucket is
// finished when its read offset reaches the high watermark of the answer. The client only
// walks batch headers (row counts, next offsets); it does not decode Arrow.
func runScan(ctx context.Context, s *session) (Result, error) {
	cfg := s.cfg
	t, err := s.table(ctx, false)
	if err != nil {
		return Result{}, err
	}
	workers := min(cfg.Concurrency, cfg.Buckets)
	p, err := dialPool(ctx, cfg, workers, t.servers)
	if err != nil {
		return Result{}, err
	}
	defer p.close()
	var projected []int32
	rawCols := cfg.allColumns()
	if len(cfg.Projection) > 0 {
		rawCols = cfg.Projection
		for _, c := range cfg.Projection {
			projected = append(projected, int32(c))
		}
	}
	rawRow := cfg.rawRowBytes(rawCols)
	// owned[w][addr] lists worker w's buckets led by addr.
	owned := make([]map[string][]*scanBucket, workers)
	for w := range owned {
		owned[w] = map[string][]*scanBucket{}
	}
	for b := range cfg.Buckets {
		w, addr := b%workers, t.leaders[b]
		owned[w][addr] = append(owned[w][addr], &scanBucket{id: int32(b), offset: fetchFromEarliest})
	}
	tallies := make([]tally, workers)
	errs := make([]error, workers)
	truncated := make([]bool, workers)
	var wg sync.WaitGroup
	start := make(chan struct{})
	bar := cfg.startProgress(wire.FetchLog.String(), int64(t.loaded))
	defer finish(bar)
	var deadline time.Time
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			truncated[w], errs[w] = scanWorker(ctx, t, p.conns[w], owned[w], cfg.FetchBytes, projected, deadline, &tallies[w], bar)
		}()
	}
	clock := startCPU(cfg)
	t0 := time.Now()
	deadline = t0.Add(cfg.MaxDuration)
	close(start)
	wg.Wait()
	elapsed := time.Since(t0)
	var tl tally
	clock.stop(&tl)
	trunc := false
	for w := range workers {
		if errs[w] != nil {
			return Result{}, fmt.Errorf("scan: %w", errs[w])
		}
		tl.merge(&tallies[w])
		trunc = trunc || truncated[w]
	}
	tl.raw = tl.rows * rawRow
	if !trunc && t.loaded > 0 && tl.rows != int64(t.loaded) {
		return Result{}, fmt.Errorf("scan: read %d rows, the table holds %d", tl.rows, t.loaded)
	}
	r := tl.result(ModeScan, elapsed)
	r.Truncated = trunc
	r.fill(cfg, t)
	r.Concurrency = workers
	r.Compression = cfg.Compression.String()
	r.Projection = cfg.Projection
	return r, nil
}

// scanWorker fetches its buckets to their high watermarks. It reports whether the deadline
// stopped it first.
func scanWorker(ctx context.Context, t *tableInfo, conns map[string]*wire.ClientConn, owned map[string][]*scanBucket, fetchBytes int, projected []int32, deadline time.Time, tl *tally, bar *progress.Bar) (bool, error) {
	for addr, buckets := range owned {
		c := conns[addr]
		for {
			req := &flusspb.FetchLogRequest{
				FollowerServerId: proto.Int32(-1),
				MaxBytes:         proto.Int32(16 << 20),
				TablesReq: []*flusspb.PbFetchLogReqForTable{{
					TableId:                   proto.Int64(t.id),
					ProjectionPushdownEnabled: proto.Bool(projected != nil),
					ProjectedFields:           projected,
				}},
			}
			tr := req.TablesReq[0]
			for _, b := range buckets {
				if !b.done {
					tr.BucketsReq = append(tr.BucketsReq, &flusspb.PbFetchLogReqForBucket{BucketId: proto.Int32(b.id), FetchOffset: proto.Int64(b.offset), MaxFetchBytes: proto.Int32(int32(fetchBytes))})
				}
			}
			if len(tr.BucketsReq) == 0 {
				break
			}
			if time.Now().After(deadline) {
				return true, nil
			}
			// The answer is decoded in place (its records alias the frame) and only its
			// batch headers are read, before CallDecode returns the frame to the pool.
			var resp flusspb.FetchLogResponse
			t0 := time.Now()
			rows, bytes := tl.rows, tl.bytes
			err := c.CallDecode(ctx, wire.FetchLog, req, func(body []byte) error {
				tl.lat = append(tl.lat, time.Since(t0))
				tl.requests++
				if err := fetchresp.Decode(body, &resp); err != nil {
					return fmt.Errorf("decode %s response: %w", wire.FetchLog, err)
				}
				return absorbFetch(&resp, buckets, tl)
			})
			if err != nil {
				return false, err
			}
			advance(bar, tl.rows-rows, tl.bytes-bytes)
		}
	}
	return false, nil
}

// absorbFetch advances the buckets by one FETCH_LOG answer.
func absorbFetch(resp *flusspb.FetchLogResponse, buckets []*scanBucket, tl *tally) error {
	if len(resp.TablesResp) != 1 {
		return fmt.Errorf("%d table answers for 1 table", len(resp.TablesResp))
	}
	byID := map[int32]*scanBucket{}
	for _, b := range buckets {
		byID[b.id] = b
	}
	for _, br := range resp.TablesResp[0].BucketsResp {
		if err := bucketError("fetch", br.GetBucketId(), br.ErrorCode, br.ErrorMessage); err != nil {
			return err
		}
		b := byID[br.GetBucketId()]
		if b == nil || b.done {
			return fmt.Errorf("answer for bucket %d that was not asked for", br.GetBucketId())
		}
		hw := br.GetHighWatermark()
		if b.offset == fetchFromEarliest {
			b.offset = br.GetLogStartOffset()
		}
		n := 0
		for batch, err := range record.Iterate(br.Records) {
			if err != nil {
				return fmt.Errorf("bucket %d: %w", b.id, err)
			}
			if batch.NextOffset() <= b.offset {
				continue // a batch straddling the fetch offset was counted before
			}
			tl.rows += int64(batch.RecordCount())
			b.offset = batch.NextOffset()
			n++
		}
		tl.bytes += int64(len(br.Records))
		switch {
		case b.offset >= hw:
			b.done = true
		case n == 0:
			if b.stalls++; b.stalls > maxStalls {
				return fmt.Errorf("bucket %d: no progress at offset %d below high watermark %d", b.id, b.offset, hw)
			}
		default:
			b.stalls = 0
		}
	}
	return nil
}
