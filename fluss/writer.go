package fluss

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/arrowlog"
	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/internal/record"
	"github.com/stromdb/strom/internal/row"
	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
)

// writer is the batching engine shared by AppendWriter and UpsertWriter: rows are added to
// per-bucket batches (accumulator) and a sender goroutine ships ready batches, grouped per
// leader, with one batch in flight per bucket (which keeps per-bucket order and makes
// sequence numbers trivially contiguous), any number of requests in flight per connection.
type writer struct {
	t           *Table
	conn        *Connection
	cfg         Config
	kv          bool
	targetCols  []int32
	aggMode     *int32 // PUT_KV agg_mode; nil: the table's merge engine (default)
	acks        int32
	idempotent  bool
	logFormat   metadata.LogFormat
	kvFormat    metadata.KvFormat
	compression arrowlog.Compression
	zstdLevel   int

	ctx    context.Context // cancelled by close
	cancel context.CancelFunc
	wg     sync.WaitGroup // the sender and its request goroutines

	mu         sync.Mutex
	queues     map[TableBucket]*bucketQueue
	sticky     map[int64]int32 // sticky bucket per partition id for key-less log tables
	bufUsed    int
	memFree    chan struct{} // closed and replaced whenever buffer memory is released
	pressure   int           // appenders waiting for memory: send everything
	flushing   int           // Flush calls in progress: send everything
	writerID   int64         // -1 until INIT_WRITER answered (idempotent writers)
	refreshing bool
	closed     bool
	wake       chan struct{}
}

// bucketQueue holds one bucket's batches in order; only the head may be in flight.
type bucketQueue struct {
	batches  []*writeBatch
	inflight bool
	nextSeq  int32
	retryAt  time.Time
}

func newWriter(t *Table, kv bool, targetCols []int32) (*writer, error) {
	if err := t.checkKeyEncoding(); err != nil {
		return nil, err
	}
	acks, err := t.conn.cfg.acks()
	if err != nil {
		return nil, err
	}
	w := &writer{
		t: t, conn: t.conn, cfg: t.conn.cfg, kv: kv, targetCols: targetCols, acks: acks,
		idempotent: !t.conn.cfg.WriterDisableIdempotence,
		logFormat:  t.info.desc.Properties.LogFormat(), kvFormat: t.info.desc.Properties.KvFormat(),
		queues: map[TableBucket]*bucketQueue{}, sticky: map[int64]int32{},
		memFree: make(chan struct{}), writerID: -1, wake: make(chan struct{}, 1),
	}
	w.compression, w.zstdLevel = logCompression(&t.info.desc)
	w.ctx, w.cancel = context.WithCancel(context.Background())
	if err := t.conn.register(w); err != nil {
		return nil, err
	}
	w.wg.Add(1)
	go w.run()
	return w, nil
}

func (w *writer) signal() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// reserve blocks until n bytes of buffer memory are available (backpressure). A writer with
// nothing buffered always admits one row, however large.
func (w *writer) reserve(ctx context.Context, n int) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	for !w.closed && w.bufUsed > 0 && w.bufUsed+n > w.cfg.WriterBufferMemorySize {
		ch := w.memFree
		w.pressure++
		w.mu.Unlock()
		w.signal()
		var err error
		select {
		case <-ch:
		case <-ctx.Done():
			err = ctx.Err()
		case <-w.ctx.Done():
		}
		w.mu.Lock()
		w.pressure--
		if err != nil {
			return err
		}
	}
	if w.closed {
		return ErrClosed
	}
	w.bufUsed += n
	return nil
}

// releaseLocked returns n bytes of buffer memory.
func (w *writer) releaseLocked(n int) {
	w.bufUsed -= n
	close(w.memFree)
	w.memFree = make(chan struct{})
}

// target resolves a row's partition (id and name). A missing partition is created unless
// Config.WriterDisableDynamicPartitionCreation is set.
func (w *writer) target(ctx context.Context, vals []row.Datum) (int64, string, error) {
	if len(w.t.partKeys) == 0 {
		return NoPartition, "", nil
	}
	values, err := w.t.partitionValues(vals)
	if err != nil {
		return 0, "", err
	}
	name := metadata.PartitionName(values)
	id, err := w.conn.meta.resolvePartition(ctx, w.t.info, name)
	if CodeOf(err) == ErrPartitionNotExists && !w.cfg.WriterDisableDynamicPartitionCreation {
		spec := make(map[string]string, len(values))
		for i, j := range w.t.partKeys {
			spec[w.t.cols[j].Name] = values[i]
		}
		id, err = w.conn.meta.createPartition(ctx, w.t.info, name, spec)
	}
	return id, name, err
}

