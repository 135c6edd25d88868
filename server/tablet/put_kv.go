package tablet

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/internal/record"
	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
	"github.com/stromdb/strom/server/cluster"
	"github.com/stromdb/strom/server/kvstore"
	"github.com/stromdb/strom/server/logstore"
)

// openKV opens (and recovers) the primary-key state of bucket b, whose changelog is l.
func (s *replicaManager) openKV(ctx context.Context, b cluster.Bucket, t *cluster.TableInfo, l *logstore.Log) (*kvstore.Tablet, error) {
	schemas := func(id int16) (metadata.Schema, bool) {
		return s.opts.Catalog.Schema(t.ID, int32(id))
	}
	return s.kv.OpenTablet(ctx, b, kvstore.TableFromDescriptor(t.ID, int16(t.SchemaID), &t.Descriptor, schemas), l)
}

// kvService serves the primary-key tables: writes (PUT_KV, staged and awaited as in
// docs/architecture.md, "PUT_KV pipeline"), point and prefix lookups, and limit scans (of
// log tables too), behind a new leader's read barrier (read_barrier.go). Its state is the
// buckets' own (kvstore.Tablet); it owns none beside.
type kvService struct {
	opts kvOptions
	membership

	replicaLookup
	writeAdmission
}

// kvOptions are the parts of Options kvService reads.
type kvOptions struct {
	Now      func() time.Time
	ServerID int32
}

var kvAPIs apiTable[*kvService]

// PUT_KV (1016), versions 0 to 2 (upstream ApiKeys.java):
//   - v0: the client encodes the keys of a lake table with the lake's key encoder; refused
//     for the tables that encode them otherwise (checkKeyEncodingVersion).
//   - v1: keys of a kv format version 2 lake table whose bucket key differs from the primary
//     key are in the compacted encoding, which enables prefix lookups.
//   - v2: the client understands STORAGE_BACKPRESSURE_EXCEPTION (72). Strom never sends 72
//     (a bucket whose store cannot keep up makes the write wait), so v1 and v2 are served alike.
func init() { kvAPIs.register(wire.PutKv, 0, 2, (*kvService).handlePutKv) }

// handlePutKv applies KV batches to primary-key buckets (docs/architecture.md, "PUT_KV
// pipeline"). Each bucket's batch is staged here, in the connection's request order — merged,
// its changelog appended to the bucket's log — and the wait for durability and the Pebble apply
// run off the request loop, all buckets at once, so pipelined PUT_KVs share fsyncs and a lookup
// behind an upsert on the same connection does not wait for the upsert's fsync. A bucket is
// answered only after its changelog is durable per the log's flush policy and its state
// applied, so acks 0/1/-1 all see the write in later lookups. Each answer echoes the bucket's
// ids and carries the changelog's log end offset.
func (s *kvService) handlePutKv(ctx context.Context, req *wire.Request) (proto.Message, error) {
	var r flusspb.PutKvRequest
	if err := req.Decode(&r); err != nil {
		return nil, err
	}
	if a := r.GetAcks(); a != 0 && a != 1 && a != -1 {
		return nil, ferr.New(ferr.InvalidRequiredAcks, "Invalid required acks %d: must be 0, 1 or -1.", a)
	}
	resp := &flusspb.PutKvResponse{BucketsResp: make([]*flusspb.PbPutKvRespForBucket, len(r.BucketsReq))}
	now := s.opts.Now().UnixMilli()
	opts := kvstore.WriteOptions{TargetColumns: r.TargetColumns, Mode: kvstore.MergeMode(r.GetAggMode())}
	timeout := requestTimeout(r.GetTimeoutMs())
	pending := make([]bucketWait, len(r.BucketsReq))
	stage := func(i int) {
		br := r.BucketsReq[i]
		out := &flusspb.PbPutKvRespForBucket{BucketId: proto.Int32(br.GetBucketId()), PartitionId: br.PartitionId}
		b := bucketOf(r.GetTableId(), br.PartitionId, br.GetBucketId())
		var end int64
		var w bucketWait
		err := s.checkKeyEncodingVersion(b, req.Header.APIVersion)
		if err == nil {
			end, w, err = s.stageBucket(b, br.Records, opts, now, r.GetAcks())
		}
		if err != nil {
			setBucketError(&out.ErrorCode, &out.ErrorMessage, err)
		} else {
			out.LogEndOffset = proto.Int64(end)
			pending[i] = w
		}
		resp.BucketsResp[i] = out
	}
	if stageConcurrently(r.BucketsReq) {
		forEachConcurrently(len(r.BucketsReq), stageWorkers(), stage)
	} else {
		for i := range r.BucketsReq {
			stage(i)
		}
	}
	var waits []bucketWait
	var waiting []*flusspb.PbPutKvRespForBucket
	for i, w := range pending {
		if w.staged {
			waits = append(waits, w)
			waiting = append(waiting, resp.BucketsResp[i])
		}
	}
	if len(waits) == 0 {
		return resp, nil
	}
	connCtx := req.Context()
	return req.Defer(func() (proto.Message, error) {
		errs := awaitAll(connCtx, waits, timeout)
		for i, err := range errs {
			if err != nil {
				waiting[i].LogEndOffset = nil
				setBucketError(&waiting[i].ErrorCode, &waiting[i].ErrorMessage, err)
			}
		}
		return resp, nil
	})
}

