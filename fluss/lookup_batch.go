package fluss

import (
	"context"
	"fmt"
	"math"
	"sync"
	"sync/atomic"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
)

// lookupBatcher merges concurrent lookups of one table into LOOKUP (point) or PREFIX_LOOKUP
// requests, one per leader, carrying the keys of every bucket that leader serves (as the
// Java client's LookupSender does). It adds no latency: a lookup is sent at once unless
// Config.LookupMaxInflightRequests requests to its leader are already in flight; lookups
// arriving meanwhile queue and leave together, up to Config.LookupMaxBatchSize keys a request,
// when an answer frees a slot.
//
// Retries are not the batcher's business: each lookup's caller gets its bucket's outcome and
// decides (lookupRetry's policy), so a retried key simply joins a later batch.
type lookupBatcher struct {
	t *Table

	mu       sync.Mutex
	queued   map[lookupTarget][]*lookupOp
	inflight map[lookupTarget]int

	requests atomic.Int64 // LOOKUP and PREFIX_LOOKUP requests sent, for tests
}

// lookupTarget is one request stream: a leader and the kind of lookup.
type lookupTarget struct {
	leader ServerNode
	prefix bool
	insert bool // point lookups that insert missing keys (LOOKUP insert_if_not_exists)
}

// lookupOp is one key waiting for its bucket's answer.
type lookupOp struct {
	ctx context.Context // the caller's: once done, the op is dropped from the queue
	tb  TableBucket
	key []byte

	done   chan struct{}
	value  []byte    // point lookup: the stored value, nil if the key is absent
	values [][]byte  // prefix lookup: the stored values of every matching key
	code   ErrorCode // per-bucket error
	msg    string
	err    error // request-level failure
}

func newLookupBatcher(t *Table) *lookupBatcher {
	return &lookupBatcher{t: t, queued: map[lookupTarget][]*lookupOp{}, inflight: map[lookupTarget]int{}}
}

// lookup queues a point-lookup key for bucket tb at leader and waits for the outcome; with
// insert, a missing key is inserted (its other columns null) and its new row returned.
func (b *lookupBatcher) lookup(ctx context.Context, leader ServerNode, tb TableBucket, key []byte, insert bool) (value []byte, code ErrorCode, msg string, err error) {
	op, err := b.submit(ctx, lookupTarget{leader: leader, insert: insert}, tb, key)
	if err != nil {
		return nil, 0, "", err
	}
	return op.value, op.code, op.msg, op.err
}

// prefixLookup queues a prefix-lookup key for bucket tb at leader and waits for the outcome.
func (b *lookupBatcher) prefixLookup(ctx context.Context, leader ServerNode, tb TableBucket, key []byte) (values [][]byte, code ErrorCode, msg string, err error) {
	op, err := b.submit(ctx, lookupTarget{leader: leader, prefix: true}, tb, key)
	if err != nil {
		return nil, 0, "", err
	}
	return op.values, op.code, op.msg, op.err
}