// batchFor returns the open batch of tb that can take size more bytes, opening a new one
// when needed. Called with w.mu held.
func (w *writer) batchFor(tb TableBucket, partition string, size int) (*writeBatch, error) {
	q := w.queues[tb]
	if q == nil {
		q = &bucketQueue{}
		w.queues[tb] = q
	}
	if n := len(q.batches); n > 0 {
		b := q.batches[n-1]
		if !b.full && !b.sealed && b.rec == nil {
			if b.size+size <= w.cfg.WriterBatchSize || b.count == 0 {
				return b, nil
			}
			b.full = true
		}
	}
	b := newBatch(tb, partition)
	switch {
	case w.kv:
		b.buf, _ = record.BeginKvBatch(nil)
	case w.logFormat == metadata.LogFormatArrow:
		ab, err := arrowlog.NewRowBuilder(w.t.arrowSchema, w.t.cols, nil)
		if err != nil {
			return nil, err
		}
		b.arrowB = ab
	default:
		b.buf, _ = record.BeginV0Batch(nil)
	}
	q.batches = append(q.batches, b)
	return b, nil
}

// addLog appends a log row.
func (w *writer) addLog(ctx context.Context, vals []row.Datum) (*WriteResult, error) {
	partID, partName, err := w.target(ctx, vals)
	if err != nil {
		return nil, err
	}
	size := rowSize(vals)
	var rowBytes []byte
	if w.logFormat != metadata.LogFormatArrow {
		if w.logFormat == metadata.LogFormatIndexed {
			rowBytes, err = row.AppendIndexedRow(nil, w.t.types, vals)
		} else {
			rowBytes, err = row.AppendCompactedRow(nil, w.t.types, vals)
		}
		if err != nil {
			return nil, fmt.Errorf("fluss: encode row: %w", err)
		}
		size = record.RowLogRecordSize(rowBytes)
	}
	bucket := int32(-1)
	if len(w.t.bucketKey) > 0 {
		key, err := w.t.encodeKey(nil, w.t.bucketKey, vals)
		if err != nil {
			return nil, fmt.Errorf("fluss: bucket key: %w", err)
		}
		if bucket, err = w.t.bucketOfKey(key); err != nil {
			return nil, err
		}
	}
	if err := w.reserve(ctx, size); err != nil {
		return nil, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		w.releaseLocked(size)
		return nil, ErrClosed
	}
	if bucket < 0 {
		bucket = w.stickyBucket(partID, size)
	}
	tb := TableBucket{w.t.info.TableID, partID, bucket}
	b, err := w.batchFor(tb, partName, size)
	if err != nil {
		w.releaseLocked(size)
		return nil, err
	}
	if b.arrowB != nil {
		if err := b.arrowB.Append(vals); err != nil {
			w.releaseLocked(size)
			return nil, fmt.Errorf("fluss: %w", err)
		}
	} else {
		b.buf = record.AppendRowLogRecord(b.buf, record.AppendOnly, rowBytes)
	}
	return w.added(b, size), nil
}

// stickyBucket returns the current sticky bucket of a partition, moving to another random
// bucket when its open batch cannot take size more bytes. Called with w.mu held.
func (w *writer) stickyBucket(partID int64, size int) int32 {
	cur, ok := w.sticky[partID]
	if ok {
		q := w.queues[TableBucket{w.t.info.TableID, partID, cur}]
		if q == nil || len(q.batches) == 0 {
			return cur
		}
		last := q.batches[len(q.batches)-1]
		if !last.full && !last.sealed && last.rec == nil && last.size+size <= w.cfg.WriterBatchSize {
			return cur
		}
		if last.sealed || last.rec != nil {
			return cur // a new batch will be opened there anyway
		}
		last.full = true
		w.signal()
	}
	n := w.t.randomBucket()
	if ok && w.t.info.NumBuckets() > 1 {
		for n == cur {
			n = w.t.randomBucket()
		}
	}
	w.sticky[partID] = n
	return n
}

