package fetchresp

import (
	"bytes"
	"encoding/hex"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"unsafe"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/stromdb/strom/internal/record"
	"github.com/stromdb/strom/proto/flusspb"
)

// unmarshal is the decoder Decode replaces: wire.ClientConn.Call's.
var unmarshal = proto.UnmarshalOptions{AllowPartial: true}

// check decodes body both ways and fails t unless both accept or both refuse it and, when
// accepted, the messages are equal (unknown fields aside) and every non-empty records field
// aliases body. It reports whether body was accepted.
func check(t testing.TB, body []byte) bool {
	t.Helper()
	var want, got flusspb.FetchLogResponse
	wantErr := unmarshal.Unmarshal(body, &want)
	gotErr := Decode(body, &got)
	if (wantErr == nil) != (gotErr == nil) {
		t.Fatalf("body %x: proto.Unmarshal err %v, Decode err %v", body, wantErr, gotErr)
	}
	if wantErr != nil {
		return false
	}
	dropUnknown(want.ProtoReflect())
	dropUnknown(got.ProtoReflect()) // the nested remote-log message keeps its own
	if !proto.Equal(&want, &got) {
		t.Fatalf("body %x:\nproto.Unmarshal %v\nDecode          %v", body, &want, &got)
	}
	for _, tr := range got.TablesResp {
		for _, b := range tr.BucketsResp {
			if len(b.Records) > 0 && !aliases(body, b.Records) {
				t.Fatalf("records of bucket %d were copied, not aliased", b.GetBucketId())
			}
			if cap(b.Records) != len(b.Records) {
				t.Fatalf("records of bucket %d have spare capacity %d: an append would write into the body", b.GetBucketId(), cap(b.Records)-len(b.Records))
			}
		}
	}
	return true
}

// TestDecodeMatchesProto: on valid answers, on answers with unknown fields, fields of a wrong
// wire type, repeated scalars and nested messages, and on randomly damaged bytes, Decode
// accepts exactly what proto.Unmarshal accepts and decodes the same message.
func TestDecodeMatchesProto(t *testing.T) {
	rng := rand.New(rand.NewPCG(26, 2))
	accepted, refused := 0, 0
	for range 4000 {
		body := randomBody(rng)
		switch rng.IntN(4) {
		case 0:
			body = bytes.Clone(body)
			for range 1 + rng.IntN(3) {
				if len(body) > 0 {
					body[rng.IntN(len(body))] ^= byte(1 + rng.IntN(255))
				}
			}
		case 1:
			body = body[:rng.IntN(len(body)+1)]
		}
		if check(t, body) {
			accepted++
		} else {
			refused++
		}
	}
	if accepted < 400 || refused < 400 {
		t.Fatalf("%d accepted, %d refused: the inputs do not exercise both sides", accepted, refused)
	}
}

// TestDecodeRealAnswer: an answer of the shape a tablet server sends (two tables, buckets with
// real ARROW batches, an error bucket, a remote-log bucket) decodes to the same message, and
// the batches read from the aliased records are byte-identical to proto.Unmarshal's copy.
func TestDecodeRealAnswer(t *testing.T) {
	batch := readHex(t, "../arrowlog/testdata/batch_v0_appendonly.hex")
	changelog := readHex(t, "../arrowlog/testdata/batch_v0_changelog.hex")
	records := append(append(append([]byte{}, batch...), changelog...), batch...)
	resp := &flusspb.FetchLogResponse{TablesResp: []*flusspb.PbFetchLogRespForTable{
		{TableId: proto.Int64(7), BucketsResp: []*flusspb.PbFetchLogRespForBucket{
			{BucketId: proto.Int32(0), HighWatermark: proto.Int64(6), LogStartOffset: proto.Int64(0), Records: records},
			{BucketId: proto.Int32(1), ErrorCode: proto.Int32(15), ErrorMessage: proto.String("not leader")},
			{PartitionId: proto.Int64(3), BucketId: proto.Int32(2), HighWatermark: proto.Int64(100), Records: []byte{}, FilteredEndOffset: proto.Int64(40)},
		}},
		{TableId: proto.Int64(8), BucketsResp: []*flusspb.PbFetchLogRespForBucket{
			{BucketId: proto.Int32(5), HighWatermark: proto.Int64(9), RemoteLogFetchInfo: &flusspb.PbRemoteLogFetchInfo{
				RemoteLogTabletDir: proto.String("/remote/t/8/5"), FirstStartPos: proto.Int32(12),
				RemoteLogSegments: []*flusspb.PbRemoteLogSegment{{RemoteLogSegmentId: proto.String("seg"), RemoteLogStartOffset: proto.Int64(0), RemoteLogEndOffset: proto.Int64(9), SegmentSizeInBytes: proto.Int32(4096)}},
			}},
			{BucketId: proto.Int32(6), Records: batch},
		}},
	}}
	body, err := proto.Marshal(resp)
	if err != nil {
		t.Fatal(err)
	}
	if !check(t, body) {
		t.Fatal("a valid answer was refused")
	}
	var want, got flusspb.FetchLogResponse
	if err := unmarshal.Unmarshal(body, &want); err != nil {
		t.Fatal(err)
	}
	if err := Decode(body, &got); err != nil {
		t.Fatal(err)
	}
	n := 0
	for i, tr := range got.TablesResp {
		for j, b := range tr.BucketsResp {
			wb := want.TablesResp[i].BucketsResp[j]
			var wantBatches [][]byte
			for bt, err := range record.Iterate(wb.Records) {
				if err != nil {
					t.Fatal(err)
				}
				wantBatches = append(wantBatches, []byte(bt))
			}
			k := 0
			for bt, err := range record.Iterate(b.Records) {
				if err != nil {
					t.Fatal(err)
				}
				if k >= len(wantBatches) || !bytes.Equal(bt, wantBatches[k]) {
					t.Fatalf("table %d bucket %d batch %d differs", i, j, k)
				}
				k++
				n++
			}
			if k != len(wantBatches) {
				t.Fatalf("table %d bucket %d: %d batches, want %d", i, j, k, len(wantBatches))
			}
		}
	}
	if n != 4 {
		t.Fatalf("%d batches read, want 4", n)
	}
}

