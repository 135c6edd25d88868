package bench

import (
	"context"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/internal/row"
	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
)

// The prefix-lookup table, <table>_prefix, has the columns of the other tables except that
// column 1 is "seq" BIGINT NOT NULL; its primary key is (id, seq) and its bucket key id, so
// that all rows of one id share a bucket and PREFIX_LOOKUP of an id returns them all. Row r
// of a run has id = r / PrefixFanout and seq = r % PrefixFanout.
type prefixLayout struct {
	columns  []metadata.Column
	fanout   int64
	keyTypes []metadata.DataType // id, seq
	buckets  int32
	keyVals  [2]row.Datum
}

func newPrefixLayout(cfg *Config) *prefixLayout {
	cols := cfg.columns()
	cols[1] = metadata.Column{Name: "seq", Type: metadata.DataType{Root: metadata.BigInt, NotNull: true}, ID: metadata.UnknownID}
	bigint := metadata.DataType{Root: metadata.BigInt, NotNull: true}
	return &prefixLayout{columns: cols, fanout: int64(cfg.PrefixFanout), keyTypes: []metadata.DataType{bigint, bigint}, buckets: int32(cfg.Buckets)}
}

// row sets the key columns of vals for row r and appends the encoded primary key to dst,
// returning it with the row's bucket (the hash of the encoded bucket key, id alone).
func (l *prefixLayout) row(dst []byte, r int64, vals []row.Datum) ([]byte, int32, error) {
	id, seq := r/l.fanout, r%l.fanout
	vals[0], vals[1] = row.Datum{I: id}, row.Datum{I: seq}
	l.keyVals[0], l.keyVals[1] = vals[0], vals[1]
	dst, err := row.EncodeKey(dst, l.keyTypes, l.keyVals[:])
	if err != nil {
		return dst, 0, err
	}
	prefix, err := l.prefix(nil, id)
	if err != nil {
		return dst, 0, err
	}
	b, err := row.BucketFluss(prefix, l.buckets)
	return dst, b, err
}

// prefix appends the encoded bucket key (the prefix of the primary key) of id to dst.
func (l *prefixLayout) prefix(dst []byte, id int64) ([]byte, error) {
	return row.EncodeKey(dst, l.keyTypes[:1], []row.Datum{{I: id}})
}

func (l *prefixLayout) descriptor(cfg *Config) metadata.TableDescriptor {
	d := cfg.descriptor(true)
	d.Schema.Columns = l.columns
	d.Schema.PrimaryKey = []string{"id", "seq"}
	d.BucketKeys = []string{"id"}
	d.Schema.AssignFieldIDs()
	return d
}

// createTable creates name from d (an existing table is an error, as in session.table),
// registers it to be dropped at the end, and waits until its buckets are served; probe
// holds a LOOKUP key per bucket.
func (s *session) createTable(ctx context.Context, name string, d metadata.TableDescriptor, probe [][]byte) (*tableInfo, error) {
	t, err := s.create(ctx, name, d)
	if err != nil {
		return nil, err
	}
	s.extraTables = append(s.extraTables, t)
	if err := s.waitForLeaders(ctx, t); err != nil {
		return nil, err
	}
	if err := s.waitForBucketsWith(ctx, t, true, probe); err != nil {
		return nil, err
	}
	return t, nil
}

// runPrefixLookup loads cfg.Rows rows into the prefix table (untimed as far as the result
// goes: the load is not reported) and then times cfg.Lookups PREFIX_LOOKUP requests of
// cfg.LookupBatch random ids each. Every id must return its PrefixFanout rows (fewer for
// the last id when Rows is not a multiple). Rows in the Result count the rows returned.
func runPrefixLookup(ctx context.Context, s *session) (Result, error) {
	cfg := s.cfg
	if cfg.Columns < 2 {
		return Result{}, fmt.Errorf("prefix-lookup: needs -columns >= 2 (id and seq)")
	}
	l := newPrefixLayout(cfg)
	probe := make([][]byte, cfg.Buckets)
	for id, found := int64(0), 0; found < cfg.Buckets; id++ {
		if id > int64(cfg.Buckets)*1000 {
			return Result{}, fmt.Errorf("prefix-lookup: no id hashes to some of the %d buckets", cfg.Buckets)
		}
		vals := make([]row.Datum, 2)
		key, b, err := l.row(nil, id*l.fanout, vals)
		if err != nil {
			return Result{}, err
		}
		if probe[b] == nil {
			probe[b], found = key, found+1
		}
	}
	t, err := s.createTable(ctx, cfg.Table+"_prefix", l.descriptor(cfg), probe)
	if err != nil {
		return Result{}, err
	}
	load, err := prepareKv(cfg, t, kvWrite{seed: cfg.Seed, prefix: l})
	if err != nil {
		return Result{}, fmt.Errorf("prefix-lookup: prepare load: %w", err)
	}
	if _, _, truncated, err := drive(ctx, cfg, t.servers, wire.PutKv, load, checkPutKv); err != nil {
		return Result{}, fmt.Errorf("prefix-lookup: load: %w", err)
	} else if truncated {
		return Result{}, fmt.Errorf("prefix-lookup: load did not finish within -max-duration")
	}
	ids := (int64(cfg.Rows) + l.fanout - 1) / l.fanout
	reqs, asked, err := preparePrefixLookup(cfg, t, l, ids)
	if err != nil {
		return Result{}, fmt.Errorf("prefix-lookup: prepare: %w", err)
	}
	check := func(body []byte, req *prepared, tl *tally) error {
		return checkPrefixLookup(body, asked[req], tl, int64(cfg.Rows), l.fanout)
	}
	tl, elapsed, truncated, err := drive(ctx, cfg, t.servers, wire.PrefixLookup, reqs, check)
	if err != nil {
		return Result{}, fmt.Errorf("prefix-lookup: %w", err)
	}
	r := tl.result(ModePrefixLookup, elapsed)
	r.Truncated = truncated
	r.fill(cfg, t)
	r.LookupBatch = cfg.LookupBatch
	r.PrefixFanout = cfg.PrefixFanout
	return r, nil
}