// added accounts a row added to b. Called with w.mu held.
func (w *writer) added(b *writeBatch, size int) *WriteResult {
	b.count++
	b.size += size
	if b.size >= w.cfg.WriterBatchSize {
		b.full = true
	}
	if b.full || b.count == 1 {
		w.signal()
	}
	return &WriteResult{b: b}
}

// addRecord appends a whole Arrow record as one batch of a key-less, non-partitioned log
// table.
func (w *writer) addRecord(ctx context.Context, rec arrow.RecordBatch, size int) (*WriteResult, error) {
	if err := w.reserve(ctx, size); err != nil {
		return nil, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		w.releaseLocked(size)
		return nil, ErrClosed
	}
	bucket := w.stickyBucket(NoPartition, size)
	tb := TableBucket{w.t.info.TableID, NoPartition, bucket}
	q := w.queues[tb]
	if q == nil {
		q = &bucketQueue{}
		w.queues[tb] = q
	}
	if n := len(q.batches); n > 0 {
		q.batches[n-1].full = true
	}
	b := newBatch(tb, "")
	rec.Retain()
	b.rec = rec
	b.full = true
	b.count = int32(rec.NumRows())
	b.size = size
	q.batches = append(q.batches, b)
	w.signal()
	return &WriteResult{b: b}, nil
}

// addKv adds an upsert (del false) or delete of a full row.
func (w *writer) addKv(ctx context.Context, vals []row.Datum, del bool) (*WriteResult, error) {
	partID, partName, err := w.target(ctx, vals)
	if err != nil {
		return nil, err
	}
	key, err := w.t.encodeKey(nil, w.t.physPK, vals)
	if err != nil {
		return nil, fmt.Errorf("fluss: primary key: %w", err)
	}
	bkey := key
	if !sameCols(w.t.bucketKey, w.t.physPK) {
		if bkey, err = w.t.encodeKey(nil, w.t.bucketKey, vals); err != nil {
			return nil, fmt.Errorf("fluss: bucket key: %w", err)
		}
	}
	bucket, err := w.t.bucketOfKey(bkey)
	if err != nil {
		return nil, err
	}
	var value []byte
	if !del {
		// The row is encoded into pooled scratch: AppendKvRecord below copies it into the
		// batch, and nothing else keeps it. Encoding into nil grew the buffer five times per
		// ~100-byte row (docs/benchmarks.md, "The Go client against the Java client").
		scratch := rowBufPool.Get().(*[]byte)
		defer func() { rowBufPool.Put(scratch) }()
		if w.kvFormat == metadata.KvFormatIndexed {
			value, err = row.AppendIndexedRow((*scratch)[:0], w.t.types, vals)
		} else {
			value, err = row.AppendCompactedRow((*scratch)[:0], w.t.types, vals)
		}
		if err != nil {
			return nil, fmt.Errorf("fluss: encode row: %w", err)
		}
		if cap(value) <= 64<<10 { // do not let one huge row pin a large buffer in the pool
			*scratch = value[:0]
		}
	}
	size := record.KvRecordSize(key, value)
	if err := w.reserve(ctx, size); err != nil {
		return nil, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		w.releaseLocked(size)
		return nil, ErrClosed
	}
	b, err := w.batchFor(TableBucket{w.t.info.TableID, partID, bucket}, partName, size)
	if err != nil {
		w.releaseLocked(size)
		return nil, err
	}
	b.buf = record.AppendKvRecord(b.buf, key, value)
	return w.added(b, size), nil
}

// rowBufPool holds scratch buffers for encoding one KV row (addKv).
var rowBufPool = sync.Pool{New: func() any { b := make([]byte, 0, 256); return &b }}

// flush sends every buffered batch now and waits for all of them.
func (w *writer) flush(ctx context.Context) error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return ErrClosed
	}
	var pending []*writeBatch
	for _, q := range w.queues {
		pending = append(pending, q.batches...)
	}
	w.flushing++
	w.mu.Unlock()
	w.signal()
	defer func() {
		w.mu.Lock()
		w.flushing--
		w.mu.Unlock()
	}()
	var first error
	for _, b := range pending {
		select {
		case <-b.done:
			if b.err != nil && first == nil {
				first = b.err
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return first
}

// drainAndClose flushes with the connection's request timeout, then closes.
func (w *writer) drainAndClose() error {
	w.mu.Lock()
	closed := w.closed
	w.mu.Unlock()
	if closed {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), w.cfg.RequestTimeout)
	err := w.flush(ctx)
	cancel()
	w.close()
	return err
}

// close stops the sender and fails every unacknowledged batch with ErrClosed.
func (w *writer) close() {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return
	}
	w.closed = true
	w.mu.Unlock()
	w.cancel()
	w.wg.Wait()
	w.mu.Lock()
	for tb, q := range w.queues {
		for _, b := range q.batches {
			w.completeLocked(b, ErrClosed)
		}
		delete(w.queues, tb)
	}
	close(w.memFree)
	w.memFree = make(chan struct{})
	w.mu.Unlock()
	w.conn.unregister(w)
}

