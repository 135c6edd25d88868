package tablet

import (
	"sync"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/batchstats"
	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/internal/predicate"
	"github.com/stromdb/strom/internal/record"
	"github.com/stromdb/strom/proto/flusspb"
	"github.com/stromdb/strom/server/cluster"
	"github.com/stromdb/strom/server/logstore"
)

// Server-side batch pruning for FETCH_LOG's filter_predicate (Fluss 1.0).
//
// A fetch with a filter reads the bucket as an unfiltered fetch would, then drops every
// batch whose statistics (batchstats, computed by Strom for every ARROW batch, whoever
// wrote it) prove that no row matches. filtered_end_offset tells the client how far the
// server scanned past the last batch it sent, so it does not fetch the pruned range again.
// As in Fluss, a predicate the server cannot use (unknown schema, field or function, a
// literal that does not decode) and a batch whose statistics cannot be computed never fail
// the fetch: the batches are sent, and the client's own filtering stays correct.

// maxFilterScanBytes bounds the stored bytes one filtered bucket read scans, so a filter
// that matches nothing cannot make a single fetch read the whole log (Fluss bounds it by 16
// segments). The client continues from filtered_end_offset.
const maxFilterScanBytes = 64 << 20

// fetchFilter is a decoded filter_predicate for one table of a FETCH_LOG.
type fetchFilter struct {
	table *cluster.TableInfo
	pred  predicate.Predicate
}

// checkFilters rejects what Fluss's server rejects before reading anything: a predicate
// without filter_schema_id, or with a negative one (Java: IllegalArgumentException, which
// the client receives as UNKNOWN_SERVER_ERROR for the whole request).
func checkFilters(r *flusspb.FetchLogRequest) error {
	for _, tr := range r.TablesReq {
		if tr.FilterPredicate == nil {
			continue
		}
		if tr.FilterSchemaId == nil {
			return ferr.New(ferr.UnknownServerError, "Filter predicate is set but filterSchemaId is missing for table %d", tr.GetTableId())
		}
		if tr.GetFilterSchemaId() < 0 {
			return ferr.New(ferr.UnknownServerError, "Invalid filterSchemaId (%d) for table %d", tr.GetFilterSchemaId(), tr.GetTableId())
		}
	}
	return nil
}

// tableFilter returns the filter of tr, or nil when there is none or it cannot be used
// (see the comment at the top).
func (s *fetchService) tableFilter(tr *flusspb.PbFetchLogReqForTable, table *cluster.TableInfo, tableOK bool) *fetchFilter {
	if tr.FilterPredicate == nil || !tableOK || table.Descriptor.Properties.LogFormat() != metadata.LogFormatArrow {
		return nil
	}
	schema, ok := s.opts.Catalog.Schema(table.ID, tr.GetFilterSchemaId())
	if !ok {
		s.log.Debug("filter schema not found; reading unfiltered", "table", table.Path, "schema", tr.GetFilterSchemaId())
		return nil
	}
	p, err := predicate.Decode(tr.FilterPredicate, schema)
	if err != nil {
		s.log.Debug("filter predicate not usable; reading unfiltered", "table", table.Path, "err", err)
		return nil
	}
	return &fetchFilter{table: table, pred: p}
}

// reader returns the bucket read of a fetch with filter f: readBucket when f is nil.
func (s *fetchService) reader(f *fetchFilter) func(*fetchResponse, *flusspb.PbFetchLogRespForBucket, cluster.Bucket, int64, int, bool, *cluster.TableInfo, []int) (int, error) {
	if f == nil {
		return s.readBucket
	}
	return func(resp *fetchResponse, bo *flusspb.PbFetchLogRespForBucket, b cluster.Bucket, offset int64, limit int, minOne bool, table *cluster.TableInfo, projection []int) (int, error) {
		return s.readFiltered(f, resp, bo, b, offset, limit, minOne, table, projection)
	}
}

