package fluss

import (
	"context"
	"encoding/binary"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/arrowlog"
	"github.com/stromdb/strom/internal/row"
	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
)

// BucketBatchScanner reads up to Limit rows of one bucket: for a primary-key table the
// current rows (in key order), for a log table the last rows of the log.
type BucketBatchScanner struct {
	s      *TableScan
	bucket TableBucket
	f      *logFetcher // projection and decoding helpers
	done   bool
}

// CreateBucketBatchScanner returns a limit scanner of one bucket. Limit must be set.
func (s *TableScan) CreateBucketBatchScanner(bucket TableBucket) (*BucketBatchScanner, error) {
	if s.limit <= 0 {
		return nil, fmt.Errorf("fluss: a bucket batch scanner needs Limit(n) with n > 0")
	}
	if s.filter != nil {
		// LIMIT_SCAN has no predicate: the limit would count rows the filter drops.
		return nil, fmt.Errorf("fluss: Filter cannot be combined with Limit")
	}
	if bucket.TableID != s.t.info.TableID {
		return nil, fmt.Errorf("fluss: %s is not a bucket of table %s", bucket, s.t.info.Path)
	}
	f, err := newLogFetcher(s)
	if err != nil {
		return nil, err
	}
	f.pushdown = false // LIMIT_SCAN has no projection; project client side
	f.fetchCols = s.t.cols
	if f.fetchArrow, err = arrowlog.ArrowSchema(f.fetchCols); err != nil {
		return nil, err
	}
	if f.proj != nil {
		f.reorder = f.proj
	}
	return &BucketBatchScanner{s: s, bucket: bucket, f: f}, nil
}

// Schema returns the Arrow schema of the records returned.
func (b *BucketBatchScanner) Schema() *arrow.Schema { return b.f.outArrow }

// Next returns the scan's rows as one record the first time, and nil afterwards. The caller
// releases the record.
func (b *BucketBatchScanner) Next(ctx context.Context) (arrow.RecordBatch, error) {
	if b.done {
		return nil, nil
	}
	rec, err := b.ToArrow(ctx)
	if err == nil {
		b.done = true
	}
	return rec, err
}

// ToArrow runs the scan and returns all its rows as one record (possibly empty). The caller
// releases the record.
func (b *BucketBatchScanner) ToArrow(ctx context.Context) (arrow.RecordBatch, error) {
	rows, err := b.scan(ctx)
	if err != nil {
		return nil, publicError(err)
	}
	return arrowlog.RowsToRecord(b.f.outArrow, b.f.outCols, rows, nil)
}

// Rows runs the scan and returns its rows as Go values.
func (b *BucketBatchScanner) Rows(ctx context.Context) ([]Row, error) {
	rows, err := b.scan(ctx)
	if err != nil {
		return nil, publicError(err)
	}
	out := make([]Row, len(rows))
	for i, r := range rows {
		out[i] = fromDatums(b.f.outCols, r)
	}
	return out, nil
}

// scan sends LIMIT_SCAN (retrying retriable errors) and decodes the rows, projected.
func (b *BucketBatchScanner) scan(ctx context.Context) ([][]row.Datum, error) {
	t := b.s.t
	req := &flusspb.LimitScanRequest{TableId: proto.Int64(b.bucket.TableID), BucketId: proto.Int32(b.bucket.Bucket), Limit: proto.Int32(int32(b.s.limit))}
	req.PartitionId = b.bucket.partitionIDField()
	var resp flusspb.LimitScanResponse
	for attempt := 0; ; attempt++ {
		leader, err := t.conn.meta.leader(ctx, t.info.Path, b.bucket)
		if err == nil {
			resp.Reset()
			err = t.conn.call(ctx, leader, wire.LimitScan, req, &resp)
			if err == nil && resp.GetErrorCode() != 0 {
				err = &Error{Code: ErrorCode(resp.GetErrorCode()), Message: resp.GetErrorMessage()}
			}
		}
		if err == nil {
			break
		}
		code := CodeOf(err)
		if isRoutingError(code) {
			t.conn.meta.invalidate(b.bucket.TableID, b.bucket.PartitionID)
		}
		if !code.Retriable() || attempt >= 5 {
			return nil, err
		}
		if err := t.conn.backoff(ctx, attempt); err != nil {
			return nil, err
		}
	}
	var rows [][]row.Datum
	var err error
	if t.HasPrimaryKey() {
		rows, err = b.decodeValues(ctx, resp.GetRecords())
	} else {
		rows, err = b.decodeLog(resp.GetRecords())
	}
	if err != nil {
		return nil, err
	}
	if b.f.proj != nil {
		for i, r := range rows {
			rows[i] = pick(r, b.f.proj)
		}
	}
	return rows, nil
}

// decodeValues reads a value record batch: int32 length, int8 magic, int32 count, then
// count × (int32 length, [int16 schema id][row]), little-endian.
func (b *BucketBatchScanner) decodeValues(ctx context.Context, data []byte) ([][]row.Datum, error) {
	t := b.s.t
	if len(data) == 0 {
		return nil, nil
	}
	if len(data) < 9 {
		return nil, fmt.Errorf("fluss: value batch of %d bytes", len(data))
	}
	count := int(binary.LittleEndian.Uint32(data[5:]))
	rest := data[9:]
	var out [][]row.Datum
	for range count {
		if len(rest) < 4 {
			return nil, fmt.Errorf("fluss: truncated value batch")
		}
		n := int(binary.LittleEndian.Uint32(rest))
		if n < 0 || n > len(rest)-4 {
			return nil, fmt.Errorf("fluss: value record length %d out of range", n)
		}
		v := rest[4 : 4+n]
		rest = rest[4+n:]
		ds, err := t.decodeStored(ctx, v)
		if err != nil {
			return nil, err
		}
		out = append(out, ds)
	}
	return out, nil
}

// decodeLog reads log batches and keeps the last Limit rows.
func (b *BucketBatchScanner) decodeLog(data []byte) ([][]row.Datum, error) {
	t := b.s.t
	full := &logFetcher{t: t, fetchCols: t.cols, fetchArrow: b.f.fetchArrow, outCols: t.cols, outArrow: b.f.fetchArrow}
	batches, err := full.decode(b.bucket, data, 0)
	if err != nil {
		return nil, err
	}
	var out [][]row.Datum
	for _, sb := range batches {
		rows, err := arrowlog.RecordToRows(sb.Record, t.cols)
		if err == nil {
			for _, r := range rows {
				out = append(out, copyDatums(r))
			}
		}
		sb.Record.Release()
		if err != nil {
			return nil, fmt.Errorf("fluss: %w", err)
		}
	}
	if len(out) > b.s.limit {
		out = out[len(out)-b.s.limit:]
	}
	return out, nil
}

// copyDatums deep-copies byte values so that rows outlive their source buffers.
func copyDatums(ds []row.Datum) []row.Datum {
	out := make([]row.Datum, len(ds))
	for i, d := range ds {
		if d.B != nil {
			d.B = append([]byte{}, d.B...)
		}
		if d.Elems != nil {
			d.Elems = copyDatums(d.Elems)
		}
		if d.Vals != nil {
			d.Vals = copyDatums(d.Vals)
		}
		out[i] = d
	}
	return out
}