func (w *writer) closeFromConn() { w.close() }

// completeLocked finishes a batch. Called with w.mu held.
func (w *writer) completeLocked(b *writeBatch, err error) {
	select {
	case <-b.done:
		return
	default:
	}
	b.release()
	b.err = err
	close(b.done)
	w.releaseLocked(b.size)
}

// run is the sender loop.
func (w *writer) run() {
	defer w.wg.Done()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		next := w.sendReady()
		if next > 0 {
			timer.Reset(next)
		}
		select {
		case <-w.wake:
		case <-timer.C:
		case <-w.ctx.Done():
			return
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
	}
}

// sendReady sends the batches that are ready and returns how long until the next one may
// become ready (0: nothing pending).
func (w *writer) sendReady() time.Duration {
	w.mu.Lock()
	now := time.Now()
	var wait time.Duration
	soon := func(d time.Duration) {
		if d <= 0 {
			d = time.Millisecond
		}
		if wait == 0 || d < wait {
			wait = d
		}
	}
	var ready []*writeBatch
	var noLeader []TableBucket
	urgent := w.flushing > 0 || w.pressure > 0
	for tb, q := range w.queues {
		if q.inflight || len(q.batches) == 0 {
			continue
		}
		b := q.batches[0]
		if !(urgent || b.full || len(q.batches) > 1) {
			if linger := b.opened.Add(w.cfg.WriterBatchTimeout).Sub(now); linger > 0 {
				soon(linger)
				continue
			}
		}
		if now.Before(q.retryAt) {
			soon(q.retryAt.Sub(now))
			continue
		}
		if _, ok := w.conn.meta.cachedLeader(tb); !ok {
			noLeader = append(noLeader, tb)
			continue
		}
		ready = append(ready, b)
	}
	if len(noLeader) > 0 && !w.refreshing {
		w.refreshing = true
		w.wg.Add(1)
		go w.refreshLeaders(noLeader)
	}
	if len(ready) == 0 {
		w.mu.Unlock()
		return wait
	}
	if w.idempotent && w.writerID < 0 {
		w.mu.Unlock()
		id, err := w.initWriter()
		w.mu.Lock()
		if err != nil {
			// Fail what is ready: the writer cannot number its batches.
			for _, b := range ready {
				w.popLocked(b, fmt.Errorf("fluss: init writer: %w", err))
			}
			w.mu.Unlock()
			return wait
		}
		w.writerID = id
	}
	groups := map[ServerNode][]*writeBatch{}
	for _, b := range ready {
		q := w.queues[b.tb]
		if q == nil || len(q.batches) == 0 || q.batches[0] != b || q.inflight {
			continue
		}
		if !b.sealed || (w.idempotent && b.writerID != w.writerID) {
			seq := int32(-1)
			if w.idempotent {
				seq = q.nextSeq
				q.nextSeq++
			}
			if err := w.seal(b, w.writerID, seq); err != nil {
				w.popLocked(b, err)
				continue
			}
		}
		leader, ok := w.conn.meta.cachedLeader(b.tb)
		if !ok {
			continue
		}
		q.inflight = true
		groups[leader] = append(groups[leader], b)
	}
	w.mu.Unlock()
	for leader, bs := range groups {
		// Split into requests under the size limit.
		var cur []*writeBatch
		size := 0
		for _, b := range bs {
			if len(cur) > 0 && size+len(b.payload) > w.cfg.WriterRequestMaxSize {
				w.wg.Add(1)
				go w.send(leader, cur)
				cur, size = nil, 0
			}
			cur = append(cur, b)
			size += len(b.payload)
		}
		w.wg.Add(1)
		go w.send(leader, cur)
	}
	return wait
}

