package kafka

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stromdb/strom/internal/arrowlog"
	"github.com/stromdb/strom/internal/record"
)

// Kafka record batches (magic 2) become Fluss ARROW log batches of a topic's table, one for
// one, so a Kafka batch's records get consecutive Fluss offsets, which are the Kafka offsets.

var (
	errCorrupt        = errors.New("corrupt record batch")
	errUnsupportedMag = errors.New("only record batches of magic 2 are accepted")
	crc32c            = crc32.MakeTable(crc32.Castagnoli)
)

// kafkaBatch is one decoded Kafka record batch.
type kafkaBatch struct {
	producerID    int64
	producerEpoch int16
	baseSequence  int32
	transactional bool
	control       bool
	records       []kmsg.Record
	firstTs       int64
}

// splitBatches decodes a partition's records field into batches; every batch is checked
// (length, magic, CRC, records) before any is used, and decompressed within d's bound.
func splitBatches(b []byte, d *decompressor) ([]kafkaBatch, error) {
	var out []kafkaBatch
	for len(b) > 0 {
		if len(b) < 61 {
			return nil, fmt.Errorf("%w: %d trailing bytes", errCorrupt, len(b))
		}
		length := int32(uint32(b[8])<<24 | uint32(b[9])<<16 | uint32(b[10])<<8 | uint32(b[11]))
		if length < 49 || int(length) > len(b)-12 {
			return nil, fmt.Errorf("%w: batch length %d", errCorrupt, length)
		}
		raw := b[:12+length]
		b = b[12+length:]
		var rb kmsg.RecordBatch
		if err := rb.ReadFrom(raw); err != nil {
			return nil, fmt.Errorf("%w: %w", errCorrupt, err)
		}
		if rb.Magic != 2 {
			return nil, errUnsupportedMag
		}
		if uint32(rb.CRC) != crc32.Checksum(raw[21:], crc32c) {
			return nil, fmt.Errorf("%w: CRC mismatch", errCorrupt)
		}
		if rb.NumRecords < 0 || int(rb.NumRecords) > len(rb.Records)+1<<20 {
			return nil, fmt.Errorf("%w: %d records", errCorrupt, rb.NumRecords)
		}
		kb := kafkaBatch{producerID: rb.ProducerID, producerEpoch: rb.ProducerEpoch, baseSequence: rb.FirstSequence,
			transactional: rb.Attributes&0x10 != 0, control: rb.Attributes&0x20 != 0, firstTs: rb.FirstTimestamp}
		recs := rb.Records
		if codec := kgo.CompressionCodecType(rb.Attributes & 0x07); codec != kgo.CodecNone {
			out, err := d.decompress(recs, codec)
			if err != nil {
				return nil, err
			}
			recs = out
		}
		if int(rb.NumRecords) > len(recs) {
			return nil, fmt.Errorf("%w: %d records in %d bytes", errCorrupt, rb.NumRecords, len(recs))
		}
		kb.records = make([]kmsg.Record, rb.NumRecords)
		for i := range kb.records {
			r := &kb.records[i]
			n, rest, ok := varint(recs)
			if !ok || n < 0 || int(n) > len(rest) {
				return nil, fmt.Errorf("%w: record %d length", errCorrupt, i)
			}
			whole := recs[:len(recs)-len(rest)+int(n)]
			if err := r.ReadFrom(whole); err != nil {
				return nil, fmt.Errorf("%w: record %d: %w", errCorrupt, i, err)
			}
			recs = rest[n:]
		}
		if len(recs) != 0 {
			return nil, fmt.Errorf("%w: %d bytes after the records", errCorrupt, len(recs))
		}
		out = append(out, kb)
	}
	return out, nil
}

// varint reads a zigzag varint.
func varint(b []byte) (int64, []byte, bool) {
	var ux uint64
	for i := 0; i < len(b) && i < 10; i++ {
		ux |= uint64(b[i]&0x7f) << (7 * i)
		if b[i] < 0x80 {
			return int64(ux>>1) ^ -int64(ux&1), b[i+1:], true
		}
	}
	return 0, nil, false
}

