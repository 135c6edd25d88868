package kafka_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"hash/crc32"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestProduceDecompressionBomb produces, with a 1 MiB request limit, a gzip batch of a few
// KiB whose records expand to 4 MiB: the partition is refused with MESSAGE_TOO_LARGE and
// nothing is stored; the same records at 256 KiB are stored.
func TestProduceDecompressionBomb(t *testing.T) {
	nd := startNode(t, map[string]string{"netty.server.max-request-size": "1mb"})
	ctx := context.Background()
	cl := client(t, nd.kafka)
	createTopic(t, cl, "bomb", 1)
	produce := func(records, valueSize int) (int16, int) {
		t.Helper()
		payload := gzipBatch(t, records, valueSize)
		req := kmsg.NewPtrProduceRequest()
		req.Acks, req.TimeoutMillis = -1, 10000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = "bomb"
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = payload
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Topics[0].Partitions[0].ErrorCode, len(payload)
	}
	if code, n := produce(64, 64<<10); code != kerr.MessageTooLarge.Code {
		t.Fatalf("a %d-byte gzip batch expanding to 4 MiB: code %d, want MESSAGE_TOO_LARGE", n, code)
	}
	if end := logEnd(t, cl, "bomb"); end != 0 {
		t.Fatalf("log end %d after the refused batch, want 0", end)
	}
	if code, _ := produce(4, 64<<10); code != 0 {
		t.Fatalf("a batch expanding to 256 KiB: code %d", code)
	}
	if end := logEnd(t, cl, "bomb"); end != 4 {
		t.Fatalf("log end %d, want 4", end)
	}
}

// gzipBatch is a gzip record batch of n records, each with a value of size zero bytes.
func gzipBatch(t *testing.T, n, size int) []byte {
	t.Helper()
	var recs []byte
	for i := 0; i < n; i++ {
		r := kmsg.Record{OffsetDelta: int32(i), Value: make([]byte, size)}
		r.Length = int32(len(r.AppendTo(nil)) - 1)
		recs = r.AppendTo(recs)
	}
	var z bytes.Buffer
	w := gzip.NewWriter(&z)
	if _, err := w.Write(recs); err != nil || w.Close() != nil {
		t.Fatal("gzip", err)
	}
	rb := kmsg.RecordBatch{Magic: 2, Attributes: 1, ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1,
		NumRecords: int32(n), LastOffsetDelta: int32(n - 1), FirstTimestamp: 1, MaxTimestamp: 1, Records: z.Bytes()}
	b := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-12))
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

// logEnd is partition 0's latest offset.
func logEnd(t *testing.T, cl interface {
	Request(context.Context, kmsg.Request) (kmsg.Response, error)
}, topic string) int64 {
	t.Helper()
	lo := kmsg.NewPtrListOffsetsRequest()
	lt := kmsg.NewListOffsetsRequestTopic()
	lt.Topic = topic
	lp := kmsg.NewListOffsetsRequestTopicPartition()
	lp.Timestamp = -1
	lt.Partitions = append(lt.Partitions, lp)
	lo.Topics = append(lo.Topics, lt)
	lr, err := lo.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	return lr.Topics[0].Partitions[0].Offset
}
