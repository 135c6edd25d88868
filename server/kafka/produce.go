package kafka

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stromdb/strom/internal/arrowlog"
	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/record"
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
	kbs, err := splitBatches(records, s.decomp)
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
	for _, kb := range kbs {
		if kb.transactional || kb.control {
			return 0, nil, errTransactions
		}
		if err := checkProducer(kb, len(kbs)); err != nil {
			return 0, nil, err
		}
		if fluss, err = toFluss(fluss, schema, int16(t.SchemaID), kb); err != nil {
			return 0, nil, err
		}
	}
	return s.opts.Log.AppendLog(ctx, b, fluss, acks, timeout)
}

// checkProducer checks an idempotent batch before it is stored under its producer id. The
// sequence itself is the log's to check: Kafka producer ids are record-sequenced writer ids
// (record.RecordSequencedWriter), so the bucket's writer state — replicated to the followers
// and rebuilt on recovery — deduplicates a retry and refuses a gap on whichever replica leads
// (docs/kafka.md, "Idempotent producers and transactions"). What it cannot check is checked
// here: the id is one InitProducerId handed out, with the only epoch it hands out (0), and the
// batch is alone in its partition's records, as Kafka requires of magic 2 (the log answers a
// request holding a duplicate as a duplicate whole).
func checkProducer(kb kafkaBatch, batches int) error {
	if kb.producerID < 0 {
		return nil
	}
	if !record.IsRecordSequenced(kb.producerID) {
		return ferr.New(ferr.UnknownWriterIdException, "producer id %d was not handed out by InitProducerId", kb.producerID)
	}
	if kb.producerEpoch != 0 {
		return errProducerEpoch
	}
	if batches != 1 {
		return errOneBatch
	}
	return nil
}

var (
	// errProducerEpoch is INVALID_PRODUCER_EPOCH: InitProducerId hands out epoch 0 only (a
	// new id instead of a bump), so any other epoch is not one of ours.
	errProducerEpoch = errors.New("producer epoch is not the one InitProducerId handed out")
	// errOneBatch is INVALID_RECORD, Kafka's answer to more than one batch of magic 2.
	errOneBatch = errors.New("an idempotent producer's records must be one record batch per partition")
)

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
