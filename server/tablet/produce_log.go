package tablet

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/arrowlog"
	"github.com/stromdb/strom/internal/batchstats"
	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/internal/record"
	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
	"github.com/stromdb/strom/server/cluster"
)

// produceService appends client batches to the logs of log tables (PRODUCE_LOG, and
// AppendLog for the Kafka listener) and hands out writer ids (INIT_WRITER). It owns the
// cache of Arrow schemas batches are validated against.
type produceService struct {
	opts         produceOptions
	arrowSchemas arrowSchemaCache

	replicaLookup
	writeAdmission
	statsRecorder
	lapse *membershipLapse // ends waiting acks=all writes when the membership lapses
}

// produceOptions are the parts of Options produceService reads.
type produceOptions struct {
	Now     func() time.Time
	Catalog cluster.Catalog
	IDs     IDAllocator
}

var produceAPIs apiTable[*produceService]

// PRODUCE_LOG (1014): version 0 only.
func init() { produceAPIs.register(wire.ProduceLog, 0, 0, (*produceService).handleProduceLog) }

// handleProduceLog appends client batches to bucket logs. Every batch of a bucket is checked
// (length, magic, CRC) before any of it is stored; a bucket's batches are appended as one
// unit. The response has exactly one entry per requested bucket, echoing its ids, because
// the Rust writer panics on entries it did not ask for.
func (s *produceService) handleProduceLog(ctx context.Context, req *wire.Request) (proto.Message, error) {
	var r flusspb.ProduceLogRequest
	if err := req.DecodeWith(&r, func(body []byte) error { return decodeProduceLog(body, &r) }); err != nil {
		return nil, err
	}
	if a := r.GetAcks(); a != 0 && a != 1 && a != -1 {
		return nil, ferr.New(ferr.InvalidRequiredAcks, "Invalid required acks %d: must be 0, 1 or -1.", a)
	}
	resp := &flusspb.ProduceLogResponse{BucketsResp: make([]*flusspb.PbProduceLogRespForBucket, 0, len(r.BucketsReq))}
	now := s.opts.Now().UnixMilli()
	timeout := requestTimeout(r.GetTimeoutMs())
	// Appends happen here, in the connection's request order; waiting for them to become
	// durable happens off the request loop, so pipelined requests share fsyncs.
	var waits []func() error
	var waiting []*flusspb.PbProduceLogRespForBucket
	for _, br := range r.BucketsReq {
		out := &flusspb.PbProduceLogRespForBucket{BucketId: proto.Int32(br.GetBucketId()), PartitionId: br.PartitionId}
		base, durable, err := s.appendBucket(req.Context(), bucketOf(r.GetTableId(), br.PartitionId, br.GetBucketId()), br.Records, now, r.GetAcks(), timeout)
		if err != nil {
			setBucketError(&out.ErrorCode, &out.ErrorMessage, err)
		} else {
			out.BaseOffset = proto.Int64(base)
			waits = append(waits, durable)
			waiting = append(waiting, out)
		}
		resp.BucketsResp = append(resp.BucketsResp, out)
	}
	if len(waits) == 0 {
		return resp, nil
	}
	return req.Defer(func() (proto.Message, error) {
		for i, wait := range waits {
			if err := wait(); err != nil {
				waiting[i].BaseOffset = nil
				setBucketError(&waiting[i].ErrorCode, &waiting[i].ErrorMessage, err)
			}
		}
		return resp, nil
	})
}

// appendBucket validates and writes one bucket's batches; durable reports when they are
// durable per the log's flush policy and, for acks=-1 on a replicated bucket, committed (the
// HW passed them; REQUEST_TIME_OUT after timeout; the wait also ends with connCtx, the
// client's connection).
func (s *produceService) appendBucket(connCtx context.Context, b cluster.Bucket, records []byte, nowMs int64, acks int32, timeout time.Duration) (int64, func() error, error) {
	rep, err := s.replica(b)
	if err != nil {
		return 0, nil, err
	}
	var fence <-chan struct{}
	if rs := rep.repl; rs != nil {
		rs.roleMu.RLock()
		defer rs.roleMu.RUnlock()
		if fence, err = s.admitWrite(rep, acks); err != nil {
			return 0, nil, err
		}
	}
	if rep.Table.HasPrimaryKey() {
		return 0, nil, ferr.New(ferr.UnknownServerError, "Table %s is a primary key table: write to it with PUT_KV, not PRODUCE_LOG.", rep.Table.Path)
	}
	// Split the payload into whole batches and validate every one (header, CRC, schema id,
	// records section) before anything is stored, so no later scan meets a batch it cannot
	// read. (The log checks the header and CRC again; CRC-32C is cheap next to the body.)
	records, release := alignedRecords(records)
	defer release() // nothing reads records once the batches are written and their statistics taken
	var batches []record.Batch
	r := record.NewBatchReader(records)
	for b, ok := r.Next(); ok; b, ok = r.Next() {
		batches = append(batches, b)
	}
	if err := r.Err(); err != nil {
		return 0, nil, err
	}
	if rest := r.Rest(); len(rest) > 0 {
		return 0, nil, fmt.Errorf("%w: %d bytes of an incomplete batch after batch %d", record.ErrTrailingBytes, len(rest), len(batches))
	}
	// The statistics for scan filters come from the same decode that validates an ARROW
	// batch; they are recorded once the batches have their offsets (fetch_filter.go).
	stats := make([]*batchstats.Batch, len(batches))
	for i, b := range batches {
		st, err := s.validateBody(rep.Table, b)
		if err != nil {
			return 0, nil, fmt.Errorf("batch %d: %w", i, err)
		}
		stats[i] = st
	}
	res, durable, err := rep.Log.AppendStaged(batches, nowMs)
	if err != nil {
		return 0, nil, err
	}
	s.noteAppended(rep, batches, stats)
	if rep.repl != nil && acks == -1 {
		local, end := durable, res.LastOffset+1
		durable = func() error {
			if err := local(); err != nil {
				return err
			}
			return awaitCommitted(connCtx, rep.Log, b, end, fence, s.lapse.done(), timeout)
		}
	}
	return res.FirstOffset, durable, nil
}

