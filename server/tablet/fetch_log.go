package tablet

import (
	"context"
	"log/slog"
	"reflect"
	"slices"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
	"github.com/stromdb/strom/server/cluster"
	"github.com/stromdb/strom/server/config"
)

// fetchFromEarliest is the fetch offset clients send to start at the log start.
const fetchFromEarliest = -2

// defaultMaxWait is Fluss's wait when min_bytes is set without max_wait_ms.
const defaultMaxWait = 100 * time.Millisecond

// defaultFetchMaxResponseSize is log.fetch.max-response-size when the configuration leaves it 0.
const defaultFetchMaxResponseSize = 64 << 20

// responseLimit is log.fetch.max-response-size, which client and follower fetches share.
type responseLimit struct {
	opts responseLimitOptions
}

// responseLimitOptions are the parts of Options responseLimit reads.
type responseLimitOptions struct {
	Config config.Config
}

// maxResponseBytes is the record bytes one FETCH_LOG response may carry: the request's
// max_bytes, capped by the server's log.fetch.max-response-size. As in Fluss, the first batch
// read is returned whole even if it is larger, so a response never comes back empty because
// of a large batch.
func (s responseLimit) maxResponseBytes(r *flusspb.FetchLogRequest) int {
	limit := int(s.opts.Config.FetchMaxResponseSize)
	if limit <= 0 {
		limit = defaultFetchMaxResponseSize
	}
	return max(min(int(r.GetMaxBytes()), limit), 0)
}

// dedupeBuckets drops all but the last request for each bucket, as Fluss does (it collects
// the request into a map keyed by bucket), so a bucket named many times is read and answered
// once. Table entries left without buckets are dropped.
func dedupeBuckets(r *flusspb.FetchLogRequest) {
	seen := make(map[cluster.Bucket]bool)
	dup := false
	for i := len(r.TablesReq) - 1; i >= 0; i-- {
		tr := r.TablesReq[i]
		for j := len(tr.BucketsReq) - 1; j >= 0; j-- {
			br := tr.BucketsReq[j]
			b := bucketOf(tr.GetTableId(), br.PartitionId, br.GetBucketId())
			if seen[b] {
				tr.BucketsReq[j], dup = nil, true
			}
			seen[b] = true
		}
	}
	if !dup {
		return
	}
	tables := r.TablesReq[:0]
	for _, tr := range r.TablesReq {
		buckets := tr.BucketsReq[:0]
		for _, br := range tr.BucketsReq {
			if br != nil {
				buckets = append(buckets, br)
			}
		}
		if tr.BucketsReq = buckets; len(buckets) > 0 {
			tables = append(tables, tr)
		}
	}
	r.TablesReq = tables
}

// fetchService serves client reads of bucket logs (FETCH_LOG: long polls, projection,
// scan filters, answers from remote storage) and hands a follower's FETCH_LOG to the
// leader side of replication. It owns the caches of prepared projections and of batch
// statistics (fetch_filter.go), which appends fill (noteAppended).
type fetchService struct {
	opts  fetchOptions
	log   *slog.Logger
	proj  projections
	stats statsCache // batch statistics for filtered fetches (fetch_filter.go)
	responseLimit
	tieredLog

	replicaLookup
	followerFetches
}

// fetchOptions are the parts of Options fetchService reads.
type fetchOptions struct {
	Catalog cluster.Catalog
}

var fetchAPIs apiTable[*fetchService]

// FETCH_LOG (1015): version 0 only; a request with follower_server_id set is a
// replica's fetch (leader.go).
func init() { fetchAPIs.register(wire.FetchLog, 0, 0, (*fetchService).handleFetchLog) }