// FuzzDecode: on any input, Decode agrees with proto.Unmarshal and never panics.
func FuzzDecode(f *testing.F) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 16 {
		f.Add(randomBody(rng))
	}
	f.Fuzz(func(t *testing.T, body []byte) { check(t, body) })
}

// randomBody encodes a FETCH_LOG answer, sometimes with unknown fields, known field numbers
// of another wire type, groups, repeated scalars and repeated nested messages.
func randomBody(rng *rand.Rand) []byte {
	varint := func(b []byte, num protowire.Number) []byte {
		v := rng.Uint64()
		if rng.IntN(2) == 0 {
			v = uint64(rng.Int64N(2000) - 1000)
		}
		b = protowire.AppendTag(b, num, protowire.VarintType)
		return protowire.AppendVarint(b, v)
	}
	bytesField := func(b []byte, num protowire.Number, v []byte) []byte {
		b = protowire.AppendTag(b, num, protowire.BytesType)
		return protowire.AppendBytes(b, v)
	}
	extra := func(b []byte) []byte {
		switch rng.IntN(8) {
		case 0:
			b = bytesField(b, protowire.Number(10+rng.IntN(100)), []byte("unknown"))
		case 1:
			b = protowire.AppendTag(b, protowire.Number(1+rng.IntN(9)), protowire.Fixed32Type)
			b = protowire.AppendFixed32(b, rng.Uint32())
		case 2:
			b = protowire.AppendTag(b, protowire.Number(1+rng.IntN(9)), protowire.Fixed64Type)
			b = protowire.AppendFixed64(b, rng.Uint64())
		case 3:
			num := protowire.Number(1 + rng.IntN(12))
			b = protowire.AppendTag(b, num, protowire.StartGroupType)
			b = varint(b, 1)
			b = protowire.AppendTag(b, num, protowire.EndGroupType)
		case 4:
			b = bytesField(b, protowire.Number(1+rng.IntN(9)), []byte{1, 2}) // a known scalar as bytes
		}
		return b
	}
	randBytes := func(n int) []byte {
		v := make([]byte, n)
		for i := range v {
			v[i] = byte(rng.IntN(256))
		}
		return v
	}
	remote := func() []byte {
		m := &flusspb.PbRemoteLogFetchInfo{RemoteLogTabletDir: proto.String("dir")}
		if rng.IntN(2) == 0 {
			m.PartitionName = proto.String("p=1")
		}
		for range rng.IntN(3) {
			m.RemoteLogSegments = append(m.RemoteLogSegments, &flusspb.PbRemoteLogSegment{RemoteLogSegmentId: proto.String("s"), RemoteLogStartOffset: proto.Int64(rng.Int64N(100)), RemoteLogEndOffset: proto.Int64(rng.Int64N(100)), SegmentSizeInBytes: proto.Int32(rng.Int32N(1000))})
		}
		if rng.IntN(2) == 0 {
			m.FirstStartPos = proto.Int32(rng.Int32N(100))
		}
		b, _ := proto.MarshalOptions{AllowPartial: true}.Marshal(m)
		return b
	}
	bucket := func() []byte {
		var b []byte
		for range 1 + rng.IntN(8) {
			switch num := protowire.Number(1 + rng.IntN(9)); num {
			case 4:
				b = bytesField(b, num, []byte("message"))
			case 7:
				b = bytesField(b, num, remote())
			case 8:
				b = bytesField(b, num, randBytes(rng.IntN(200)))
			default:
				b = varint(b, num)
			}
			b = extra(b)
		}
		return b
	}
	table := func() []byte {
		var b []byte
		if rng.IntN(10) != 0 {
			b = varint(b, 1)
		}
		for range rng.IntN(4) {
			b = bytesField(b, 2, bucket())
			b = extra(b)
		}
		if rng.IntN(5) == 0 {
			b = varint(b, 1)
		}
		return b
	}
	var b []byte
	for range rng.IntN(3) {
		b = bytesField(b, 1, table())
		b = extra(b)
	}
	return b
}