// validateBody checks what the log does not: the batch's schema id names a schema of the
// table (SCHEMA_NOT_EXIST otherwise, as PUT_KV answers), and its records section holds
// exactly RecordCount records that a reader of the table's log format can decode
// (CORRUPT_RECORD_EXCEPTION otherwise). Without it a header claiming 2^31-1 records would
// move the high watermark by that much, and a garbage body with a valid CRC would break
// every later scan. The header itself (shape, CRC) is checked by the log before it writes.
//
// An ARROW batch is validated by decoding it (arrowlog.Validate's checks), and its scan
// filter statistics are taken from that decode, so an appended batch is decoded once; stats
// is nil for other formats, for empty batches and when they cannot be computed (a filtered
// fetch then computes them from the stored batch).
func (s *produceService) validateBody(t *cluster.TableInfo, b record.Batch) (stats *batchstats.Batch, err error) {
	if err := b.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ferr.New(ferr.CorruptRecordException, "record is corrupt"), err)
	}
	sid := b.SchemaID()
	sc, err := s.arrowSchemas.get(s.opts.Catalog, t, sid)
	if err != nil {
		return nil, err
	}
	if t.Descriptor.Properties.LogFormat() != metadata.LogFormatArrow {
		return nil, record.ValidateRowBatch(b)
	}
	_, rec, err := arrowlog.Decode(sc.arrow, b.AppendOnly(), int(b.RecordCount()), b.Records(), memory.DefaultAllocator)
	if err != nil {
		return nil, err
	}
	defer rec.Release()
	if b.RecordCount() == 0 {
		return nil, nil
	}
	if stats, err = batchstats.FromRecord(b, sc.table, rec); err != nil {
		return nil, nil // not the writer's fault: recomputed when a filtered fetch needs them
	}
	return stats, nil
}

// arrowSchemaKey identifies a table schema version.
type arrowSchemaKey struct {
	tableID  int64
	schemaID int16
}

// arrowSchemaCache holds the schema of each (table, schema id) that PRODUCE_LOG validated
// batches against, with its Arrow form. Entries are small; their number is bounded by the
// schema versions of the tables written to.
type arrowSchemaCache struct {
	mu sync.Mutex
	m  map[arrowSchemaKey]cachedSchema
}

// cachedSchema is one schema version of a table and its Arrow form.
type cachedSchema struct {
	table metadata.Schema
	arrow *arrow.Schema
}

// get returns schema id sid of t, or SCHEMA_NOT_EXIST.
func (c *arrowSchemaCache) get(cat cluster.Catalog, t *cluster.TableInfo, sid int16) (cachedSchema, error) {
	key := arrowSchemaKey{t.ID, sid}
	c.mu.Lock()
	sc, ok := c.m[key]
	c.mu.Unlock()
	if ok {
		return sc, nil
	}
	schema, ok := cat.Schema(t.ID, int32(sid))
	if !ok {
		return cachedSchema{}, ferr.New(ferr.SchemaNotExist, "Invalid schema id: %d, latest schema id: %d", sid, t.SchemaID)
	}
	as, err := arrowlog.ArrowSchema(schema.Columns)
	if err != nil {
		return cachedSchema{}, err
	}
	sc = cachedSchema{table: schema, arrow: as}
	c.mu.Lock()
	if c.m == nil {
		c.m = map[arrowSchemaKey]cachedSchema{}
	}
	c.m[key] = sc
	c.mu.Unlock()
	return sc, nil
}