// handleFetchLog reads whole stored batches for each requested bucket. With min_bytes set it
// long-polls: if less than min_bytes is available it parks (off the connection's request
// loop) until enough arrives or max_wait_ms passes, then reads again.
func (s *fetchService) handleFetchLog(ctx context.Context, req *wire.Request) (proto.Message, error) {
	var r flusspb.FetchLogRequest
	if err := req.Decode(&r); err != nil {
		return nil, err
	}
	dedupeBuckets(&r)
	if err := checkFilters(&r); err != nil { // scan filters: fetch_filter.go
		return nil, err
	}
	if r.GetFollowerServerId() >= 0 {
		return s.serveFollowerFetch(req, &r)
	}
	resp, got, parkable := s.fetchOnce(&r)
	if r.MinBytes == nil || got >= int(r.GetMinBytes()) || !parkable || resp.remote > 0 {
		return resp, nil
	}
	resp.Release() // the wait below reads again
	wait := defaultMaxWait
	if r.MaxWaitMs != nil {
		wait = time.Duration(max(r.GetMaxWaitMs(), 0)) * time.Millisecond
	}
	if wait == 0 {
		resp, _, _ := s.fetchOnce(&r)
		return resp, nil
	}
	cctx := req.Context()
	// A parked request holds little (its decoded request and a goroutine) and is counted by
	// the wire layer's in-flight request limits. Once woken, the response it built is charged
	// to the connection below, so a client that does not read its answers stops being read.
	return req.Defer(func() (proto.Message, error) {
		deadline := time.Now().Add(wait)
		for {
			// Take the change notifications before reading, so that data arriving after the
			// read wakes the wait below; with less than min_bytes and no change, it sleeps.
			changed := s.changeChannels(&r)
			resp, got, _ := s.fetchOnce(&r)
			if got >= int(r.GetMinBytes()) || resp.remote > 0 || !time.Now().Before(deadline) || cctx.Err() != nil {
				req.Reserve(int64(resp.heapBytes))
				return resp, nil
			}
			resp.Release()
			wctx, cancel := context.WithDeadline(cctx, deadline)
			waitAny(wctx, changed)
			cancel()
		}
	})
}

// changeChannels returns the change notification of every requested bucket that exists.
func (s *fetchService) changeChannels(r *flusspb.FetchLogRequest) []<-chan struct{} {
	var chans []<-chan struct{}
	for _, tr := range r.TablesReq {
		for _, br := range tr.BucketsReq {
			if rep, err := s.replica(bucketOf(tr.GetTableId(), br.PartitionId, br.GetBucketId())); err == nil {
				chans = append(chans, rep.Log.Changed())
			}
		}
	}
	return chans
}

// waitAnyChunk is how many channels one goroutine of waitAny selects on (reflect.Select):
// a follower's fetch parks on every bucket it follows from this leader, tens of thousands at
// scale, and one goroutine per channel cost as many goroutine starts and stacks for every
// idle long poll (docs/cluster.md, "Scale").
const waitAnyChunk = 512

// waitAny returns when any of chans is closed or ctx ends.
func waitAny(ctx context.Context, chans []<-chan struct{}) {
	if len(chans) == 1 {
		select {
		case <-chans[0]:
		case <-ctx.Done():
		}
		return
	}
	woke := make(chan struct{})
	var once sync.Once
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for chunk := range slices.Chunk(chans, waitAnyChunk) {
		go func() {
			cases := make([]reflect.SelectCase, 0, len(chunk)+1)
			cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ctx.Done())})
			for _, ch := range chunk {
				cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ch)})
			}
			if i, _, _ := reflect.Select(cases); i > 0 {
				once.Do(func() { close(woke) })
			}
		}()
	}
	select {
	case <-woke:
	case <-ctx.Done():
	}
}

// fetchOnce reads every requested bucket once. It returns the response, the number of
// record bytes it holds (at most maxResponseBytes, or one batch), and whether the request may
// wait for more (some bucket was read without error). A response that is not sent must be
// released.
func (s *fetchService) fetchOnce(r *flusspb.FetchLogRequest) (*fetchResponse, int, bool) {
	resp := &fetchResponse{FetchLogResponse: &flusspb.FetchLogResponse{}}
	budget := s.maxResponseBytes(r)
	total := 0
	parkable := false
	for _, tr := range r.TablesReq {
		out := &flusspb.PbFetchLogRespForTable{TableId: proto.Int64(tr.GetTableId())}
		table, tableOK := s.opts.Catalog.TableByID(tr.GetTableId())
		var projErr error
		var projection []int
		if tableOK && tr.GetProjectionPushdownEnabled() {
			projection, projErr = s.validateProjection(table, tr.ProjectedFields)
		}
		readBucket := s.reader(s.tableFilter(tr, table, tableOK)) // scan filters: fetch_filter.go
		for _, br := range tr.BucketsReq {
			bo := &flusspb.PbFetchLogRespForBucket{BucketId: proto.Int32(br.GetBucketId()), PartitionId: br.PartitionId}
			out.BucketsResp = append(out.BucketsResp, bo)
			if projErr != nil {
				setBucketError(&bo.ErrorCode, &bo.ErrorMessage, projErr)
				continue
			}
			limit := min(budget, int(br.GetMaxFetchBytes()))
			n, err := readBucket(resp, bo, bucketOf(tr.GetTableId(), br.PartitionId, br.GetBucketId()), br.GetFetchOffset(), limit, total == 0, table, projection)
			if err != nil {
				setBucketError(&bo.ErrorCode, &bo.ErrorMessage, err)
				continue
			}
			parkable = true
			total += n
			budget = max(budget-n, 0)
		}
		resp.TablesResp = append(resp.TablesResp, out)
	}
	return resp, total, parkable
}

