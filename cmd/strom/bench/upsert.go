package bench

import (
	"context"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/internal/record"
	"github.com/stromdb/strom/internal/row"
	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
)

// keyCodec encodes primary keys (the single BIGINT "id") and buckets them as Java's
// FlussBucketingFunction does for a table without lake format.
type keyCodec struct {
	types   []metadata.DataType
	buckets int32
	val     [1]row.Datum
}

func newKeyCodec(cfg *Config) *keyCodec {
	return &keyCodec{types: []metadata.DataType{{Root: metadata.BigInt, NotNull: true}}, buckets: int32(cfg.Buckets)}
}

// key appends the encoded key of id to dst and returns it with its bucket.
func (k *keyCodec) key(dst []byte, id int64) ([]byte, int32, error) {
	k.val[0] = row.Datum{I: id}
	start := len(dst)
	dst, err := row.EncodeKey(dst, k.types, k.val[:])
	if err != nil {
		return dst, 0, err
	}
	b, err := row.BucketFluss(dst[start:], k.buckets)
	return dst, b, err
}

// prepareUpsert encodes cfg.Rows rows as KV batches. Rows are grouped by bucket; a bucket's
// batch becomes a PUT_KV request once it holds cfg.BatchRows rows (the rest at the end).
func prepareUpsert(cfg *Config, t *tableInfo) ([]prepared, error) {
	return prepareKv(cfg, t, kvWrite{seed: cfg.Seed})
}

// kvWrite says what a PUT_KV workload writes for rows 0..cfg.Rows-1.
type kvWrite struct {
	seed    uint64        // value generator seed: a different seed gives every key new values
	targets []int         // partial update: the columns written (including the key); nil = all
	prefix  *prefixLayout // the prefix-lookup table's composite key; nil = key "id" = row number
}

// prepareKv encodes cfg.Rows rows as KV batches as prepareUpsert describes. With targets,
// every request names them as target_columns and the other columns of each row are NULL
// (the server keeps their stored values), as Fluss clients send partial updates.
func prepareKv(cfg *Config, t *tableInfo, w kvWrite) ([]prepared, error) {
	cols := cfg.columns()
	if w.prefix != nil {
		cols = w.prefix.columns
	}
	types := make([]metadata.DataType, len(cols))
	for i, c := range cols {
		types[i] = c.Type
	}
	vcfg := *cfg
	vcfg.Seed = w.seed
	g, kc := newGen(&vcfg), newKeyCodec(cfg)
	rawCols := cfg.allColumns()
	var targets []int32
	written := make([]bool, cfg.Columns)
	if w.targets != nil {
		rawCols = w.targets
		for _, c := range w.targets {
			targets = append(targets, int32(c))
			written[c] = true
		}
	}
	rawRow := cfg.rawRowBytes(rawCols)
	hdr := record.KvHeader{SchemaID: t.schemaID, WriterID: record.NoWriterID, BatchSequence: record.NoBatchSequence}
	pending := make([][]byte, cfg.Buckets)
	counts := make([]int, cfg.Buckets)
	reqs := make([]prepared, 0, cfg.Rows/cfg.BatchRows+cfg.Buckets)
	flush := func(b int32) error {
		batch := pending[b]
		if err := record.FinishKvBatch(batch, hdr, int32(counts[b])); err != nil {
			return err
		}
		body, err := proto.Marshal(&flusspb.PutKvRequest{
			Acks: proto.Int32(cfg.Acks), TableId: proto.Int64(t.id), TimeoutMs: proto.Int32(30000),
			TargetColumns: targets,
			BucketsReq:    []*flusspb.PbPutKvReqForBucket{{BucketId: proto.Int32(b), Records: batch}},
		})
		if err != nil {
			return fmt.Errorf("encode request: %w", err)
		}
		reqs = append(reqs, prepared{addr: t.leaders[b], body: body, rows: int64(counts[b]), bytes: int64(len(batch)), raw: int64(counts[b]) * rawRow})
		pending[b], counts[b] = pending[b][:0], 0
		return nil
	}
	var key, val []byte
	for id := range int64(cfg.Rows) {
		var b int32
		var err error
		vals := g.row(id)
		if w.prefix != nil {
			key, b, err = w.prefix.row(key[:0], id, vals)
		} else {
			key, b, err = kc.key(key[:0], id)
		}
		if err != nil {
			return nil, fmt.Errorf("key %d: %w", id, err)
		}
		if targets != nil {
			for i := range vals {
				if !written[i] {
					vals[i] = row.Datum{Null: true}
				}
			}
		}
		if val, err = row.AppendCompactedRow(val[:0], types, vals); err != nil {
			return nil, fmt.Errorf("row %d: %w", id, err)
		}
		if counts[b] == 0 {
			pending[b], _ = record.BeginKvBatch(pending[b][:0])
		}
		pending[b] = record.AppendKvRecord(pending[b], key, val)
		if counts[b]++; counts[b] == cfg.BatchRows {
			if err := flush(b); err != nil {
				return nil, err
			}
		}
	}
	for b := range int32(cfg.Buckets) {
		if counts[b] > 0 {
			if err := flush(b); err != nil {
				return nil, err
			}
		}
	}
	return reqs, nil
}

func checkPutKv(body []byte, _ *prepared, _ *tally) error {
	var resp flusspb.PutKvResponse
	if err := proto.Unmarshal(body, &resp); err != nil {
		return fmt.Errorf("decode response: %w", err)
	}
	if len(resp.BucketsResp) != 1 {
		return fmt.Errorf("%d bucket answers for 1 bucket", len(resp.BucketsResp))
	}
	b := resp.BucketsResp[0]
	return bucketError("put_kv", b.GetBucketId(), b.ErrorCode, b.ErrorMessage)
}

func runUpsert(ctx context.Context, s *session) (Result, error) {
	cfg := s.cfg
	t, err := s.table(ctx, true)
	if err != nil {
		return Result{}, err
	}
	reqs, err := prepareUpsert(cfg, t)
	if err != nil {
		return Result{}, fmt.Errorf("upsert: prepare: %w", err)
	}
	tl, elapsed, truncated, err := drive(ctx, cfg, t.servers, wire.PutKv, reqs, checkPutKv)
	if err != nil {
		return Result{}, fmt.Errorf("upsert: %w", err)
	}
	if !truncated {
		t.loaded = cfg.Rows
	}
	r := tl.result(ModeUpsert, elapsed)
	r.Truncated = truncated
	r.fill(cfg, t)
	r.BatchRows = cfg.BatchRows
	return r, nil
}