// prefixAsk is what one PREFIX_LOOKUP asked: the ids per bucket, in request order.
type prefixAsk map[int32][]int64

// preparePrefixLookup encodes cfg.Lookups PREFIX_LOOKUP requests of cfg.LookupBatch random
// ids from [0, ids), grouped by bucket and split by leader as prepareLookup does, and
// returns with them what each request asked, so the check can count the expected rows.
func preparePrefixLookup(cfg *Config, t *tableInfo, l *prefixLayout, ids int64) ([]prepared, map[*prepared]prefixAsk, error) {
	s := cfg.Seed ^ 0xfeedface
	reqs := make([]prepared, 0, cfg.Lookups)
	var asks []prefixAsk
	for len(reqs) < cfg.Lookups {
		type bucketReq struct {
			b    int32
			keys [][]byte
			ids  []int64
		}
		byAddr := map[string][]*bucketReq{}
		var order []string
		for range cfg.LookupBatch {
			id := int64(splitmix(&s) % uint64(ids))
			key, err := l.prefix(nil, id)
			if err != nil {
				return nil, nil, err
			}
			b, err := row.BucketFluss(key, l.buckets)
			if err != nil {
				return nil, nil, err
			}
			addr := t.leaders[b]
			if byAddr[addr] == nil {
				order = append(order, addr)
			}
			var br *bucketReq
			for _, x := range byAddr[addr] {
				if x.b == b {
					br = x
				}
			}
			if br == nil {
				br = &bucketReq{b: b}
				byAddr[addr] = append(byAddr[addr], br)
			}
			br.keys, br.ids = append(br.keys, key), append(br.ids, id)
		}
		for _, addr := range order {
			req := &flusspb.PrefixLookupRequest{TableId: proto.Int64(t.id)}
			ask := prefixAsk{}
			for _, br := range byAddr[addr] {
				req.BucketsReq = append(req.BucketsReq, &flusspb.PbPrefixLookupReqForBucket{BucketId: proto.Int32(br.b), Keys: br.keys})
				ask[br.b] = br.ids
			}
			body, err := proto.Marshal(req)
			if err != nil {
				return nil, nil, fmt.Errorf("encode request: %w", err)
			}
			reqs = append(reqs, prepared{addr: addr, body: body})
			asks = append(asks, ask)
		}
	}
	// reqs is complete, so pointers into it are stable.
	asked := make(map[*prepared]prefixAsk, len(reqs))
	for i := range reqs {
		asked[&reqs[i]] = asks[i]
	}
	return reqs, asked, nil
}

// checkPrefixLookup verifies, for every bucket asked, one value list per prefix in request
// order, each holding every row of its id, and counts the rows and value bytes.
func checkPrefixLookup(body []byte, ask prefixAsk, tl *tally, rows, fanout int64) error {
	var resp flusspb.PrefixLookupResponse
	if err := proto.Unmarshal(body, &resp); err != nil {
		return fmt.Errorf("decode response: %w", err)
	}
	if len(resp.BucketsResp) != len(ask) {
		return fmt.Errorf("%d bucket answers for %d buckets", len(resp.BucketsResp), len(ask))
	}
	for _, br := range resp.BucketsResp {
		if err := bucketError("prefix_lookup", br.GetBucketId(), br.ErrorCode, br.ErrorMessage); err != nil {
			return err
		}
		ids, ok := ask[br.GetBucketId()]
		if !ok || len(br.ValueLists) != len(ids) {
			return fmt.Errorf("bucket %d: %d value lists for %d prefixes", br.GetBucketId(), len(br.ValueLists), len(ids))
		}
		for i, vl := range br.ValueLists {
			want := min(fanout, rows-ids[i]*fanout)
			if int64(len(vl.Values)) != want {
				return fmt.Errorf("bucket %d: prefix id %d: %d rows, want %d", br.GetBucketId(), ids[i], len(vl.Values), want)
			}
			for _, v := range vl.Values {
				tl.bytes += int64(len(v))
			}
			tl.rows += int64(len(vl.Values))
		}
	}
	return nil
}
