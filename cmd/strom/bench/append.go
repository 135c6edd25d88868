package bench

import (
	"context"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/arrowlog"
	"github.com/stromdb/strom/internal/record"
	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
)

// prepareAppend encodes cfg.logRows() rows as ARROW log batches of cfg.BatchRows rows, one
// PRODUCE_LOG request each, sent to the buckets round-robin.
func prepareAppend(cfg *Config, t *tableInfo) ([]prepared, error) {
	cols := cfg.columns()
	schema, err := arrowlog.ArrowSchema(cols)
	if err != nil {
		return nil, fmt.Errorf("arrow schema: %w", err)
	}
	rb, err := arrowlog.NewRowBuilder(schema, cols, nil)
	if err != nil {
		return nil, err
	}
	defer rb.Release()
	g := newGen(cfg)
	rawRow := cfg.rawRowBytes(cfg.allColumns())
	rows := cfg.logRows()
	n := (rows + cfg.BatchRows - 1) / cfg.BatchRows
	reqs := make([]prepared, 0, n)
	var batch []byte
	hdr := record.V0Header{SchemaID: t.schemaID, WriterID: record.NoWriterID, BatchSequence: record.NoBatchSequence}
	for first := 0; first < rows; first += cfg.BatchRows {
		count := min(cfg.BatchRows, rows-first)
		for id := first; id < first+count; id++ {
			if err := rb.Append(g.row(int64(id))); err != nil {
				return nil, fmt.Errorf("row %d: %w", id, err)
			}
		}
		rec := rb.NewRecord()
		batch, err = arrowlog.AppendBatch(batch[:0], hdr, rec, nil, cfg.Compression, cfg.ZstdLevel)
		rec.Release()
		if err != nil {
			return nil, fmt.Errorf("encode batch: %w", err)
		}
		bucket := int32(len(reqs) % cfg.Buckets)
		body, err := proto.Marshal(&flusspb.ProduceLogRequest{
			Acks: proto.Int32(cfg.Acks), TableId: proto.Int64(t.id), TimeoutMs: proto.Int32(30000),
			BucketsReq: []*flusspb.PbProduceLogReqForBucket{{BucketId: proto.Int32(bucket), Records: batch}},
		})
		if err != nil {
			return nil, fmt.Errorf("encode request: %w", err)
		}
		reqs = append(reqs, prepared{addr: t.leaders[bucket], body: body, rows: int64(count), bytes: int64(len(batch)), raw: int64(count) * rawRow})
	}
	return reqs, nil
}

func checkProduce(body []byte, _ *prepared, _ *tally) error {
	var resp flusspb.ProduceLogResponse
	if err := proto.Unmarshal(body, &resp); err != nil {
		return fmt.Errorf("decode response: %w", err)
	}
	if len(resp.BucketsResp) != 1 {
		return fmt.Errorf("%d bucket answers for 1 bucket", len(resp.BucketsResp))
	}
	b := resp.BucketsResp[0]
	return bucketError("produce", b.GetBucketId(), b.ErrorCode, b.ErrorMessage)
}

func runAppend(ctx context.Context, s *session) (Result, error) {
	cfg := s.cfg
	t, err := s.table(ctx, false)
	if err != nil {
		return Result{}, err
	}
	reqs, err := prepareAppend(cfg, t)
	if err != nil {
		return Result{}, fmt.Errorf("append: prepare: %w", err)
	}
	tl, elapsed, truncated, err := drive(ctx, cfg, t.servers, wire.ProduceLog, reqs, checkProduce)
	if err != nil {
		return Result{}, fmt.Errorf("append: %w", err)
	}
	t.loaded += int(tl.rows)
	r := tl.result(ModeAppend, elapsed)
	r.Truncated = truncated
	r.fill(cfg, t)
	r.BatchRows = cfg.BatchRows
	r.Compression = cfg.Compression.String()
	return r, nil
}

// fill copies the run's shape into r.
func (r *Result) fill(cfg *Config, t *tableInfo) {
	r.Table = t.path
	r.Columns = cfg.Columns
	r.StringBytes = cfg.StringBytes
	r.Buckets = cfg.Buckets
	r.Concurrency = cfg.Concurrency
}