// toFluss encodes a Kafka batch as one Fluss ARROW log batch of schema (the topic table's
// schema id sid): writer id and batch sequence carry the producer id and base sequence of an
// idempotent producer, so the log's writer state deduplicates retries.
func toFluss(dst []byte, schema *arrow.Schema, sid int16, kb kafkaBatch) ([]byte, error) {
	bld := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer bld.Release()
	keyB := bld.Field(0).(*array.BinaryBuilder)
	valB := bld.Field(1).(*array.BinaryBuilder)
	hdrB := bld.Field(2).(*array.ListBuilder)
	hdrS := hdrB.ValueBuilder().(*array.StructBuilder)
	hk, hv := hdrS.FieldBuilder(0), hdrS.FieldBuilder(1).(*array.BinaryBuilder)
	tsB := bld.Field(3).(*array.TimestampBuilder)
	for i := range kb.records {
		r := &kb.records[i]
		appendBytes(keyB, r.Key)
		appendBytes(valB, r.Value)
		hdrB.Append(true)
		for _, h := range r.Headers {
			hdrS.Append(true)
			appendString(hk, h.Key)
			appendBytes(hv, h.Value)
		}
		tsB.Append(arrow.Timestamp(kb.firstTs + r.TimestampDelta64))
	}
	rec := bld.NewRecordBatch()
	defer rec.Release()
	hdr := record.V0Header{SchemaID: sid, WriterID: record.NoWriterID, BatchSequence: record.NoBatchSequence}
	if kb.producerID >= 0 {
		hdr.WriterID, hdr.BatchSequence = kb.producerID, kb.baseSequence
	}
	return arrowlog.AppendBatch(dst, hdr, rec, nil, arrowlog.CompressionNone, 0)
}

func appendBytes(b *array.BinaryBuilder, v []byte) {
	if v == nil {
		b.AppendNull()
	} else {
		b.Append(v)
	}
}

func appendString(b array.Builder, s string) {
	switch x := b.(type) {
	case *array.StringBuilder:
		x.Append(s)
	case *array.LargeStringBuilder:
		x.Append(s)
	case *array.BinaryBuilder:
		x.Append([]byte(s))
	default:
		b.AppendNull()
	}
}

// schemaOf returns a function that gives the Arrow schema of a topic table's schema id.
type schemaOf func(sid int16) (*arrow.Schema, error)

// toKafka converts stored Fluss batches (from ReadLog) into Kafka record batches, skipping
// those before fetchOffset's batch. A batch that does not have the topic's shape is an error.
func toKafka(dst []byte, fluss []byte, schemas schemaOf) ([]byte, error) {
	r := record.NewBatchReader(fluss)
	for b, ok := r.Next(); ok; b, ok = r.Next() {
		schema, err := schemas(b.SchemaID())
		if err != nil {
			return dst, err
		}
		_, rec, err := arrowlog.Decode(schema, b.AppendOnly(), int(b.RecordCount()), b.Records(), memory.DefaultAllocator)
		if err != nil {
			return dst, err
		}
		dst, err = appendKafkaBatch(dst, b, rec)
		rec.Release()
		if err != nil {
			return dst, err
		}
	}
	return dst, r.Err()
}

