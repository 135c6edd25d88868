package kafka

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stromdb/strom/internal/arrowlog"
	"github.com/stromdb/strom/internal/record"
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

// topicBatches returns nb stored ARROW batches of a topic's table, each of perBatch records
// with 1 KiB values (and a header on every other record), and the topic's Arrow schema.
func topicBatches(tb testing.TB, nb, perBatch int) ([]byte, *arrow.Schema) {
	tb.Helper()
	schema, err := arrowlog.ArrowSchema(topicColumns())
	if err != nil {
		tb.Fatal(err)
	}
	var stored []byte
	for b := 0; b < nb; b++ {
		kb := kafkaBatch{producerID: -1, firstTs: 1_700_000_000_000}
		for i := 0; i < perBatch; i++ {
			r := kmsg.Record{OffsetDelta: int32(i), TimestampDelta64: int64(i), Value: bytes.Repeat([]byte{byte(b + i)}, 1024)}
			if i%2 == 1 {
				r.Key = []byte(fmt.Sprintf("k%d", i))
				r.Headers = []kmsg.Header{{Key: "h", Value: []byte("v")}}
			}
			kb.records = append(kb.records, r)
		}
		one, err := toFluss(nil, schema, 1, kb)
		if err != nil {
			tb.Fatal(err)
		}
		record.Batch(one).SetBaseOffset(int64(b * perBatch))
		stored = append(stored, one...)
	}
	return stored, schema
}

// TestToKafkaRoundTrip reads converted batches back with the Produce decoder, which checks
// each batch's length and CRC: record counts, values, keys and headers survive.
func TestToKafkaRoundTrip(t *testing.T) {
	const nb, perBatch = 3, 50
	stored, schema := topicBatches(t, nb, perBatch)
	out, err := toKafka(nil, stored, func(int16) (*arrow.Schema, error) { return schema, nil })
	if err != nil {
		t.Fatal(err)
	}
	kbs, err := splitBatches(out, newDecompressor(64<<20))
	if err != nil {
		t.Fatal(err)
	}
	if len(kbs) != nb {
		t.Fatalf("%d batches, want %d", len(kbs), nb)
	}
	for b, kb := range kbs {
		if len(kb.records) != perBatch {
			t.Fatalf("batch %d: %d records, want %d", b, len(kb.records), perBatch)
		}
		for i, r := range kb.records {
			if want := bytes.Repeat([]byte{byte(b + i)}, 1024); !bytes.Equal(r.Value, want) {
				t.Fatalf("batch %d record %d: value differs", b, i)
			}
			if i%2 == 1 && (string(r.Key) != fmt.Sprintf("k%d", i) || len(r.Headers) != 1 || r.Headers[0].Key != "h") {
				t.Fatalf("batch %d record %d: key %q headers %v", b, i, r.Key, r.Headers)
			}
			if i%2 == 0 && (r.Key != nil || len(r.Headers) != 0) {
				t.Fatalf("batch %d record %d: key %q headers %v, want none", b, i, r.Key, r.Headers)
			}
		}
	}
}

// BenchmarkToKafka converts 1 MiB of stored batches (one partition's Fetch at franz-go's
// default partition limit) per iteration.
func BenchmarkToKafka(b *testing.B) {
	stored, schema := topicBatches(b, 64, 16)
	schemas := func(int16) (*arrow.Schema, error) { return schema, nil }
	b.SetBytes(int64(len(stored)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := toKafka(make([]byte, 0, len(stored)+len(stored)/8), stored, schemas); err != nil {
			b.Fatal(err)
		}
	}
}