// stageMinBytes is the size of a PUT_KV's records from which its buckets are staged
// concurrently: below it, a goroutine per bucket costs more than the merge it would overlap.
const stageMinBytes = 64 << 10

// stageConcurrently reports whether the buckets of one PUT_KV may be staged at the same time:
// more than one bucket, enough records to be worth it, and no bucket named twice (two
// batches of one bucket must be staged in request order: the second merges against the
// first, and an idempotent writer's sequences must arrive in order).
func stageConcurrently(buckets []*flusspb.PbPutKvReqForBucket) bool {
	if len(buckets) < 2 {
		return false
	}
	total := 0
	for _, br := range buckets {
		total += len(br.Records)
	}
	if total < stageMinBytes {
		return false
	}
	type key struct {
		partition int64
		bucket    int32
		hasPart   bool
	}
	seen := make(map[key]struct{}, len(buckets))
	for _, br := range buckets {
		k := key{br.GetPartitionId(), br.GetBucketId(), br.PartitionId != nil}
		if _, dup := seen[k]; dup {
			return false
		}
		seen[k] = struct{}{}
	}
	return true
}

// stageWorkers is how many buckets of one PUT_KV are staged at once: staging is CPU work
// (merge, changelog encoding), so more workers than processors would only interleave it.
func stageWorkers() int { return runtime.GOMAXPROCS(0) }

// forEachConcurrently calls f(0) … f(n-1) on up to workers goroutines (the caller's among
// them) and returns when every call has returned.
func forEachConcurrently(n, workers int, f func(int)) {
	workers = min(workers, n)
	if workers <= 1 {
		for i := range n {
			f(i)
		}
		return
	}
	var next atomic.Int64
	work := func() {
		for {
			i := int(next.Add(1) - 1)
			if i >= n {
				return
			}
			f(i)
		}
	}
	var wg sync.WaitGroup
	for range workers - 1 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			work()
		}()
	}
	work()
	wg.Wait()
}

// bucketWait is one bucket's staged write of a PUT_KV: its Pending (kvstore/durable.go) and
// what bounds the wait for it.
type bucketWait struct {
	bucket  cluster.Bucket
	pending kvstore.Pending
	staged  bool
	// replicated: the wait is for the in-sync replicas, so it ends with REQUEST_TIME_OUT
	// after the request's timeout, or when the client's connection ends; a standalone
	// bucket waits for its local fsync alone.
	replicated bool
	lapse      *membershipLapse // ends a replicated wait when the membership lapses
}

// wait waits for the bucket's write to be durable and applied (kvstore.Pending.Wait).
func (w bucketWait) wait(connCtx context.Context, timeout time.Duration) error {
	if !w.replicated {
		return w.pending.Wait(context.Background())
	}
	ctx, cancel := context.WithTimeoutCause(connCtx, timeout, ferr.New(ferr.RequestTimeOut,
		"the write to %s was not replicated to the in-sync replicas within %v", w.bucket, timeout))
	defer cancel()
	ctx, stop := w.lapse.with(ctx)
	defer stop()
	return w.pending.Wait(ctx)
}

// awaitAll waits for the buckets concurrently (each bucket's log syncs its own file) and
// returns their errors in order.
func awaitAll(connCtx context.Context, waits []bucketWait, timeout time.Duration) []error {
	errs := make([]error, len(waits))
	if len(waits) == 1 {
		errs[0] = waits[0].wait(connCtx, timeout)
		return errs
	}
	var wg sync.WaitGroup
	for i, w := range waits[1:] {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i+1] = w.wait(connCtx, timeout)
		}()
	}
	errs[0] = waits[0].wait(connCtx, timeout)
	wg.Wait()
	return errs
}

// stageBucket stages one bucket's KV batch (kvstore.Tablet.PutStaged). On a replicated bucket
// a batch is applied only once the HW passes its changelog, whatever the acks (lookups read
// the applied state, and a client must read its own acknowledged write); acks=-1 also needs
// the minimum ISR.
func (s *kvService) stageBucket(b cluster.Bucket, records []byte, opts kvstore.WriteOptions, nowMs int64, acks int32) (int64, bucketWait, error) {
	rep, err := s.kvReplica(b)
	if err != nil {
		return 0, bucketWait{}, err
	}
	if rs := rep.repl; rs != nil {
		rs.roleMu.RLock()
		defer rs.roleMu.RUnlock()
		if _, err := s.admitWrite(rep, acks); err != nil {
			return 0, bucketWait{}, err
		}
	}
	kv, err := record.ParseKvBatch(records)
	if err != nil {
		return 0, bucketWait{}, ferr.New(ferr.CorruptRecordException, "%v", err)
	}
	end, p, err := rep.KV.PutStaged(kv, opts, nowMs)
	if err != nil {
		return 0, bucketWait{}, err
	}
	return end, bucketWait{bucket: b, pending: p, staged: true, replicated: rep.repl != nil, lapse: s.lapse}, nil
}

// kvReplica returns the bucket's replica, which must belong to a primary-key table.
func (s *kvService) kvReplica(b cluster.Bucket) (*Replica, error) {
	rep, err := s.replica(b)
	if err != nil {
		return nil, err
	}
	if rep.KV == nil {
		return nil, ferr.New(ferr.NonPrimaryKeyTableException, "the table %s is not a primary key table", rep.Table.Path)
	}
	return rep, nil
}
