package kafka_test

import (
	"context"
	"encoding/binary"
	"hash/crc32"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestIdempotentRetry sends the same idempotent batch twice, as a producer retrying after a
// lost answer does: the retry gets the first append's offset and stores nothing; the next
// sequence (the previous one plus its record count) appends; a gap or a batch-counted
// sequence is refused with OUT_OF_ORDER_SEQUENCE_NUMBER, another epoch, a producer id not
// handed out and two batches in one partition with Kafka's errors; a transactional producer
// id is refused.
func TestIdempotentRetry(t *testing.T) {
	nd := startNode(t, nil)
	ctx := context.Background()
	cl := client(t, nd.kafka)
	createTopic(t, cl, "once", 1)

	ip := kmsg.NewPtrInitProducerIDRequest()
	ipr, err := ip.RequestWith(ctx, cl)
	if err != nil || ipr.ErrorCode != 0 {
		t.Fatalf("InitProducerId: %v %d", err, ipr.ErrorCode)
	}
	txn := "txn"
	ip.TransactionalID = &txn
	// The client looks for a transaction coordinator first, which FindCoordinator refuses.
	if r, err := ip.RequestWith(ctx, cl); err == nil && r.ErrorCode == 0 {
		t.Fatal("transactional InitProducerId succeeded; want a refusal")
	}

	produceRecords := func(records []byte) (int64, int16) {
		t.Helper()
		req := kmsg.NewPtrProduceRequest()
		req.Acks, req.TimeoutMillis = -1, 10000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = "once"
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = records
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		p := resp.Topics[0].Partitions[0]
		return p.BaseOffset, p.ErrorCode
	}
	produce := func(seq int32, n int) (int64, int16) {
		t.Helper()
		return produceRecords(batch(ipr.ProducerID, ipr.ProducerEpoch, seq, n))
	}
	if ipr.ProducerID&(1<<62) == 0 {
		t.Fatalf("producer id %d lacks the record-sequenced writer bit", ipr.ProducerID)
	}
	if off, code := produce(0, 3); off != 0 || code != 0 {
		t.Fatalf("first batch: offset %d code %d", off, code)
	}
	if off, code := produce(0, 3); off != 0 || code != 0 {
		t.Fatalf("retried batch: offset %d code %d, want offset 0 without error", off, code)
	}
	if off, code := produce(3, 2); off != 3 || code != 0 {
		t.Fatalf("next batch: offset %d code %d, want 3", off, code)
	}
	if _, code := produce(9, 1); code != kerr.OutOfOrderSequenceNumber.Code {
		t.Fatalf("sequence gap: code %d, want OUT_OF_ORDER_SEQUENCE_NUMBER", code)
	}
	if _, code := produce(4, 1); code != kerr.OutOfOrderSequenceNumber.Code {
		t.Fatalf("batch-counted next sequence: code %d, want OUT_OF_ORDER_SEQUENCE_NUMBER (sequences count records)", code)
	}
	if _, code := produceRecords(batch(ipr.ProducerID, 1, 5, 1)); code != kerr.InvalidProducerEpoch.Code {
		t.Fatalf("epoch 1: code %d, want INVALID_PRODUCER_EPOCH", code)
	}
	if _, code := produceRecords(batch(ipr.ProducerID&^(1<<62), 0, 0, 1)); code != kerr.UnknownProducerID.Code {
		t.Fatalf("a producer id not handed out: code %d, want UNKNOWN_PRODUCER_ID", code)
	}
	two := append(batch(ipr.ProducerID, 0, 5, 1), batch(ipr.ProducerID, 0, 6, 1)...)
	if _, code := produceRecords(two); code != kerr.InvalidRecord.Code {
		t.Fatalf("two batches in one partition: code %d, want INVALID_RECORD", code)
	}
	lo := kmsg.NewPtrListOffsetsRequest()
	lt := kmsg.NewListOffsetsRequestTopic()
	lt.Topic = "once"
	lp := kmsg.NewListOffsetsRequestTopicPartition()
	lp.Timestamp = -1
	lt.Partitions = append(lt.Partitions, lp)
	lo.Topics = append(lo.Topics, lt)
	lr, err := lo.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if got := lr.Topics[0].Partitions[0].Offset; got != 5 {
		t.Fatalf("log end %d, want 5: the retry stored nothing", got)
	}
}

// batch encodes an uncompressed record batch of n records of an idempotent producer.
func batch(pid int64, epoch int16, seq int32, n int) []byte {
	rb := kmsg.RecordBatch{Magic: 2, ProducerID: pid, ProducerEpoch: epoch, FirstSequence: seq,
		NumRecords: int32(n), LastOffsetDelta: int32(n - 1), FirstTimestamp: 1, MaxTimestamp: 1}
	for i := 0; i < n; i++ {
		r := kmsg.Record{OffsetDelta: int32(i), Value: []byte{byte(i)}}
		r.Length = int32(len(r.AppendTo(nil)) - 1)
		rb.Records = r.AppendTo(rb.Records)
	}
	b := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-12))
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}
