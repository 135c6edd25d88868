package tablet

import (
	"bytes"
	"math/rand/v2"
	"testing"
	"unsafe"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/stromdb/strom/proto/flusspb"
)

// TestDecodeProduceLogMatchesProto: on valid requests, on requests with unknown fields or
// missing required ones, and on randomly damaged bytes, decodeProduceLog accepts exactly what
// proto.Unmarshal accepts and decodes the same message (unknown fields aside), its records
// aliasing the body.
func TestDecodeProduceLogMatchesProto(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	accepted, refused := 0, 0
	for iter := 0; iter < 3000; iter++ {
		body := randomProduceLogBody(rng)
		switch rng.IntN(4) {
		case 0: // flip bytes
			body = bytes.Clone(body)
			for range 1 + rng.IntN(3) {
				if len(body) > 0 {
					body[rng.IntN(len(body))] ^= byte(1 + rng.IntN(255))
				}
			}
		case 1: // cut short
			body = body[:rng.IntN(len(body)+1)]
		}
		var want, got flusspb.ProduceLogRequest
		wantErr := proto.Unmarshal(body, &want)
		gotErr := decodeProduceLog(body, &got)
		if (wantErr == nil) != (gotErr == nil) {
			t.Fatalf("body %x: proto.Unmarshal err %v, decodeProduceLog err %v", body, wantErr, gotErr)
		}
		if wantErr != nil {
			refused++
			continue
		}
		accepted++
		dropUnknown(want.ProtoReflect())
		if !proto.Equal(&want, &got) {
			t.Fatalf("body %x:\nproto.Unmarshal %v\ndecodeProduceLog %v", body, &want, &got)
		}
		for _, b := range got.BucketsReq {
			if len(b.Records) > 0 && !aliases(body, b.Records) {
				t.Fatalf("records of bucket %d were copied, not aliased", b.GetBucketId())
			}
		}
	}
	if accepted < 300 || refused < 300 {
		t.Fatalf("%d accepted, %d refused: the inputs do not exercise both sides", accepted, refused)
	}
}

// TestDecodeProduceLogRefusesFieldNumbersAboveTheMaximum: protowire.ConsumeTag alone accepts
// field numbers up to MaxInt32, proto.Unmarshal refuses those above 2^29-1; so must we.
func TestDecodeProduceLogRefusesFieldNumbersAboveTheMaximum(t *testing.T) {
	body, err := proto.Marshal(&flusspb.ProduceLogRequest{Acks: proto.Int32(-1), TableId: proto.Int64(1), TimeoutMs: proto.Int32(100)})
	if err != nil {
		t.Fatal(err)
	}
	body = protowire.AppendTag(body, protowire.MaxValidNumber+1, protowire.VarintType)
	body = protowire.AppendVarint(body, 1)
	var want, got flusspb.ProduceLogRequest
	if err := proto.Unmarshal(body, &want); err == nil {
		t.Fatal("proto.Unmarshal accepted the field number; the test's premise is wrong")
	}
	if err := decodeProduceLog(body, &got); err == nil {
		t.Fatal("decodeProduceLog accepted a field number above protowire.MaxValidNumber")
	}
}

