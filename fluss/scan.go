package fluss

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/arrowlog"
	"github.com/stromdb/strom/internal/fetchresp"
	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/internal/record"
	"github.com/stromdb/strom/internal/row"
	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
)

// TableScan configures a scanner: an optional projection and, for bucket batch scanners, a
// row limit.
type TableScan struct {
	t       *Table
	project []int
	names   []string
	limit   int
	filter  *Predicate // pushed down to the server (filter.go)
}

// NewScan starts configuring a scan of the table.
func (t *Table) NewScan() *TableScan { return &TableScan{t: t} }

// Project keeps only the given columns, in the given order. For ARROW log tables the
// projection is pushed down to the server.
func (s *TableScan) Project(columns ...int) *TableScan {
	s.project, s.names = columns, nil
	return s
}

// ProjectByName is Project with column names.
func (s *TableScan) ProjectByName(columns ...string) *TableScan {
	s.names, s.project = columns, nil
	return s
}

// Limit sets the number of rows a bucket batch scanner returns.
func (s *TableScan) Limit(n int) *TableScan {
	s.limit = n
	return s
}

// projection resolves the configured projection to column indexes (nil = all columns).
func (s *TableScan) projection() ([]int, error) {
	if s.names != nil {
		idx := make([]int, len(s.names))
		for i, n := range s.names {
			j := s.t.info.desc.Schema.ColumnIndex(n)
			if j < 0 {
				return nil, fmt.Errorf("fluss: table %s has no column %q", s.t.info.Path, n)
			}
			idx[i] = j
		}
		return idx, nil
	}
	for _, i := range s.project {
		if i < 0 || i >= len(s.t.cols) {
			return nil, fmt.Errorf("fluss: projected column %d out of range", i)
		}
	}
	if s.project != nil && len(s.project) == 0 {
		return nil, fmt.Errorf("fluss: empty projection")
	}
	return s.project, nil
}

// ScanRecord is one row read from a log (or a primary-key table's changelog).
type ScanRecord struct {
	Bucket     TableBucket
	Offset     int64
	Timestamp  int64 // commit timestamp of the record's batch, epoch ms
	ChangeType ChangeType
	Row        Row // projected columns
}

// ScanBatch is one log batch read by a RecordBatchLogScanner.
type ScanBatch struct {
	Bucket      TableBucket
	BaseOffset  int64 // offset of the first row of Record
	LastOffset  int64 // offset of the last row of Record
	Timestamp   int64
	Record      arrow.RecordBatch // projected columns; the caller must Release it
	ChangeTypes []ChangeType      // one per row
}

// logFetcher holds a scanner's subscriptions and fetches from bucket leaders. Poll is not
// meant to be called concurrently; subscriptions may change between polls.
type logFetcher struct {
	t      *Table
	conn   *Connection
	proj   []int // user order, nil = all
	sorted []int // ascending unique projection sent to the server, nil = all
	// reorder[i] is the position in the fetched (sorted) columns of output column i.
	reorder    []int
	fetchCols  []metadata.Column // columns as fetched
	fetchArrow *arrow.Schema
	outCols    []metadata.Column
	outArrow   *arrow.Schema
	pushdown   bool
	filter     *flusspb.PbPredicate // FETCH_LOG filter_predicate, nil for none
	filterID   int32                // its filter_schema_id
	// unprojected decodes data that was not projected by the server (remote log segments):
	// f itself unless f pushes its projection down.
	unprojected *logFetcher
	remoteReads atomic.Int64 // remote segment reads, for tests
	s3          s3Remote     // the S3 client remote segments are read with (remote_s3.go)
	recordBytes atomic.Int64 // record bytes received in FETCH_LOG answers, for benchmarks

	mu     sync.Mutex
	subs   map[TableBucket]int64
	closed bool
}