// appendKafkaBatch appends one Kafka record batch holding rec's rows at b's offsets.
func appendKafkaBatch(dst []byte, b record.Batch, rec arrow.RecordBatch) ([]byte, error) {
	n := int(rec.NumRows())
	keys, ok1 := rec.Column(0).(*array.Binary)
	vals, ok2 := rec.Column(1).(*array.Binary)
	hdrs, ok3 := rec.Column(2).(*array.List)
	tss, ok4 := rec.Column(3).(*array.Timestamp)
	if !ok1 || !ok2 || !ok3 || !ok4 {
		return dst, errors.New("table is not of a topic's shape")
	}
	hst, ok := hdrs.ListValues().(*array.Struct)
	if !ok {
		return dst, errors.New("headers column is not a list of rows")
	}
	hkeys, hvals := hst.Field(0), hst.Field(1).(*array.Binary)
	first, maxTs := int64(-1), int64(-1)
	for i := 0; i < n; i++ {
		t := int64(tss.Value(i))
		if first < 0 || t < first {
			first = t
		}
		maxTs = max(maxTs, t)
	}
	if n == 0 {
		first, maxTs = b.CommitTimestamp(), b.CommitTimestamp()
	}
	kb := kmsg.RecordBatch{
		FirstOffset: b.BaseOffset(), PartitionLeaderEpoch: max(b.LeaderEpoch(), 0), Magic: 2,
		LastOffsetDelta: max(int32(n)-1, 0), FirstTimestamp: first, MaxTimestamp: maxTs,
		ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, NumRecords: int32(n),
	}
	if n == 0 {
		kb.LastOffsetDelta = b.LastOffsetDelta()
	}
	// Records is the batch's last field, so the header is appended with none and the records
	// are encoded straight after it (no intermediate buffer); length and CRC are patched last.
	// dst grows once: the column bytes plus a record's framing bound the batch's size.
	start := len(dst)
	dst = slices.Grow(dst, 61+len(keys.ValueBytes())+len(vals.ValueBytes())+len(hvals.ValueBytes())+n*(32+8*hkeysPerRow(hdrs)))
	dst = kb.AppendTo(dst)
	var scratch []byte
	for i := 0; i < n; i++ {
		r := kmsg.Record{OffsetDelta: int32(i), TimestampDelta64: int64(tss.Value(i)) - first}
		if !keys.IsNull(i) {
			r.Key = keys.Value(i)
		}
		if !vals.IsNull(i) {
			r.Value = vals.Value(i)
		}
		if !hdrs.IsNull(i) {
			start, end := hdrs.ValueOffsets(i)
			for j := start; j < end; j++ {
				h := kmsg.Header{Key: stringAt(hkeys, int(j))}
				if !hvals.IsNull(int(j)) {
					h.Value = hvals.Value(int(j))
				}
				r.Headers = append(r.Headers, h)
			}
		}
		r.TimestampDelta = int32(r.TimestampDelta64)
		dst, scratch = appendRecord(dst, scratch, &r)
	}
	out := dst[start:]
	putInt32(out[8:], int32(len(out)-12))
	putInt32(out[17:], int32(crc32.Checksum(out[21:], crc32c)))
	return dst, nil
}

// appendRecord encodes a record with its length prefix computed, reusing scratch (returned
// for the next record) for the body so the record's bytes are encoded once and copied once.
func appendRecord(dst, scratch []byte, r *kmsg.Record) ([]byte, []byte) {
	r.Length = 0
	scratch = r.AppendTo(scratch[:0]) // Length 0 encodes as the one byte 0
	body := scratch[1:]
	dst = binary.AppendVarint(dst, int64(len(body)))
	return append(dst, body...), scratch
}

// hkeysPerRow is the mean number of headers per row of hdrs, rounded up.
func hkeysPerRow(hdrs *array.List) int {
	n := hdrs.Len()
	if n == 0 {
		return 0
	}
	return (hdrs.ListValues().Len() + n - 1) / n
}

func stringAt(a arrow.Array, i int) string {
	switch x := a.(type) {
	case *array.String:
		return x.Value(i)
	case *array.LargeString:
		return x.Value(i)
	case *array.Binary:
		return string(x.Value(i))
	}
	return ""
}

func putInt32(b []byte, v int32) {
	b[0], b[1], b[2], b[3] = byte(v>>24), byte(v>>16), byte(v>>8), byte(v)
}
