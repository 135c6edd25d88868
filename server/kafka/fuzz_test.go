package kafka

import (
	"encoding/binary"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// FuzzDecodeRequest feeds arbitrary frames to the request decoder: it must return a request
// or an error, never panic.
func FuzzDecodeRequest(f *testing.F) {
	for _, req := range []kmsg.Request{kmsg.NewPtrApiVersionsRequest(), kmsg.NewPtrMetadataRequest(), kmsg.NewPtrProduceRequest(), kmsg.NewPtrFetchRequest(), kmsg.NewPtrJoinGroupRequest()} {
		req.SetVersion(apis[req.Key()].max)
		f.Add(frameOf(req))
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		req, _, err := decodeRequest(frame)
		if err == nil && req.msg == nil {
			t.Fatal("no error and no message")
		}
	})
}

// FuzzSplitBatches feeds arbitrary record payloads to the Kafka batch decoder (which a
// Produce runs before storing anything): an error or batches, never a panic.
func FuzzSplitBatches(f *testing.F) {
	rb := kmsg.RecordBatch{Magic: 2, NumRecords: 1, ProducerID: -1, FirstSequence: -1}
	r := kmsg.Record{Key: []byte("k"), Value: []byte("v")}
	rb.Records, _ = appendRecord(nil, nil, &r)
	b := rb.AppendTo(nil)
	putInt32(b[8:], int32(len(b)-12))
	f.Add(b)
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		kbs, err := splitBatches(data, fuzzDecompressor)
		if err == nil && len(data) > 0 && len(kbs) == 0 {
			t.Fatal("bytes decoded to no batch without an error")
		}
	})
}

// fuzzDecompressor bounds a fuzzed batch's records at 1 MiB.
var fuzzDecompressor = newDecompressor(1 << 20)

// frameOf encodes a request as decodeRequest receives it (without the size).
func frameOf(req kmsg.Request) []byte {
	b := make([]byte, 8)
	binary.BigEndian.PutUint16(b[0:], uint16(req.Key()))
	binary.BigEndian.PutUint16(b[2:], uint16(req.GetVersion()))
	binary.BigEndian.PutUint32(b[4:], 7)
	b = append(b, 0xff, 0xff) // null client id
	if req.IsFlexible() {
		b = append(b, 0)
	}
	return req.AppendTo(b)
}
