package tablet

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"unsafe"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/protowalk"
	"github.com/stromdb/strom/proto/flusspb"
)

// decodeProduceLog decodes a PRODUCE_LOG body into r as proto.Unmarshal would, except that
// each bucket's records alias body instead of being copied out of it: they are most of the
// request (a 1,000-row batch is ~140 KB), and the produce path only reads them, writes them
// to the segment and rewrites their base offset and commit timestamp in place before it
// answers — while body is still the request's own (wire.Request.DecodeWith). Unknown fields,
// and known fields of an unexpected wire type, are skipped as proto.Unmarshal keeps them
// aside; a missing required field, a malformed tag or a truncated value is an error.
// TestDecodeProduceLogMatchesProto holds it to proto.Unmarshal's answers.
func decodeProduceLog(body []byte, r *flusspb.ProduceLogRequest) error {
	proto.Reset(r)
	var seen [4]bool // acks, table_id, timeout_ms
	for len(body) > 0 {
		f, n, err := protowalk.Next(body)
		if err != nil {
			return err
		}
		body = body[n:]
		switch {
		case f.Num >= 1 && f.Num <= 3 && f.Type == protowire.VarintType:
			seen[f.Num] = true
			switch f.Num {
			case 1:
				r.Acks = proto.Int32(int32(f.Varint))
			case 2:
				r.TableId = proto.Int64(int64(f.Varint))
			case 3:
				r.TimeoutMs = proto.Int32(int32(f.Varint))
			}
		case f.Is(4, protowire.BytesType):
			b := &flusspb.PbProduceLogReqForBucket{}
			if err := decodeProduceLogBucket(f.Bytes, b); err != nil {
				return err
			}
			r.BucketsReq = append(r.BucketsReq, b)
		}
	}
	for i, name := range []string{1: "acks", 2: "table_id", 3: "timeout_ms"} {
		if i > 0 && !seen[i] {
			return fmt.Errorf("%w: ProduceLogRequest.%s", errRequiredNotSet, name)
		}
	}
	return nil
}

// errRequiredNotSet is the error of a message lacking a required field.
var errRequiredNotSet = errors.New("required field not set")

// decodeProduceLogBucket decodes one PbProduceLogReqForBucket, its records aliasing body.
func decodeProduceLogBucket(body []byte, b *flusspb.PbProduceLogReqForBucket) error {
	for len(body) > 0 {
		f, n, err := protowalk.Next(body)
		if err != nil {
			return err
		}
		body = body[n:]
		switch {
		case f.Is(1, protowire.VarintType):
			b.PartitionId = proto.Int64(int64(f.Varint))
		case f.Is(2, protowire.VarintType):
			b.BucketId = proto.Int32(int32(f.Varint))
		case f.Is(3, protowire.BytesType):
			b.Records = f.Bytes[:len(f.Bytes):len(f.Bytes)] // aliased; never appended to
		}
	}
	if b.BucketId == nil {
		return fmt.Errorf("%w: PbProduceLogReqForBucket.bucket_id", errRequiredNotSet)
	}
	if b.Records == nil {
		return fmt.Errorf("%w: PbProduceLogReqForBucket.records", errRequiredNotSet)
	}
	return nil
}

// alignedRecords returns records at an 8-byte-aligned address, and release, to be called once
// nothing reads the returned bytes any more. Records aliased in the request frame
// (decodeProduceLog) start wherever the protobuf encoding put them, and the Arrow decode that
// validates a batch copies a misaligned body into a new aligned buffer; a pooled copy here
// costs the same copy and no allocation. Aligned records are returned as they are.
func alignedRecords(records []byte) ([]byte, func()) {
	if len(records) == 0 || uintptr(unsafe.Pointer(&records[0]))%8 == 0 {
		return records, func() {}
	}
	if len(records) > maxPooledRecords {
		return bytes.Clone(records), func() {} // make's large allocations are aligned
	}
	bp := recordsPool.Get().(*[]byte)
	buf := append((*bp)[:0], records...)
	return buf, func() {
		*bp = buf[:0]
		recordsPool.Put(bp)
	}
}

// maxPooledRecords bounds the buffers recordsPool keeps.
const maxPooledRecords = 4 << 20

// recordsPool holds the buffers of alignedRecords; each buffer is 8-byte aligned (an
// allocation of make of at least 8 bytes).
var recordsPool = sync.Pool{New: func() any { b := make([]byte, 0, 256<<10); return &b }}
