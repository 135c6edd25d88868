package bench

import (
	"context"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
)

// prepareLookup encodes cfg.Lookups LOOKUP requests of cfg.LookupBatch random keys from
// [0, loaded) each, grouped by bucket within a request. A request whose keys span buckets led
// by different servers is split so that each goes to one leader.
func prepareLookup(cfg *Config, t *tableInfo, loaded int) ([]prepared, error) {
	kc := newKeyCodec(cfg)
	rawRow := cfg.rawRowBytes(cfg.allColumns())
	s := cfg.Seed ^ 0xdeadbeef
	reqs := make([]prepared, 0, cfg.Lookups)
	for len(reqs) < cfg.Lookups {
		byAddr := map[string]*flusspb.LookupRequest{}
		var order []string
		for range cfg.LookupBatch {
			id := int64(splitmix(&s) % uint64(loaded))
			key, b, err := kc.key(nil, id)
			if err != nil {
				return nil, fmt.Errorf("key %d: %w", id, err)
			}
			addr := t.leaders[b]
			req := byAddr[addr]
			if req == nil {
				req = &flusspb.LookupRequest{TableId: proto.Int64(t.id)}
				byAddr[addr] = req
				order = append(order, addr)
			}
			var br *flusspb.PbLookupReqForBucket
			for _, x := range req.BucketsReq {
				if x.GetBucketId() == b {
					br = x
				}
			}
			if br == nil {
				br = &flusspb.PbLookupReqForBucket{BucketId: proto.Int32(b)}
				req.BucketsReq = append(req.BucketsReq, br)
			}
			br.Keys = append(br.Keys, key)
		}
		for _, addr := range order {
			req := byAddr[addr]
			n := 0
			for _, br := range req.BucketsReq {
				n += len(br.Keys)
			}
			body, err := proto.Marshal(req)
			if err != nil {
				return nil, fmt.Errorf("encode request: %w", err)
			}
			reqs = append(reqs, prepared{addr: addr, body: body, rows: int64(n), raw: int64(n) * rawRow, want: n})
		}
	}
	return reqs, nil
}

// checkLookup verifies one value per key and counts absent ones (every key was written, so
// any absence is a server fault, reported as misses) and the value bytes received.
func checkLookup(body []byte, req *prepared, tl *tally) error {
	var resp flusspb.LookupResponse
	if err := proto.Unmarshal(body, &resp); err != nil {
		return fmt.Errorf("decode response: %w", err)
	}
	got := 0
	for _, br := range resp.BucketsResp {
		if err := bucketError("lookup", br.GetBucketId(), br.ErrorCode, br.ErrorMessage); err != nil {
			return err
		}
		for _, v := range br.Values {
			if v.Values == nil {
				tl.misses++
			}
			tl.bytes += int64(len(v.Values))
		}
		got += len(br.Values)
	}
	if got != req.want {
		return fmt.Errorf("%d values for %d keys", got, req.want)
	}
	return nil
}

func runLookup(ctx context.Context, s *session) (Result, error) {
	cfg := s.cfg
	t, err := s.table(ctx, true)
	if err != nil {
		return Result{}, err
	}
	if t.loaded == 0 {
		return Result{}, fmt.Errorf("lookup: the primary-key table is empty (run upsert first)")
	}
	reqs, err := prepareLookup(cfg, t, t.loaded)
	if err != nil {
		return Result{}, fmt.Errorf("lookup: prepare: %w", err)
	}
	tl, elapsed, truncated, err := drive(ctx, cfg, t.servers, wire.Lookup, reqs, checkLookup)
	if err != nil {
		return Result{}, fmt.Errorf("lookup: %w", err)
	}
	r := tl.result(ModeLookup, elapsed)
	r.Truncated = truncated
	r.fill(cfg, t)
	r.LookupBatch = cfg.LookupBatch
	return r, nil
}