// readFiltered is readBucket with pruning. It returns whole batches that may match, in
// order, at most limit bytes of them (the first one whole when minOne), and sets
// bo.FilteredEndOffset to the end of the scanned range when batches after the last one it
// returns were pruned (Fluss: not when it stopped because the response was full, since the
// client resumes after the last returned batch then anyway).
func (s *fetchService) readFiltered(f *fetchFilter, resp *fetchResponse, bo *flusspb.PbFetchLogRespForBucket, b cluster.Bucket, offset int64, limit int, minOne bool, table *cluster.TableInfo, projection []int) (int, error) {
	rep, err := s.replica(b)
	if err != nil {
		return 0, err
	}
	logStart := rep.Log.LogStartOffset()
	if offset == fetchFromEarliest {
		offset = logStart
	}
	bo.LogStartOffset = proto.Int64(logStart)
	// The batches that may match: projected ones in out, unprojected ones as runs of their
	// segment files in kept (sent with sendfile like an unfiltered read); size counts both.
	out := []byte{}
	var kept []logstore.ReadResult
	defer func() {
		for i := range kept {
			kept[i].Release()
		}
	}()
	size := 0
	lastIncluded, lastScanned := int64(-1), int64(-1)
	scanned, full := 0, false
	pos := offset
	chunk := min(max(limit, 1<<20), maxFilterScanBytes) // bytes copied per read
	for !full && scanned < maxFilterScanBytes {
		res, err := rep.Log.Read(pos, chunk, true)
		if err != nil {
			if lastScanned >= 0 {
				break // answer what was scanned; the next fetch meets the error
			}
			return 0, err
		}
		bo.HighWatermark = proto.Int64(res.HighWatermark)
		if res.Size == 0 {
			res.Release()
			break
		}
		kept, full, err = s.filterRead(f, rep, &res, limit, minOne, table, projection, &out, kept, &size, &lastIncluded, &lastScanned)
		res.Release()
		if err != nil {
			return 0, err
		}
		scanned += int(res.Size)
		if lastScanned <= pos {
			break // no progress: nothing more below the high watermark
		}
		pos = lastScanned
	}
	if len(kept) > 0 {
		resp.addFileRecords(bo, kept...)
		kept = nil // the response holds them now
	} else {
		bo.Records = out
		resp.heapBytes += len(out)
	}
	if !full && lastScanned > lastIncluded && lastScanned > offset {
		bo.FilteredEndOffset = proto.Int64(lastScanned)
		if size == 0 {
			// A pruned range is progress: count it as one byte so that a long poll
			// (min_bytes) answers now instead of waiting out max_wait_ms, as Java's
			// delayed fetch completes when data exists past the fetch offset.
			return 1, nil
		}
	}
	return size, nil
}

// filterRead prunes the batches of one read res (see readFiltered): each batch that may
// match is projected into out, or without a projection kept as part of a run of res (a
// slice with its own segment reference, appended to kept); size counts the bytes answered.
// It reports full once the next batch would exceed limit.
func (s *fetchService) filterRead(f *fetchFilter, rep *Replica, res *logstore.ReadResult, limit int, minOne bool, table *cluster.TableInfo, projection []int, out *[]byte, kept []logstore.ReadResult, size *int, lastIncluded, lastScanned *int64) ([]logstore.ReadResult, bool, error) {
	data, err := res.AppendTo(make([]byte, 0, res.Size))
	if err != nil {
		return kept, false, err
	}
	runStart, runEnd := 0, 0 // the run of kept batches of data not yet sliced
	flush := func() error {
		if runEnd > runStart {
			r, err := res.Slice(int64(runStart), int64(runEnd-runStart))
			if err != nil {
				return err
			}
			kept = append(kept, r)
		}
		runStart = runEnd
		return nil
	}
	full := false
	at := 0 // position of batch in data
	for batch, err := range record.Iterate(data) {
		if err != nil {
			return kept, false, err
		}
		batchAt := at
		at += len(batch)
		if !s.mayMatch(f, rep, batch) {
			if err := flush(); err != nil {
				return kept, false, err
			}
			runStart, runEnd = at, at
			*lastScanned = batch.NextOffset()
			continue
		}
		n := len(batch)
		var projected []byte
		if projection != nil {
			if projected, err = s.project(table, batch, projection); err != nil {
				return kept, false, err
			}
			n = len(projected)
		}
		if *size+n > limit && (*size > 0 || !minOne) {
			full = true
			break
		}
		if projection != nil {
			*out = append(*out, projected...)
		} else {
			if runEnd != batchAt {
				runStart = batchAt
			}
			runEnd = at
		}
		*size += n
		*lastIncluded, *lastScanned = batch.NextOffset(), batch.NextOffset()
	}
	return kept, full, flush()
}

// mayMatch reports whether batch may hold a row that f matches: false only when its
// statistics prove it has none.
func (s *fetchService) mayMatch(f *fetchFilter, rep *Replica, batch record.Batch) bool {
	if batch.RecordCount() == 0 {
		return true // takes an offset; sent as stored so clients advance as they always did
	}
	st := s.batchStats(rep, batch)
	return st == nil || f.pred.MayMatch(st)
}