// popLocked completes the head batch b of its queue.
func (w *writer) popLocked(b *writeBatch, err error) {
	q := w.queues[b.tb]
	if q != nil && len(q.batches) > 0 && q.batches[0] == b {
		q.batches = q.batches[1:]
		q.inflight = false
		if len(q.batches) == 0 {
			delete(w.queues, b.tb)
			// Keep the sequence: a later batch continues from it.
			if w.idempotent && q.nextSeq > 0 {
				w.queues[b.tb] = &bucketQueue{nextSeq: q.nextSeq}
			}
		}
	}
	w.completeLocked(b, err)
}

// initWriter obtains a writer id (INIT_WRITER), retrying retriable failures.
func (w *writer) initWriter() (int64, error) {
	req := &flusspb.InitWriterRequest{TablePath: []*flusspb.PbTablePath{pbPath(w.t.info.Path)}}
	for attempt := 0; ; attempt++ {
		var resp flusspb.InitWriterResponse
		err := w.conn.callAnyTablet(w.ctx, wire.InitWriter, req, &resp)
		if err == nil {
			return resp.GetWriterId(), nil
		}
		if attempt >= 3 || !CodeOf(err).Retriable() {
			return 0, err
		}
		if err := w.conn.backoff(w.ctx, attempt); err != nil {
			return 0, err
		}
	}
}

// refreshLeaders loads metadata for buckets without a known leader.
func (w *writer) refreshLeaders(tbs []TableBucket) {
	defer w.wg.Done()
	failed := map[TableBucket]error{}
	for _, tb := range tbs {
		if _, ok := w.conn.meta.cachedLeader(tb); ok {
			continue
		}
		if _, err := w.conn.meta.leader(w.ctx, w.t.info.Path, tb); err != nil && !CodeOf(err).Retriable() && w.ctx.Err() == nil {
			failed[tb] = err
			if CodeOf(err) == ErrPartitionNotExists {
				w.conn.meta.forgetPartition(tb.TableID, tb.PartitionID)
			}
		}
	}
	w.mu.Lock()
	w.refreshing = false
	for tb, err := range failed {
		if q := w.queues[tb]; q != nil && !q.inflight {
			for len(q.batches) > 0 {
				w.popLocked(q.batches[0], err)
				if w.queues[tb] != q {
					break
				}
			}
		}
	}
	w.mu.Unlock()
	if len(failed) == 0 && w.ctx.Err() == nil {
		// Avoid a hot loop while leaders are still unknown.
		select {
		case <-time.After(50 * time.Millisecond):
		case <-w.ctx.Done():
		}
	}
	w.signal()
}

// send ships batches to one leader in one request and processes the answer.
func (w *writer) send(leader ServerNode, batches []*writeBatch) {
	defer w.wg.Done()
	codes := make([]ErrorCode, len(batches))
	msgs := make([]string, len(batches))
	var reqErr error
	timeout := int32(min(w.cfg.RequestTimeout, math.MaxInt32*time.Millisecond) / time.Millisecond)
	if w.kv {
		req := &flusspb.PutKvRequest{Acks: proto.Int32(w.acks), TableId: proto.Int64(w.t.info.TableID), TimeoutMs: proto.Int32(timeout), TargetColumns: w.targetCols, AggMode: w.aggMode}
		for _, b := range batches {
			r := &flusspb.PbPutKvReqForBucket{BucketId: proto.Int32(b.tb.Bucket), Records: b.payload}
			r.PartitionId = b.tb.partitionIDField()
			req.BucketsReq = append(req.BucketsReq, r)
		}
		var resp flusspb.PutKvResponse
		if reqErr = w.conn.call(w.ctx, leader, wire.PutKv, req, &resp); reqErr == nil {
			w.matchResponses(batches, codes, msgs, len(resp.BucketsResp), func(i int) (int64, int32, int32, string, bool) {
				r := resp.BucketsResp[i]
				return r.GetPartitionId(), r.GetBucketId(), r.GetErrorCode(), r.GetErrorMessage(), r.PartitionId != nil
			})
		}
	} else {
		req := &flusspb.ProduceLogRequest{Acks: proto.Int32(w.acks), TableId: proto.Int64(w.t.info.TableID), TimeoutMs: proto.Int32(timeout)}
		for _, b := range batches {
			r := &flusspb.PbProduceLogReqForBucket{BucketId: proto.Int32(b.tb.Bucket), Records: b.payload}
			r.PartitionId = b.tb.partitionIDField()
			req.BucketsReq = append(req.BucketsReq, r)
		}
		var resp flusspb.ProduceLogResponse
		if reqErr = w.conn.call(w.ctx, leader, wire.ProduceLog, req, &resp); reqErr == nil {
			w.matchResponses(batches, codes, msgs, len(resp.BucketsResp), func(i int) (int64, int32, int32, string, bool) {
				r := resp.BucketsResp[i]
				return r.GetPartitionId(), r.GetBucketId(), r.GetErrorCode(), r.GetErrorMessage(), r.PartitionId != nil
			})
		}
	}
	w.mu.Lock()
	for i, b := range batches {
		code, msg := codes[i], msgs[i]
		if reqErr != nil {
			code, msg = CodeOf(reqErr), reqErr.Error()
			if errors.Is(reqErr, ErrClosed) || w.ctx.Err() != nil {
				code = codeClosing
			}
		}
		w.handleResultLocked(b, code, msg)
	}
	w.mu.Unlock()
	w.signal()
}