// submit queues one key and waits until its request answered or ctx ended.
func (b *lookupBatcher) submit(ctx context.Context, target lookupTarget, tb TableBucket, key []byte) (*lookupOp, error) {
	op := &lookupOp{ctx: ctx, tb: tb, key: key, done: make(chan struct{})}
	b.mu.Lock()
	b.queued[target] = append(b.queued[target], op)
	b.dispatchLocked(target)
	b.mu.Unlock()
	select {
	case <-op.done:
		return op, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// dispatchLocked sends queued lookups of target while it has free request slots.
func (b *lookupBatcher) dispatchLocked(target lookupTarget) {
	cfg := &b.t.conn.cfg
	for b.inflight[target] < cfg.LookupMaxInflightRequests {
		q := b.queued[target]
		var batch []*lookupOp
		n := 0
		for ; n < len(q) && len(batch) < cfg.LookupMaxBatchSize; n++ {
			if q[n].ctx.Err() == nil {
				batch = append(batch, q[n])
			}
		}
		if n == len(q) {
			delete(b.queued, target)
		} else {
			b.queued[target] = q[n:]
		}
		if len(batch) == 0 {
			if n == len(q) {
				return
			}
			continue
		}
		b.inflight[target]++
		go b.send(target, batch)
	}
}

// send issues one LOOKUP or PREFIX_LOOKUP request for batch and completes its ops.
func (b *lookupBatcher) send(target lookupTarget, batch []*lookupOp) {
	defer func() {
		b.mu.Lock()
		b.inflight[target]--
		if b.inflight[target] == 0 {
			delete(b.inflight, target)
		}
		b.dispatchLocked(target)
		b.mu.Unlock()
	}()
	// One request entry per bucket, keys in batch order.
	byBucket := map[TableBucket][]*lookupOp{}
	var order []TableBucket
	for _, op := range batch {
		if _, ok := byBucket[op.tb]; !ok {
			order = append(order, op.tb)
		}
		byBucket[op.tb] = append(byBucket[op.tb], op)
	}
	keysOf := func(tb TableBucket) [][]byte {
		keys := make([][]byte, len(byBucket[tb]))
		for i, op := range byBucket[tb] {
			keys[i] = op.key
		}
		return keys
	}
	b.requests.Add(1)
	// The request serves many callers: it is bounded by the connection's request timeout,
	// not by any one caller's context.
	ctx := context.Background()
	answered := map[TableBucket]bool{}
	// answer records one bucket's outcome; n is the number of per-key results it carries and
	// set stores result i in op.
	answer := func(part *int64, bucket int32, code int32, msg string, n int, set func(i int, op *lookupOp)) {
		tb := TableBucket{b.t.info.TableID, NoPartition, bucket}
		if part != nil {
			tb.PartitionID = *part
		}
		ops, ok := byBucket[tb]
		if !ok || answered[tb] {
			return
		}
		answered[tb] = true
		for i, op := range ops {
			switch {
			case code != 0:
				op.code, op.msg = ErrorCode(code), msg
			case n != len(ops):
				op.err = fmt.Errorf("fluss: lookup returned %d results for %d keys", n, len(ops))
			default:
				set(i, op)
			}
		}
	}
	var err error
	if target.prefix {
		req := &flusspb.PrefixLookupRequest{TableId: proto.Int64(b.t.info.TableID)}
		for _, tb := range order {
			req.BucketsReq = append(req.BucketsReq, &flusspb.PbPrefixLookupReqForBucket{BucketId: proto.Int32(tb.Bucket), PartitionId: tb.partitionIDField(), Keys: keysOf(tb)})
		}
		var resp flusspb.PrefixLookupResponse
		if err = b.t.conn.call(ctx, target.leader, wire.PrefixLookup, req, &resp); err == nil {
			for _, r := range resp.BucketsResp {
				answer(r.PartitionId, r.GetBucketId(), r.GetErrorCode(), r.GetErrorMessage(), len(r.ValueLists), func(i int, op *lookupOp) {
					op.values = r.ValueLists[i].Values
				})
			}
		}
	} else {
		req := &flusspb.LookupRequest{TableId: proto.Int64(b.t.info.TableID)}
		if target.insert {
			// The inserted rows are written like upserts: acknowledged by every in-sync
			// replica, within the request timeout.
			req.InsertIfNotExists = proto.Bool(true)
			req.Acks = proto.Int32(-1)
			req.TimeoutMs = proto.Int32(int32(min(b.t.conn.cfg.RequestTimeout.Milliseconds(), math.MaxInt32)))
		}
		for _, tb := range order {
			req.BucketsReq = append(req.BucketsReq, &flusspb.PbLookupReqForBucket{BucketId: proto.Int32(tb.Bucket), PartitionId: tb.partitionIDField(), Keys: keysOf(tb)})
		}
		var resp flusspb.LookupResponse
		if err = b.t.conn.call(ctx, target.leader, wire.Lookup, req, &resp); err == nil {
			for _, r := range resp.BucketsResp {
				answer(r.PartitionId, r.GetBucketId(), r.GetErrorCode(), r.GetErrorMessage(), len(r.Values), func(i int, op *lookupOp) {
					op.value = r.Values[i].GetValues()
				})
			}
		}
	}
	for tb, ops := range byBucket {
		for _, op := range ops {
			switch {
			case err != nil:
				op.err = err
			case !answered[tb]:
				op.code, op.msg = ErrUnknownServerError, "no response for the bucket"
			}
			close(op.done)
		}
	}
}