// randomProduceLogBody encodes a PRODUCE_LOG request, sometimes with unknown fields, fields
// of a wrong wire type, repeated scalars or a required field left out.
func randomProduceLogBody(rng *rand.Rand) []byte {
	var b []byte
	field := func(num protowire.Number, v uint64) {
		b = protowire.AppendTag(b, num, protowire.VarintType)
		b = protowire.AppendVarint(b, v)
	}
	extra := func(buf []byte) []byte {
		switch rng.IntN(6) {
		case 0:
			buf = protowire.AppendTag(buf, protowire.Number(5+rng.IntN(100)), protowire.BytesType)
			buf = protowire.AppendBytes(buf, []byte("unknown"))
		case 1:
			buf = protowire.AppendTag(buf, 1, protowire.Fixed32Type) // known number, other wire type
			buf = protowire.AppendFixed32(buf, rng.Uint32())
		case 2:
			buf = protowire.AppendTag(buf, 9, protowire.StartGroupType)
			buf = protowire.AppendTag(buf, 1, protowire.VarintType)
			buf = protowire.AppendVarint(buf, 3)
			buf = protowire.AppendTag(buf, 9, protowire.EndGroupType)
		}
		return buf
	}
	for num := protowire.Number(1); num <= 3; num++ {
		if rng.IntN(20) == 0 {
			continue // a required field missing
		}
		for range 1 + rng.IntN(2) {
			v := rng.Uint64()
			if rng.IntN(2) == 0 {
				v = uint64(rng.Int64N(2000) - 1000)
			}
			field(num, v)
		}
		b = extra(b)
	}
	for range rng.IntN(4) {
		var e []byte
		if rng.IntN(2) == 0 {
			e = protowire.AppendTag(e, 1, protowire.VarintType)
			e = protowire.AppendVarint(e, uint64(rng.Int64N(100)))
		}
		if rng.IntN(20) != 0 {
			e = protowire.AppendTag(e, 2, protowire.VarintType)
			e = protowire.AppendVarint(e, uint64(rng.Int32N(64)))
		}
		e = extra(e)
		for range rng.IntN(3) {
			if rng.IntN(20) == 0 {
				break
			}
			rec := make([]byte, rng.IntN(300))
			for i := range rec {
				rec[i] = byte(rng.IntN(256))
			}
			e = protowire.AppendTag(e, 3, protowire.BytesType)
			e = protowire.AppendBytes(e, rec)
		}
		b = protowire.AppendTag(b, 4, protowire.BytesType)
		b = protowire.AppendBytes(b, e)
	}
	return b
}

// dropUnknown clears the unknown fields of m and of the messages it holds.
func dropUnknown(m protoreflect.Message) {
	m.SetUnknown(nil)
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if fd.Message() != nil && fd.IsList() {
			for i := 0; i < v.List().Len(); i++ {
				dropUnknown(v.List().Get(i).Message())
			}
		} else if fd.Message() != nil {
			dropUnknown(v.Message())
		}
		return true
	})
}

// aliases reports whether sub lies inside buf's memory.
func aliases(buf, sub []byte) bool {
	if len(sub) == 0 || len(buf) == 0 {
		return false
	}
	for i := range buf {
		if &buf[i] == &sub[0] {
			return i+len(sub) <= len(buf)
		}
	}
	return false
}

// BenchmarkDecodeProduceLog decodes a PRODUCE_LOG of 4 buckets of 140 KB records, the
// shape of `strom bench append -batch 1000 -buckets 4`'s requests, with decodeProduceLog and
// with proto.Unmarshal (which copies the records).
func BenchmarkDecodeProduceLog(b *testing.B) {
	req := &flusspb.ProduceLogRequest{Acks: proto.Int32(-1), TableId: proto.Int64(1), TimeoutMs: proto.Int32(30000)}
	for i := range 4 {
		req.BucketsReq = append(req.BucketsReq, &flusspb.PbProduceLogReqForBucket{BucketId: proto.Int32(int32(i)), Records: make([]byte, 140<<10)})
	}
	body, err := proto.Marshal(req)
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		decode func([]byte, *flusspb.ProduceLogRequest) error
	}{
		{"aliased", decodeProduceLog},
		{"proto.Unmarshal", func(body []byte, r *flusspb.ProduceLogRequest) error { return proto.Unmarshal(body, r) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				var r flusspb.ProduceLogRequest
				if err := c.decode(body, &r); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestAlignedRecords: records at an odd address come back 8-byte aligned with the same
// bytes, aligned records come back as they are.
func TestAlignedRecords(t *testing.T) {
	buf := make([]byte, 1<<10+8)
	for i := range buf {
		buf[i] = byte(i)
	}
	for off := range 8 {
		in := buf[off : off+1<<10]
		out, release := alignedRecords(in)
		if uintptr(unsafe.Pointer(&out[0]))%8 != 0 || !bytes.Equal(out, in) {
			t.Fatalf("offset %d: got %d bytes at alignment %d", off, len(out), uintptr(unsafe.Pointer(&out[0]))%8)
		}
		if (off == 0) != (&out[0] == &in[0]) {
			t.Fatalf("offset %d: copied %v", off, &out[0] != &in[0])
		}
		release()
	}
}