// readBucket reads from one bucket into bo and returns the number of record bytes. Unless
// they must be projected, the records stay in the segment file: resp references the range
// and copies it straight into the response frame. bo.Records is never left nil on success:
// the Rust client ignores a bucket answer that has neither records nor filtered_end_offset.
func (s *fetchService) readBucket(resp *fetchResponse, bo *flusspb.PbFetchLogRespForBucket, b cluster.Bucket, offset int64, limit int, minOne bool, table *cluster.TableInfo, projection []int) (int, error) {
	rep, err := s.replica(b)
	if err != nil {
		return 0, err
	}
	logStart := s.logStart(rep)
	if offset == fetchFromEarliest {
		offset = logStart
	}
	// Below the local log start: the records are in remote storage, and the client reads
	// them there (Fluss ReplicaManager.fetchLogFromRemote).
	if ri := s.remoteFetchInfo(rep, offset); ri != nil {
		if err := rep.Log.Offline(); err != nil {
			return 0, err
		}
		answerRemote(resp, bo, rep, ri, logStart)
		return 0, nil
	}
	res, err := rep.Log.Read(offset, limit, minOne)
	if err != nil {
		// The local copy may have been deleted after the check above, its copy committed.
		if ferr.CodeOf(err) == ferr.LogOffsetOutOfRangeException {
			if ri := s.remoteFetchInfo(rep, offset); ri != nil {
				answerRemote(resp, bo, rep, ri, logStart)
				return 0, nil
			}
		}
		return 0, err
	}
	bo.HighWatermark = proto.Int64(res.HighWatermark)
	bo.LogStartOffset = proto.Int64(logStart)
	if res.Size == 0 || projection == nil {
		bo.Records = []byte{}
		if res.Size > 0 {
			resp.addFileRecords(bo, res)
		}
		return int(res.Size), nil
	}
	defer res.Release()
	data, err := res.AppendTo(make([]byte, 0, res.Size))
	if err != nil {
		return 0, err
	}
	if data, err = s.project(table, data, projection); err != nil {
		return 0, err
	}
	bo.Records = data
	resp.heapBytes += len(data)
	return len(data), nil
}

// answerRemote answers a bucket with where its records are in remote storage: no records,
// the high watermark and log start.
func answerRemote(resp *fetchResponse, bo *flusspb.PbFetchLogRespForBucket, rep *Replica, ri *flusspb.PbRemoteLogFetchInfo, logStart int64) {
	bo.HighWatermark = proto.Int64(rep.Log.HighWatermark())
	bo.LogStartOffset = proto.Int64(logStart)
	bo.RemoteLogFetchInfo = ri
	resp.remote++
}

// validateProjection checks projected_fields as Fluss does: ARROW log format only, then
// non-empty, strictly increasing and within the table's current schema — the last three by
// preparing (and caching) the projection for that schema.
func (s *fetchService) validateProjection(t *cluster.TableInfo, fields []int32) ([]int, error) {
	if t.Descriptor.Properties.LogFormat() != metadata.LogFormatArrow {
		return nil, ferr.New(ferr.InvalidColumnProjection, "Column projection is only supported for ARROW log format, but table %s uses %s.", t.Path, t.Descriptor.Properties.LogFormat())
	}
	out := make([]int, len(fields))
	for i, f := range fields {
		out[i] = int(f)
	}
	if _, err := s.projection(t, int16(t.SchemaID), out); err != nil {
		return nil, err
	}
	return out, nil
}
