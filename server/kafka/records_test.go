package kafka

import (
	"bytes"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestAppendRecordMatchesKmsg checks the one-pass record encoding against kmsg's own encoding
// with the length set, and that kmsg reads it back, for records whose bodies need length
// varints of one, two and three bytes.
func TestAppendRecordMatchesKmsg(t *testing.T) {
	var dst, scratch []byte
	var want []byte
	recs := []kmsg.Record{
		{OffsetDelta: 0, Value: []byte("v")},
		{OffsetDelta: 1, TimestampDelta64: 5, Key: []byte("key"), Value: bytes.Repeat([]byte("x"), 1024),
			Headers: []kmsg.Header{{Key: "h", Value: []byte("hv")}, {Key: "nil"}}},
		{OffsetDelta: 2, TimestampDelta64: 1 << 40, Value: bytes.Repeat([]byte("y"), 20000)},
	}
	for i := range recs {
		r := recs[i]
		dst, scratch = appendRecord(dst, scratch, &r)
		body := (&kmsg.Record{OffsetDelta: r.OffsetDelta, TimestampDelta64: r.TimestampDelta64, Key: r.Key, Value: r.Value, Headers: r.Headers}).AppendTo(nil)
		ref := recs[i]
		ref.Length = int32(len(body) - 1)
		want = ref.AppendTo(want)
	}
	if !bytes.Equal(dst, want) {
		t.Fatalf("encoding differs from kmsg's:\n got %x\nwant %x", dst[:min(len(dst), 64)], want[:min(len(want), 64)])
	}
	src := dst
	for i := range recs {
		var r kmsg.Record
		if err := r.ReadFrom(src); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		if r.OffsetDelta != recs[i].OffsetDelta || !bytes.Equal(r.Value, recs[i].Value) {
			t.Fatalf("record %d read back as offset delta %d, %d value bytes", i, r.OffsetDelta, len(r.Value))
		}
		n := int(r.Length) + varintLen(int64(r.Length))
		src = src[n:]
	}
	if len(src) != 0 {
		t.Fatalf("%d bytes left after the records", len(src))
	}
}

func varintLen(v int64) int {
	u := uint64(v<<1) ^ uint64(v>>63)
	n := 1
	for u >= 0x80 {
		u >>= 7
		n++
	}
	return n
}