// dropUnknown clears the unknown fields of m and of the messages it holds.
func dropUnknown(m protoreflect.Message) {
	m.SetUnknown(nil)
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.Message() != nil && fd.IsList():
			for i := 0; i < v.List().Len(); i++ {
				dropUnknown(v.List().Get(i).Message())
			}
		case fd.Message() != nil:
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
	lo, p := uintptr(unsafe.Pointer(&buf[0])), uintptr(unsafe.Pointer(&sub[0]))
	return p >= lo && p+uintptr(len(sub)) <= lo+uintptr(len(buf))
}

// readHex reads a testdata file of hex bytes with # comments.
func readHex(t *testing.T, path string) []byte {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var sb strings.Builder
	for line := range strings.Lines(string(raw)) {
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		sb.WriteString(strings.Join(strings.Fields(line), ""))
	}
	b, err := hex.DecodeString(sb.String())
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// BenchmarkDecode decodes a FETCH_LOG answer of 4 buckets of 1 MiB records, the shape of
// `strom bench scan`'s answers, with Decode and with proto.Unmarshal (which copies them).
func BenchmarkDecode(b *testing.B) {
	resp := &flusspb.FetchLogResponse{TablesResp: []*flusspb.PbFetchLogRespForTable{{TableId: proto.Int64(1)}}}
	for i := range 4 {
		resp.TablesResp[0].BucketsResp = append(resp.TablesResp[0].BucketsResp, &flusspb.PbFetchLogRespForBucket{BucketId: proto.Int32(int32(i)), HighWatermark: proto.Int64(1 << 30), Records: make([]byte, 1<<20)})
	}
	body, err := proto.Marshal(resp)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("aliasing", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		var m flusspb.FetchLogResponse
		for b.Loop() {
			if err := Decode(body, &m); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("proto.Unmarshal", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		var m flusspb.FetchLogResponse
		for b.Loop() {
			if err := unmarshal.Unmarshal(body, &m); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestAligned: after Aligned's decode every non-empty records field starts 8-byte aligned, the
// aligned ones still alias the body, the copies hold the same bytes, and the body is reported
// retained exactly when some records alias it.
func TestAligned(t *testing.T) {
	for shift := range 16 {
		resp := &flusspb.FetchLogResponse{TablesResp: []*flusspb.PbFetchLogRespForTable{{TableId: proto.Int64(1)}}}
		for i := range 3 {
			rec := bytes.Repeat([]byte{byte('a' + i)}, 1000+i*3)
			resp.TablesResp[0].BucketsResp = append(resp.TablesResp[0].BucketsResp, &flusspb.PbFetchLogRespForBucket{BucketId: proto.Int32(int32(i)), Records: rec})
		}
		enc, err := proto.Marshal(resp)
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, shift+len(enc))
		body := buf[shift:]
		copy(body, enc)
		var got flusspb.FetchLogResponse
		retained, err := Aligned{&got}.DecodeAliasing(body)
		if err != nil {
			t.Fatal(err)
		}
		aliased := false
		for i, b := range got.TablesResp[0].BucketsResp {
			if uintptr(unsafe.Pointer(&b.Records[0]))%8 != 0 {
				t.Fatalf("shift %d: bucket %d records misaligned", shift, i)
			}
			if !bytes.Equal(b.Records, resp.TablesResp[0].BucketsResp[i].Records) {
				t.Fatalf("shift %d: bucket %d records differ", shift, i)
			}
			if cap(b.Records) != len(b.Records) {
				t.Fatalf("shift %d: bucket %d records have spare capacity", shift, i)
			}
			aliased = aliased || aliases(body, b.Records)
		}
		if retained != aliased {
			t.Fatalf("shift %d: retained %v, records aliasing the body %v", shift, retained, aliased)
		}
	}
}