// matchResponses maps per-bucket answers to batches; batches without an answer get
// UNKNOWN_SERVER_ERROR.
func (w *writer) matchResponses(batches []*writeBatch, codes []ErrorCode, msgs []string, n int, get func(int) (part int64, bucket, code int32, msg string, hasPart bool)) {
	for i := range codes {
		codes[i], msgs[i] = ErrUnknownServerError, "no response for this bucket"
	}
	for j := 0; j < n; j++ {
		part, bucket, code, msg, hasPart := get(j)
		if !hasPart {
			part = NoPartition
		}
		for i, b := range batches {
			if b.tb.Bucket == bucket && b.tb.PartitionID == part {
				codes[i], msgs[i] = ErrorCode(code), msg
			}
		}
	}
}

// handleResultLocked applies the outcome of sending b.
func (w *writer) handleResultLocked(b *writeBatch, code ErrorCode, msg string) {
	q := w.queues[b.tb]
	if q == nil || len(q.batches) == 0 || q.batches[0] != b {
		return // completed by close
	}
	q.inflight = false
	switch {
	case code == codeClosing:
		w.popLocked(b, ErrClosed)
		return
	case code == 0 || code == ErrDuplicateSequence:
		w.popLocked(b, nil)
		return
	}
	err := &Error{Code: code, Message: msg}
	if isRoutingError(code) {
		w.conn.meta.invalidate(b.tb.TableID, b.tb.PartitionID)
	}
	if code == ErrPartitionNotExists {
		w.conn.meta.forgetPartition(b.tb.TableID, b.tb.PartitionID)
	}
	retry := b.attempts < w.cfg.WriterRetries
	if w.idempotent && (code == ErrUnknownWriterId || code == ErrOutOfOrderSequence) && retry {
		w.resetWriterLocked()
		b.attempts++
		return
	}
	if code.Retriable() && retry {
		b.attempts++
		q.retryAt = time.Now().Add(w.retryDelay(code, b.attempts))
		return
	}
	if w.idempotent {
		if code.Retriable() {
			// The batch may or may not have been applied: start a fresh writer identity so
			// that later batches are not taken for duplicates or gaps.
			w.resetWriterLocked()
		} else {
			// Definitely rejected: its sequence number is free again.
			q.nextSeq = b.seq
		}
	}
	w.popLocked(b, err)
}

// aggModeOverwrite is PUT_KV's agg_mode for Fluss's MergeMode.OVERWRITE.
const aggModeOverwrite = 1

// resetWriterLocked drops the writer id; unsent or retried batches are resealed with the new
// id and fresh sequences.
func (w *writer) resetWriterLocked() {
	w.writerID = -1
	for _, q := range w.queues {
		q.nextSeq = 0
	}
}

// retryDelay is the wait before resending a batch that failed attempt times with retriable
// code. A server that reports storage backpressure gets WriterBackpressureBackoff, doubling
// up to four times that (the Java client also starts at writer.kv-backpressure.max-throttle);
// every other retriable error 100ms doubling up to 1s.
func (w *writer) retryDelay(code ErrorCode, attempt int) time.Duration {
	if code == ErrStorageBackpressure {
		return w.cfg.WriterBackpressureBackoff << min(attempt-1, 2)
	}
	return min(100*time.Millisecond<<min(attempt-1, 4), time.Second)
}
