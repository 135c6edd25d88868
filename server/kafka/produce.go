package kafka

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stromdb/strom/internal/arrowlog"
	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/server/auth"
	"github.com/stromdb/strom/server/cluster"
)

// Produce (0): v3-v11 (record batches of magic 2). Each Kafka batch is converted to one Fluss
// ARROW batch and appended through the tablet server's own append path (AppendLog), with the
// request's acks: 0, 1, or -1 (all: the bucket's ISR, as Fluss's acks=-1). A partition's
// batches are all checked before any is stored.
func init() { register(0, 3, 11, handleProduce) }

func handleProduce(ctx context.Context, s *Server, req *request) (kmsg.Response, error) {
	r := req.msg.(*kmsg.ProduceRequest)
	resp := kmsg.NewPtrProduceResponse()
	resp.SetVersion(req.ver)
	timeout := time.Duration(r.TimeoutMillis) * time.Millisecond
	type pending struct {
		topic, partition int // indexes into resp.Topics and its Partitions
		wait             func() error
	}
	var waits []pending
	for _, t := range r.Topics {
		rt := kmsg.NewProduceResponseTopic()
		rt.Topic = t.Topic
		info, ok := s.topic(t.Topic)
		allowed := ok && req.conn.allowed(auth.OpWrite, auth.TableResource(info.Path.Database, info.Path.Table))
		for _, p := range t.Partitions {
			rp := kmsg.NewProduceResponseTopicPartition()
			rp.Partition, rp.BaseOffset, rp.LogAppendTime, rp.LogStartOffset = p.Partition, -1, -1, -1
			switch {
			case r.Acks != 0 && r.Acks != 1 && r.Acks != -1:
				rp.ErrorCode = kerr.InvalidRequiredAcks.Code
			case r.TransactionID != nil:
				rp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
			case !ok:
				rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case !allowed:
				rp.ErrorCode = kerr.TopicAuthorizationFailed.Code
			case p.Partition < 0 || p.Partition >= info.NumBuckets():
				rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			default:
				base, wait, err := s.appendPartition(ctx, info, p.Partition, p.Records, int32(r.Acks), timeout)
				if err != nil {
					rp.ErrorCode, rp.ErrorMessage = errCode(err), errMessage(err)
				} else {
					rp.BaseOffset = base
					waits = append(waits, pending{len(resp.Topics), len(rt.Partitions), wait})
				}
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	for _, w := range waits {
		if err := w.wait(); err != nil {
			out := &resp.Topics[w.topic].Partitions[w.partition]
			out.BaseOffset, out.ErrorCode, out.ErrorMessage = -1, errCode(err), errMessage(err)
		}
	}
	if r.Acks == 0 {
		return nil, nil
	}
	return resp, nil
}

// appendPartition converts and appends one partition's records.
func (s *Server) appendPartition(ctx context.Context, t *cluster.TableInfo, partition int32, records []byte, acks int32, timeout time.Duration) (int64, func() error, error) {
	kbs, err := splitBatches(records)
	if err != nil {
		return 0, nil, err
	}
	if len(kbs) == 0 {
		return 0, nil, fmt.Errorf("%w: no record batch", errCorrupt)
	}
	schema, err := s.arrowSchema(t, int16(t.SchemaID))
	if err != nil {
		return 0, nil, err
	}
	b := cluster.Bucket{TableID: t.ID, PartitionID: cluster.NoPartition, Bucket: partition}
	var fluss []byte
	var seqs []func()
	for i := range kbs {
		if kbs[i].transactional || kbs[i].control {
			return 0, nil, errTransactions
		}
		kb := kbs[i]
		if kb.producerID >= 0 {
			fseq, commit, err := s.pids.sequence(b, kb.producerID, kb.producerEpoch, kb.baseSequence, int32(len(kb.records)))
			if err != nil {
				return 0, nil, err
			}
			kb.baseSequence = fseq
			seqs = append(seqs, commit)
		}
		if fluss, err = toFluss(fluss, schema, int16(t.SchemaID), kb); err != nil {
			return 0, nil, err
		}
	}
	base, wait, err := s.opts.Log.AppendLog(ctx, b, fluss, acks, timeout)
	if err != nil {
		return 0, nil, err
	}
	for _, c := range seqs {
		c()
	}
	return base, wait, nil
}

var errTransactions = ferr.New(ferr.UnknownServerError, "transactions are not supported by Strom's Kafka listener")

// arrowSchema returns the Arrow schema of a topic table's schema version.
func (s *Server) arrowSchema(t *cluster.TableInfo, sid int16) (*arrow.Schema, error) {
	key := [2]int64{t.ID, int64(sid)}
	s.schemaMu.Lock()
	as, ok := s.schemas[key]
	s.schemaMu.Unlock()
	if ok {
		return as, nil
	}
	schema, ok := s.opts.Catalog.Schema(t.ID, int32(sid))
	if !ok {
		return nil, ferr.New(ferr.SchemaNotExist, "schema %d of table %s does not exist", sid, t.Path)
	}
	as, err := arrowlog.ArrowSchema(schema.Columns)
	if err != nil {
		return nil, err
	}
	s.schemaMu.Lock()
	if s.schemas == nil {
		s.schemas = map[[2]int64]*arrow.Schema{}
	}
	s.schemas[key] = as
	s.schemaMu.Unlock()
	return as, nil
}

// producerIDs translates an idempotent Kafka producer's sequences (per partition, counting
// records) into Fluss writer batch sequences (per bucket, counting batches), so the log's
// writer state deduplicates retries. The translation lives in this server's memory: after a
// restart or leader change, a producer's first batch starts a new translation (docs/kafka.md).
type producerIDs struct {
	mu sync.Mutex
	m  map[producerBucket]*seqState
}

type producerBucket struct {
	b   cluster.Bucket
	pid int64
}

type seqState struct {
	epoch     int16
	nextKafka int32           // expected next base sequence
	lastFluss int32           // last Fluss batch sequence handed out
	recent    map[int32]int32 // Kafka base sequence -> Fluss sequence, last few batches
	order     []int32         // keys of recent, oldest first
}

// sequence returns the Fluss sequence for a batch, and a commit that records it once the
// append was accepted.
func (p *producerIDs) sequence(b cluster.Bucket, pid int64, epoch int16, base, count int32) (int32, func(), error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m == nil {
		p.m = map[producerBucket]*seqState{}
	}
	k := producerBucket{b, pid}
	st := p.m[k]
	if st != nil && epoch > st.epoch {
		st = nil // a new epoch restarts the sequences
	}
	if st != nil && epoch < st.epoch {
		return 0, nil, errFenced
	}
	if st != nil {
		if f, ok := st.recent[base]; ok {
			return f, func() {}, nil // a retry: the log answers it as a duplicate
		}
		if base != st.nextKafka {
			return 0, nil, ferr.New(ferr.OutOfOrderSequenceException, "out of order sequence %d for producer %d on %s, expected %d", base, pid, b, st.nextKafka)
		}
	}
	fseq := int32(0)
	if st != nil {
		fseq = st.lastFluss + 1
	}
	return fseq, func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		cur := p.m[k]
		if cur == nil || cur.epoch != epoch {
			cur = &seqState{epoch: epoch, lastFluss: -1, recent: map[int32]int32{}}
			p.m[k] = cur
		}
		if _, dup := cur.recent[base]; dup {
			return
		}
		cur.nextKafka, cur.lastFluss = base+count, fseq
		cur.recent[base] = fseq
		cur.order = append(cur.order, base)
		if len(cur.order) > 5 {
			delete(cur.recent, cur.order[0])
			cur.order = cur.order[1:]
		}
	}, nil
}

var errFenced = errors.New("producer epoch is fenced")