func newLogFetcher(s *TableScan) (*logFetcher, error) {
	f, err := buildLogFetcher(s, true)
	if err != nil {
		return nil, err
	}
	f.unprojected = f
	if f.pushdown {
		if f.unprojected, err = buildLogFetcher(s, false); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// buildLogFetcher configures a fetcher; pushdown allows pushing the projection to the
// server (ARROW logs only).
func buildLogFetcher(s *TableScan, pushdown bool) (*logFetcher, error) {
	proj, err := s.projection()
	if err != nil {
		return nil, err
	}
	t := s.t
	f := &logFetcher{t: t, conn: t.conn, proj: proj, subs: map[TableBucket]int64{}}
	f.pushdown = pushdown && proj != nil && t.info.desc.Properties.LogFormat() == metadata.LogFormatArrow
	if proj != nil {
		f.sorted = slices.Clone(proj)
		slices.Sort(f.sorted)
		f.sorted = slices.Compact(f.sorted)
	}
	if f.pushdown {
		f.fetchCols = pick(t.cols, f.sorted)
	} else {
		f.fetchCols = t.cols
	}
	if proj != nil {
		base := f.sorted
		if !f.pushdown {
			base = nil
		}
		for _, p := range proj {
			if base == nil {
				f.reorder = append(f.reorder, p)
			} else {
				f.reorder = append(f.reorder, slices.Index(base, p))
			}
		}
		f.outCols = pick(t.cols, proj)
	} else {
		f.outCols = t.cols
	}
	if f.fetchArrow, err = arrowlog.ArrowSchema(f.fetchCols); err != nil {
		return nil, err
	}
	if f.filter, err = s.filterPB(); err != nil {
		return nil, err
	}
	f.filterID = t.info.SchemaID
	if f.outArrow, err = arrowlog.ArrowSchema(f.outCols); err != nil {
		return nil, err
	}
	return f, nil
}

func (f *logFetcher) subscribe(ctx context.Context, tb TableBucket, offset int64) error {
	if tb.Bucket < 0 || tb.Bucket >= f.t.info.NumBuckets() {
		return fmt.Errorf("fluss: bucket %d out of range (table has %d)", tb.Bucket, f.t.info.NumBuckets())
	}
	if tb.IsPartitioned() != f.t.info.IsPartitioned() {
		if f.t.info.IsPartitioned() {
			return fmt.Errorf("fluss: table %s is partitioned: use SubscribePartition", f.t.info.Path)
		}
		return newError(ErrTableNotPartitioned, "table %s is not partitioned", f.t.info.Path)
	}
	if offset == LatestOffset {
		off, err := f.latest(ctx, tb)
		if err != nil {
			return err
		}
		offset = off
	} else if offset < EarliestOffset {
		return fmt.Errorf("fluss: invalid start offset %d", offset)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return ErrClosed
	}
	f.subs[tb] = offset
	return nil
}

func (f *logFetcher) unsubscribe(tb TableBucket) {
	f.mu.Lock()
	delete(f.subs, tb)
	f.mu.Unlock()
}

// latest returns the high watermark of tb.
func (f *logFetcher) latest(ctx context.Context, tb TableBucket) (int64, error) {
	return f.listOffset(ctx, tb, OffsetLatest())
}

// listOffset returns the offset spec selects in tb.
func (f *logFetcher) listOffset(ctx context.Context, tb TableBucket, spec OffsetSpec) (int64, error) {
	leader, err := f.conn.meta.leader(ctx, f.t.info.Path, tb)
	if err != nil {
		return 0, err
	}
	req := &flusspb.ListOffsetsRequest{
		FollowerServerId: proto.Int32(clientFollowerID), OffsetType: proto.Int32(spec.kind), TableId: proto.Int64(tb.TableID),
		BucketId: []int32{tb.Bucket},
	}
	if spec.kind == offsetKindTimestamp {
		req.StartTimestamp = proto.Int64(spec.timestamp)
	}
	req.PartitionId = tb.partitionIDField()
	var resp flusspb.ListOffsetsResponse
	if err := f.conn.call(ctx, leader, wire.ListOffsets, req, &resp); err != nil {
		return 0, err
	}
	if len(resp.BucketsResp) == 0 {
		return 0, fmt.Errorf("fluss: no offset for %s", tb)
	}
	b := resp.BucketsResp[0]
	if b.GetErrorCode() != 0 {
		return 0, &Error{Code: ErrorCode(b.GetErrorCode()), Message: b.GetErrorMessage()}
	}
	return b.GetOffset(), nil
}

// fetched is the decoded content of one bucket's fetch.
type fetched struct {
	tb      TableBucket
	batches []ScanBatch
	// filteredEnd is the server's filtered_end_offset (-1: none): it scanned and pruned up
	// to there, so the next fetch starts no earlier.
	filteredEnd int64
}

// poll fetches once from every leader of the subscribed buckets, waiting up to maxWait on
// the server, and returns the decoded batches (projected and reordered).
func (f *logFetcher) poll(ctx context.Context, maxWait time.Duration) ([]fetched, error) {
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return nil, ErrClosed
	}
	subs := make(map[TableBucket]int64, len(f.subs))
	for tb, o := range f.subs {
		subs[tb] = o
	}
	f.mu.Unlock()
	if len(subs) == 0 {
		return nil, nil
	}
	byLeader := map[ServerNode][]TableBucket{}
	for tb := range subs {
		leader, err := f.conn.meta.leader(ctx, f.t.info.Path, tb)
		if err != nil {
			if CodeOf(err).Retriable() {
				continue
			}
			return nil, err
		}
		byLeader[leader] = append(byLeader[leader], tb)
	}
	type result struct {
		out []fetched
		err error
	}
	results := make(chan result, len(byLeader))
	for leader, tbs := range byLeader {
		go func() {
			out, err := f.fetchFrom(ctx, leader, tbs, subs, maxWait)
			results <- result{out, err}
		}()
	}
	var all []fetched
	var firstErr error
	for range byLeader {
		r := <-results
		all = append(all, r.out...)
		if r.err != nil && firstErr == nil {
			firstErr = r.err
		}
	}
	if firstErr != nil {
		for _, fe := range all {
			for _, b := range fe.batches {
				b.Record.Release()
			}
		}
		return nil, firstErr
	}
	// Advance offsets of buckets still subscribed at the offset we fetched from.
	f.mu.Lock()
	for _, fe := range all {
		if cur, ok := f.subs[fe.tb]; ok && cur == subs[fe.tb] {
			if len(fe.batches) > 0 {
				f.subs[fe.tb] = fe.batches[len(fe.batches)-1].LastOffset + 1
			}
			if fe.filteredEnd >= 0 && fe.filteredEnd > f.subs[fe.tb] {
				f.subs[fe.tb] = fe.filteredEnd
			}
		}
	}
	f.mu.Unlock()
	return all, nil
}

// copyFetchedRecords, set only by tests, decodes FETCH_LOG answers with proto.Unmarshal
// (records copied out of the frame) instead of fetchresp's aliasing decoder, so that a test can
// hold one to the other on real answers.
var copyFetchedRecords atomic.Bool

// fetchFrom sends one FETCH_LOG to leader for the given buckets.
func (f *logFetcher) fetchFrom(ctx context.Context, leader ServerNode, tbs []TableBucket, subs map[TableBucket]int64, maxWait time.Duration) ([]fetched, error) {
	cfg := f.conn.cfg
	tr := &flusspb.PbFetchLogReqForTable{TableId: proto.Int64(f.t.info.TableID), ProjectionPushdownEnabled: proto.Bool(f.pushdown)}
	if f.pushdown {
		for _, c := range f.sorted {
			tr.ProjectedFields = append(tr.ProjectedFields, int32(c))
		}
	}
	if f.filter != nil {
		tr.FilterPredicate, tr.FilterSchemaId = f.filter, proto.Int32(f.filterID)
	}
	for _, tb := range tbs {
		br := &flusspb.PbFetchLogReqForBucket{BucketId: proto.Int32(tb.Bucket), FetchOffset: proto.Int64(subs[tb]), MaxFetchBytes: proto.Int32(int32(cfg.ScannerFetchMaxBytesForBucket))}
		br.PartitionId = tb.partitionIDField()
		tr.BucketsReq = append(tr.BucketsReq, br)
	}
	req := &flusspb.FetchLogRequest{
		FollowerServerId: proto.Int32(clientFollowerID), MaxBytes: proto.Int32(int32(cfg.ScannerFetchMaxBytes)),
		TablesReq: []*flusspb.PbFetchLogReqForTable{tr},
		MaxWaitMs: proto.Int32(int32(maxWait / time.Millisecond)), MinBytes: proto.Int32(1),
	}
	// Records that start 8-byte aligned in the response frame stay there (fetchresp.Aligned)
	// and the Arrow batches decoded from them refer to it: the frame then lives as long as any
	// of them does. Misaligned records are copied once; a frame nothing refers to is reused.
	var resp flusspb.FetchLogResponse
	var into proto.Message = fetchresp.Aligned{FetchLogResponse: &resp}
	if copyFetchedRecords.Load() {
		into = &resp // proto.Unmarshal's copy: the differential test's reference
	}
	if err := f.conn.call(ctx, leader, wire.FetchLog, req, into); err != nil {
		if CodeOf(err) == ErrNetworkException {
			f.conn.meta.invalidate(f.t.info.TableID, NoPartition)
			return nil, nil // retried by the next poll
		}
		return nil, err
	}
	var out []fetched
	for _, t := range resp.TablesResp {
		for _, b := range t.BucketsResp {
			tb := TableBucket{f.t.info.TableID, NoPartition, b.GetBucketId()}
			if b.PartitionId != nil {
				tb.PartitionID = b.GetPartitionId()
			}
			if code := ErrorCode(b.GetErrorCode()); code != 0 {
				if isRoutingError(code) || code == ErrFencedLeaderEpoch {
					f.conn.meta.invalidate(tb.TableID, tb.PartitionID)
					continue
				}
				if code.Retriable() {
					continue
				}
				releaseAll(out)
				return nil, fmt.Errorf("fluss: fetch %s: %w", tb, &Error{Code: code, Message: b.GetErrorMessage()})
			}
			f.recordBytes.Add(int64(len(b.GetRecords())))
			batches, err := f.decodeBucket(ctx, tb, b, subs[tb])
			if err != nil {
				releaseAll(out)
				return nil, err
			}
			fe := fetched{tb: tb, batches: batches, filteredEnd: -1}
			if b.FilteredEndOffset != nil {
				fe.filteredEnd = b.GetFilteredEndOffset()
			}
			out = append(out, fe)
		}
	}
	return out, nil
}

// decodeBucket decodes one bucket's fetch answer from offset from: its records, or, when the
// server points to remote storage instead, the remote segment's (which are not projected).
func (f *logFetcher) decodeBucket(ctx context.Context, tb TableBucket, b *flusspb.PbFetchLogRespForBucket, from int64) ([]ScanBatch, error) {
	ri := b.GetRemoteLogFetchInfo()
	if ri == nil || len(b.GetRecords()) > 0 {
		return f.decode(tb, b.GetRecords(), from)
	}
	f.remoteReads.Add(1)
	records, err := f.readRemoteSegment(ctx, ri, f.conn.cfg.ScannerFetchMaxBytesForBucket)
	if err != nil {
		return nil, fmt.Errorf("fluss: fetch %s from offset %d: %w", tb, from, err)
	}
	return f.unprojected.decode(tb, records, from)
}

func releaseAll(out []fetched) []fetched {
	for _, fe := range out {
		for _, b := range fe.batches {
			b.Record.Release()
		}
	}
	return nil
}

// decode turns fetched log batches into projected Arrow batches, dropping rows before from
// (a batch may start before the requested offset).
func (f *logFetcher) decode(tb TableBucket, data []byte, from int64) ([]ScanBatch, error) {
	var out []ScanBatch
	fail := func(err error) ([]ScanBatch, error) {
		for _, b := range out {
			b.Record.Release()
		}
		return nil, fmt.Errorf("fluss: decode %s: %w", tb, err)
	}
	for b, err := range record.Iterate(data) {
		if err != nil {
			return fail(err)
		}
		n := int(b.RecordCount())
		if n == 0 || b.LastOffset() < from {
			continue
		}
		rec, cts, err := f.decodeBatch(b)
		if err != nil {
			return fail(err)
		}
		base := b.BaseOffset()
		if skip := from - base; skip > 0 {
			sliced := rec.NewSlice(skip, int64(n))
			rec.Release()
			rec = sliced
			cts = cts[skip:]
			base = from
		}
		out = append(out, ScanBatch{Bucket: tb, BaseOffset: base, LastOffset: base + rec.NumRows() - 1, Timestamp: b.CommitTimestamp(), Record: rec, ChangeTypes: cts})
	}
	return out, nil
}

// decodeBatch decodes one batch to an output-shaped record and its change types.
func (f *logFetcher) decodeBatch(b record.Batch) (arrow.RecordBatch, []ChangeType, error) {
	n := int(b.RecordCount())
	cts := make([]ChangeType, n)
	var rec arrow.RecordBatch
	if f.t.info.desc.Properties.LogFormat() == metadata.LogFormatArrow {
		raw, r, err := arrowlog.Decode(f.fetchArrow, b.AppendOnly(), n, b.Records(), nil)
		if err != nil {
			return nil, nil, err
		}
		for i := range cts {
			if raw != nil {
				cts[i] = ChangeType(raw[i])
			}
		}
		rec = r
	} else {
		rows := make([][]row.Datum, 0, n)
		rd := record.NewRowLogReader(b.Records(), b.RecordCount())
		indexed := f.t.info.desc.Properties.LogFormat() == metadata.LogFormatIndexed
		for i := 0; ; i++ {
			ct, rb, ok := rd.Next()
			if !ok {
				break
			}
			var ds []row.Datum
			var err error
			if indexed {
				ds, err = row.DecodeIndexedRow(f.t.types, rb, nil)
			} else {
				ds, err = row.DecodeCompactedRow(f.t.types, rb, nil)
			}
			if err != nil {
				return nil, nil, err
			}
			if i < n {
				cts[i] = ChangeType(ct)
			}
			rows = append(rows, ds)
		}
		if err := rd.Err(); err != nil {
			return nil, nil, err
		}
		r, err := arrowlog.RowsToRecord(f.fetchArrow, f.fetchCols, rows, nil)
		if err != nil {
			return nil, nil, err
		}
		rec = r
	}
	if f.reorder != nil {
		cols := make([]arrow.Array, len(f.reorder))
		for i, j := range f.reorder {
			cols[i] = rec.Column(j)
		}
		out := array.NewRecordBatch(f.outArrow, cols, rec.NumRows())
		rec.Release()
		rec = out
	}
	return rec, cts, nil
}

func (f *logFetcher) close() {
	f.mu.Lock()
	f.closed = true
	f.subs = map[TableBucket]int64{}
	f.mu.Unlock()
}

// pollUntil polls until at least one batch arrives, the timeout passes or ctx ends.
func (f *logFetcher) pollUntil(ctx context.Context, timeout time.Duration) ([]fetched, error) {
	deadline := time.Now().Add(timeout)
	for {
		wait := min(time.Until(deadline), f.conn.cfg.ScannerFetchMaxWait)
		out, err := f.poll(ctx, max(wait, 0))
		if err != nil || len(out) > 0 && hasRows(out) {
			return out, err
		}
		if time.Until(deadline) <= 0 {
			return nil, nil
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		f.mu.Lock()
		empty := len(f.subs) == 0
		f.mu.Unlock()
		if empty {
			// Nothing to fetch: wait out the timeout.
			t := time.NewTimer(time.Until(deadline))
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return nil, ctx.Err()
			}
			return nil, nil
		}
	}
}

func hasRows(out []fetched) bool {
	for _, fe := range out {
		if len(fe.batches) > 0 {
			return true
		}
	}
	return false
}

// LogScanner reads a log table (or a primary-key table's changelog) record by record.
type LogScanner struct{ f *logFetcher }

// CreateLogScanner returns a record scanner. Subscribe to buckets, then Poll.
func (s *TableScan) CreateLogScanner() (*LogScanner, error) {
	f, err := newLogFetcher(s)
	if err != nil {
		return nil, err
	}
	return &LogScanner{f: f}, nil
}

// Subscribe starts reading bucket (of a non-partitioned table) at offset, which may be
// EarliestOffset or LatestOffset. Re-subscribing moves the position.
func (s *LogScanner) Subscribe(ctx context.Context, bucket int32, offset int64) error {
	return s.f.subscribe(ctx, NewTableBucket(s.f.t.info.TableID, bucket), offset)
}

// SubscribeBuckets subscribes to several buckets: bucket -> start offset.
func (s *LogScanner) SubscribeBuckets(ctx context.Context, offsets map[int32]int64) error {
	for b, o := range offsets {
		if err := s.Subscribe(ctx, b, o); err != nil {
			return err
		}
	}
	return nil
}

// SubscribePartition starts reading one bucket of a partition of a partitioned table.
func (s *LogScanner) SubscribePartition(ctx context.Context, partitionID int64, bucket int32, offset int64) error {
	return s.f.subscribe(ctx, NewPartitionBucket(s.f.t.info.TableID, partitionID, bucket), offset)
}

// PartitionBucket names a bucket of a partition, for SubscribePartitionBuckets.
type PartitionBucket struct {
	PartitionID int64
	Bucket      int32
}

// SubscribePartitionBuckets subscribes to several partition buckets.
func (s *LogScanner) SubscribePartitionBuckets(ctx context.Context, offsets map[PartitionBucket]int64) error {
	for pb, o := range offsets {
		if err := s.SubscribePartition(ctx, pb.PartitionID, pb.Bucket, o); err != nil {
			return err
		}
	}
	return nil
}

// Unsubscribe stops reading a bucket of a non-partitioned table.
func (s *LogScanner) Unsubscribe(bucket int32) {
	s.f.unsubscribe(NewTableBucket(s.f.t.info.TableID, bucket))
}

// UnsubscribePartition stops reading a bucket of a partition.
func (s *LogScanner) UnsubscribePartition(partitionID int64, bucket int32) {
	s.f.unsubscribe(NewPartitionBucket(s.f.t.info.TableID, partitionID, bucket))
}

// Poll returns the records that arrived on the subscribed buckets, waiting up to timeout for
// at least one. An empty result means nothing arrived in time.
func (s *LogScanner) Poll(ctx context.Context, timeout time.Duration) ([]ScanRecord, error) {
	out, err := s.f.pollUntil(ctx, timeout)
	if err != nil {
		return nil, publicError(err)
	}
	var recs []ScanRecord
	for _, fe := range out {
		for _, b := range fe.batches {
			rows, err := arrowlog.RecordToRows(b.Record, s.f.outCols)
			if err != nil {
				b.Record.Release()
				releaseAll(out)
				return nil, publicError(fmt.Errorf("fluss: %w", err))
			}
			for i, ds := range rows {
				recs = append(recs, ScanRecord{
					Bucket: b.Bucket, Offset: b.BaseOffset + int64(i), Timestamp: b.Timestamp,
					ChangeType: b.ChangeTypes[i], Row: fromDatums(s.f.outCols, ds),
				})
			}
			b.Record.Release()
		}
	}
	return recs, nil
}

// Close stops the scanner.
func (s *LogScanner) Close() error {
	s.f.close()
	return nil
}

// RecordBatchLogScanner reads a log as Arrow batches.
type RecordBatchLogScanner struct{ f *logFetcher }

// CreateRecordBatchLogScanner returns an Arrow batch scanner. Subscribe to buckets, then
// Poll.
func (s *TableScan) CreateRecordBatchLogScanner() (*RecordBatchLogScanner, error) {
	f, err := newLogFetcher(s)
	if err != nil {
		return nil, err
	}
	return &RecordBatchLogScanner{f: f}, nil
}

// Subscribe starts reading bucket at offset (EarliestOffset, LatestOffset or an offset).
func (s *RecordBatchLogScanner) Subscribe(ctx context.Context, bucket int32, offset int64) error {
	return s.f.subscribe(ctx, NewTableBucket(s.f.t.info.TableID, bucket), offset)
}

// SubscribeBuckets subscribes to several buckets: bucket -> start offset.
func (s *RecordBatchLogScanner) SubscribeBuckets(ctx context.Context, offsets map[int32]int64) error {
	for b, o := range offsets {
		if err := s.Subscribe(ctx, b, o); err != nil {
			return err
		}
	}
	return nil
}

// SubscribePartition starts reading one bucket of a partition.
func (s *RecordBatchLogScanner) SubscribePartition(ctx context.Context, partitionID int64, bucket int32, offset int64) error {
	return s.f.subscribe(ctx, NewPartitionBucket(s.f.t.info.TableID, partitionID, bucket), offset)
}

// Unsubscribe stops reading a bucket of a non-partitioned table.
func (s *RecordBatchLogScanner) Unsubscribe(bucket int32) {
	s.f.unsubscribe(NewTableBucket(s.f.t.info.TableID, bucket))
}

// UnsubscribePartition stops reading a bucket of a partition.
func (s *RecordBatchLogScanner) UnsubscribePartition(partitionID int64, bucket int32) {
	s.f.unsubscribe(NewPartitionBucket(s.f.t.info.TableID, partitionID, bucket))
}

// Poll returns the batches that arrived, waiting up to timeout for at least one. The caller
// must Release each batch's Record.
func (s *RecordBatchLogScanner) Poll(ctx context.Context, timeout time.Duration) ([]ScanBatch, error) {
	out, err := s.f.pollUntil(ctx, timeout)
	if err != nil {
		return nil, publicError(err)
	}
	var batches []ScanBatch
	for _, fe := range out {
		batches = append(batches, fe.batches...)
	}
	return batches, nil
}

// Schema returns the Arrow schema of the records Poll returns.
func (s *RecordBatchLogScanner) Schema() *arrow.Schema { return s.f.outArrow }

// Close stops the scanner.
func (s *RecordBatchLogScanner) Close() error {
	s.f.close()
	return nil
}