// batchStats returns the statistics of a stored or just-appended ARROW batch: from the
// cache, else from its segment's sidecar (loaded into the cache once per segment), else
// computed now and recorded in both; nil when they cannot be computed.
func (s *fetchService) batchStats(rep *Replica, batch record.Batch) *batchstats.Batch {
	key := batchStatsKey(rep, batch)
	if st := s.stats.lookup(key); st != nil {
		return st
	}
	if seg, ok := rep.Log.SegmentBase(key.base); ok && s.stats.firstLoad(rep.Log, seg) {
		err := rep.Log.BatchStats().Read(seg, func(base int64, crc uint32, size int32, blob []byte) {
			s.stats.put(statsKey{log: rep.Log, base: base, crc: crc, size: size}, append([]byte(nil), blob...))
		})
		if err != nil {
			s.log.Debug("batch statistics sidecar unreadable; recomputing", "bucket", rep.Bucket, "err", err)
		}
		if st := s.stats.lookup(key); st != nil {
			return st
		}
	}
	schema, ok := s.opts.Catalog.Schema(rep.Table.ID, int32(batch.SchemaID()))
	if !ok {
		return nil
	}
	st, err := batchstats.Compute(batch, schema, memory.DefaultAllocator)
	if err != nil {
		return nil
	}
	s.recordStats(rep, key, st)
	return st
}

// batchStatsKey is the cache and sidecar key of a batch of rep's log.
func batchStatsKey(rep *Replica, batch record.Batch) statsKey {
	return statsKey{log: rep.Log, base: batch.BaseOffset(), crc: batch.CRC(), size: int32(len(batch))}
}

// recordStats puts st, the statistics of the batch named by key, in the cache and in its
// segment's sidecar.
func (s *fetchService) recordStats(rep *Replica, key statsKey, st *batchstats.Batch) {
	enc := batchstats.Encode(nil, st)
	s.stats.put(key, enc)
	if err := rep.Log.BatchStats().Append(key.base, key.crc, key.size, enc); err != nil {
		s.log.Debug("batch statistics not recorded", "bucket", rep.Bucket, "err", err)
	}
}

// noteAppended records the statistics of batches just appended to rep's log (their base
// offsets assigned) in the cache and the segment's sidecar, so filtered fetches of any
// batch find them without decoding it, also after a restart. stats[i], when not nil, are
// batches[i]'s, taken from the decode that validated it (produce_log.go); the others are
// computed here.
func (s *fetchService) noteAppended(rep *Replica, batches []record.Batch, stats []*batchstats.Batch) {
	if rep.Table.Descriptor.Properties.LogFormat() != metadata.LogFormatArrow {
		return
	}
	for i, b := range batches {
		if b.RecordCount() == 0 {
			continue
		}
		if i < len(stats) && stats[i] != nil {
			s.recordStats(rep, batchStatsKey(rep, b), stats[i])
		} else {
			s.batchStats(rep, b)
		}
	}
}

// statsKey identifies one stored batch: a base offset alone could name a different batch
// after a truncation, so the CRC (which covers every byte but the base offset, length,
// magic and commit timestamp) and size are part of the key.
type statsKey struct {
	log  *logstore.Log
	base int64
	crc  uint32
	size int32
}

// maxCachedStats bounds the cached batch statistics; older entries are evicted first and
// read again from the sidecar (or recomputed) when a filtered fetch needs them. Entries are
// kept encoded (batchstats.Encode: tens of bytes per column).
const maxCachedStats = 1 << 17

// maxLoadedSegments bounds the set of segments whose sidecar was loaded; when it is full it
// is cleared, and a segment loaded again only re-reads its sidecar.
const maxLoadedSegments = 1 << 16

// segmentKey names one segment of one log.
type segmentKey struct {
	log  *logstore.Log
	base int64
}

// statsCache holds recent batch statistics, encoded, FIFO-evicted, and which segments'
// sidecars were loaded into it.
type statsCache struct {
	mu     sync.Mutex
	m      map[statsKey][]byte
	ring   []statsKey
	next   int
	loaded map[segmentKey]bool
}

// lookup returns the cached statistics of k, decoded, or nil.
func (c *statsCache) lookup(k statsKey) *batchstats.Batch {
	c.mu.Lock()
	enc := c.m[k]
	c.mu.Unlock()
	if enc == nil {
		return nil
	}
	st, err := batchstats.Decode(enc)
	if err != nil {
		return nil
	}
	return st
}

// firstLoad reports whether the sidecar of segment base of log has not been loaded yet, and
// marks it loaded.
func (c *statsCache) firstLoad(log *logstore.Log, base int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := segmentKey{log, base}
	if c.loaded[k] {
		return false
	}
	if c.loaded == nil || len(c.loaded) >= maxLoadedSegments {
		c.loaded = make(map[segmentKey]bool)
	}
	c.loaded[k] = true
	return true
}

func (c *statsCache) put(k statsKey, st []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = make(map[statsKey][]byte)
	}
	if _, ok := c.m[k]; ok {
		return
	}
	if len(c.ring) < maxCachedStats {
		c.ring = append(c.ring, k)
	} else {
		delete(c.m, c.ring[c.next])
		c.ring[c.next] = k
		c.next = (c.next + 1) % maxCachedStats
	}
	c.m[k] = st
}
