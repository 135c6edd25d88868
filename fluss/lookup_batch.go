package fluss

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
)

// lookupBatcher merges concurrent point lookups of one table into LOOKUP requests, one per
// leader, carrying the keys of every bucket that leader serves (as the Java client's
// LookupSender does). It adds no latency: a lookup is sent at once unless
// Config.LookupMaxInflightRequests requests to its leader are already in flight; lookups
// arriving meanwhile queue and leave together, up to Config.LookupMaxBatchSize keys a request,
// when an answer frees a slot.
//
// Retries are not the batcher's business: each lookup's caller gets its bucket's outcome and
// decides (lookupRetry's policy), so a retried key simply joins a later batch.
type lookupBatcher struct {
	t *Table

	mu       sync.Mutex
	queued   map[ServerNode][]*lookupOp
	inflight map[ServerNode]int

	requests atomic.Int64 // LOOKUP requests sent, for tests
}

// lookupOp is one key waiting for its bucket's answer.
type lookupOp struct {
	ctx context.Context // the caller's: once done, the op is dropped from the queue
	tb  TableBucket
	key []byte

	done  chan struct{}
	value []byte    // the stored value, nil if the key is absent
	code  ErrorCode // per-bucket error
	msg   string
	err   error // request-level failure
}

func newLookupBatcher(t *Table) *lookupBatcher {
	return &lookupBatcher{t: t, queued: map[ServerNode][]*lookupOp{}, inflight: map[ServerNode]int{}}
}

// lookup queues key for bucket tb at leader and waits for the outcome.
func (b *lookupBatcher) lookup(ctx context.Context, leader ServerNode, tb TableBucket, key []byte) (value []byte, code ErrorCode, msg string, err error) {
	op := &lookupOp{ctx: ctx, tb: tb, key: key, done: make(chan struct{})}
	b.mu.Lock()
	b.queued[leader] = append(b.queued[leader], op)
	b.dispatchLocked(leader)
	b.mu.Unlock()
	select {
	case <-op.done:
		return op.value, op.code, op.msg, op.err
	case <-ctx.Done():
		return nil, 0, "", ctx.Err()
	}
}

// dispatchLocked sends queued lookups of leader while it has free request slots.
func (b *lookupBatcher) dispatchLocked(leader ServerNode) {
	cfg := &b.t.conn.cfg
	for b.inflight[leader] < cfg.LookupMaxInflightRequests {
		q := b.queued[leader]
		var batch []*lookupOp
		n := 0
		for ; n < len(q) && len(batch) < cfg.LookupMaxBatchSize; n++ {
			if q[n].ctx.Err() == nil {
				batch = append(batch, q[n])
			}
		}
		if n == len(q) {
			delete(b.queued, leader)
		} else {
			b.queued[leader] = q[n:]
		}
		if len(batch) == 0 {
			if n == len(q) {
				return
			}
			continue
		}
		b.inflight[leader]++
		go b.send(leader, batch)
	}
}

// send issues one LOOKUP request for batch and completes its ops.
func (b *lookupBatcher) send(leader ServerNode, batch []*lookupOp) {
	defer func() {
		b.mu.Lock()
		b.inflight[leader]--
		if b.inflight[leader] == 0 {
			delete(b.inflight, leader)
		}
		b.dispatchLocked(leader)
		b.mu.Unlock()
	}()
	// One PbLookupReqForBucket per bucket, keys in batch order.
	byBucket := map[TableBucket][]*lookupOp{}
	req := &flusspb.LookupRequest{TableId: proto.Int64(b.t.info.TableID)}
	for _, op := range batch {
		if _, ok := byBucket[op.tb]; !ok {
			br := &flusspb.PbLookupReqForBucket{BucketId: proto.Int32(op.tb.Bucket), PartitionId: op.tb.partitionIDField()}
			req.BucketsReq = append(req.BucketsReq, br)
		}
		byBucket[op.tb] = append(byBucket[op.tb], op)
	}
	for _, br := range req.BucketsReq {
		tb := TableBucket{b.t.info.TableID, NoPartition, br.GetBucketId()}
		if br.PartitionId != nil {
			tb.PartitionID = br.GetPartitionId()
		}
		for _, op := range byBucket[tb] {
			br.Keys = append(br.Keys, op.key)
		}
	}
	b.requests.Add(1)
	// The request serves many callers: it is bounded by the connection's request timeout,
	// not by any one caller's context.
	var resp flusspb.LookupResponse
	err := b.t.conn.call(context.Background(), leader, wire.Lookup, req, &resp)
	answered := map[TableBucket]bool{}
	if err == nil {
		for _, r := range resp.BucketsResp {
			tb := TableBucket{b.t.info.TableID, NoPartition, r.GetBucketId()}
			if r.PartitionId != nil {
				tb.PartitionID = r.GetPartitionId()
			}
			ops, ok := byBucket[tb]
			if !ok || answered[tb] {
				continue
			}
			answered[tb] = true
			if c := r.GetErrorCode(); c != 0 {
				for _, op := range ops {
					op.code, op.msg = ErrorCode(c), r.GetErrorMessage()
				}
				continue
			}
			if len(r.Values) != len(ops) {
				for _, op := range ops {
					op.err = fmt.Errorf("fluss: lookup returned %d values for %d keys", len(r.Values), len(ops))
				}
				continue
			}
			for i, op := range ops {
				op.value = r.Values[i].GetValues()
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
