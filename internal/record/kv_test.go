package record

import (
	"bytes"
	"errors"
	"testing"

	"github.com/stromdb/strom/internal/ferr"
)

func TestKvAppendixA(t *testing.T) {
	row := loadHex(t, "compacted_row.hex")
	tests := []struct {
		file    string
		h       KvHeader
		crc     uint32
		key     []byte
		row     []byte // nil = delete
		records []KvRecord
	}{
		{"kv_upsert.hex", KvHeader{SchemaID: 1, WriterID: -1, BatchSequence: -1}, 0x8b52272b,
			[]byte{1}, row, []KvRecord{{Key: []byte{1}, Row: row}}},
		{"kv_delete.hex", KvHeader{SchemaID: 1, WriterID: 7, BatchSequence: 0}, 0x53134bf2,
			[]byte{1}, nil, []KvRecord{{Key: []byte{1}}}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			raw := loadHex(t, tt.file)
			b, err := ParseKvBatch(raw)
			if err != nil {
				t.Fatal(err)
			}
			if int(b.Length()) != len(raw)-4 || b.Magic() != KvMagicV0 || b.CRC() != tt.crc ||
				b.SchemaID() != tt.h.SchemaID || b.Attributes() != 0 || b.WriterID() != tt.h.WriterID ||
				b.BatchSequence() != tt.h.BatchSequence || b.RecordCount() != 1 {
				t.Fatalf("header: len %d magic %d crc %08x schema %d attrs %d writer %d seq %d count %d",
					b.Length(), b.Magic(), b.CRC(), b.SchemaID(), b.Attributes(), b.WriterID(),
					b.BatchSequence(), b.RecordCount())
			}
			it := b.Records()
			key, gotRow, ok := it.Next()
			if !ok || !bytes.Equal(key, tt.key) || !bytes.Equal(gotRow, tt.row) || (tt.row == nil) != (gotRow == nil) {
				t.Fatalf("record: ok=%v key=%x row=%x", ok, key, gotRow)
			}
			if _, _, ok := it.Next(); ok || it.Err() != nil {
				t.Fatalf("after last: ok=%v err=%v", ok, it.Err())
			}
			if got := AppendKvBatch(nil, tt.h, tt.records...); !bytes.Equal(got, raw) {
				t.Fatalf("AppendKvBatch\n got %x\nwant %x", got, raw)
			}
		})
	}
}

func TestKvRoundTrip(t *testing.T) {
	long := bytes.Repeat([]byte{0xab}, 300) // two-byte key length varint
	recs := []KvRecord{
		{Key: []byte("k1"), Row: []byte("row-1")},
		{Key: []byte("k2")},                    // delete
		{Key: long, Row: []byte{0}},            // one-byte row
		{Key: []byte{}, Row: []byte("no key")}, // empty key is structurally fine
		{Key: []byte("k3"), Row: []byte{}},     // empty row is a delete
	}
	h := KvHeader{SchemaID: 3, WriterID: 42, BatchSequence: 9}
	buf := AppendKvBatch([]byte("xx"), h, recs...)
	b, err := ParseKvBatch(buf[2:])
	if err != nil {
		t.Fatal(err)
	}
	size := KvHeaderSize
	for _, r := range recs {
		size += KvRecordSize(r.Key, r.Row)
	}
	if len(b) != size {
		t.Fatalf("size %d, KvRecordSize sum %d", len(b), size)
	}
	it := b.Records()
	for i, want := range recs {
		key, row, ok := it.Next()
		if !ok {
			t.Fatalf("record %d: %v", i, it.Err())
		}
		if !bytes.Equal(key, want.Key) || !bytes.Equal(row, want.Row) || (len(want.Row) == 0) != (row == nil) {
			t.Fatalf("record %d: key %q row %q", i, key, row)
		}
	}
	if _, _, ok := it.Next(); ok || it.Err() != nil {
		t.Fatalf("end: %v", it.Err())
	}
	// The key length of the long key is the two-byte varint ac 02.
	if got := buf[2+KvHeaderSize+KvRecordSize(recs[0].Key, recs[0].Row)+KvRecordSize(recs[1].Key, nil)+4:][:2]; !bytes.Equal(got, []byte{0xac, 0x02}) {
		t.Fatalf("varint %x", got)
	}
}

func TestKvValidateErrors(t *testing.T) {
	good := loadHex(t, "kv_upsert.hex")
	// rebuild re-checksums a batch after its records were edited, so the record checks are
	// reached.
	rebuild := func(count int32, records []byte) []byte {
		buf, start := BeginKvBatch(nil)
		buf = append(buf, records...)
		if err := FinishKvBatch(buf[start:], KvHeader{SchemaID: 1, WriterID: -1, BatchSequence: -1}, count); err != nil {
			t.Fatal(err)
		}
		return buf
	}
	rec := good[KvHeaderSize:]
	tests := []struct {
		name string
		in   []byte
		want error
	}{
		{"empty", nil, ErrShortBatch},
		{"header only minus one", good[:KvHeaderSize-1], ErrShortBatch},
		{"truncated", good[:len(good)-1], ErrBadLength},
		{"magic", func() []byte { b := bytes.Clone(good); b[kvOffMagic] = 1; return b }(), ErrBadMagic},
		{"crc", func() []byte { b := bytes.Clone(good); b[len(b)-1] ^= 1; return b }(), ErrCRCMismatch},
		{"negative count", rebuild(-1, nil), ErrRecordCount},
		{"count too high", rebuild(2, rec), ErrBadRecord},
		{"count too low", rebuild(0, rec), ErrTrailingBytes},
		{"zero size", rebuild(1, []byte{0, 0, 0, 0}), ErrBadRecord},
		{"size past end", rebuild(1, []byte{9, 0, 0, 0, 1, 1}), ErrBadRecord},
		{"negative size", rebuild(1, []byte{0xff, 0xff, 0xff, 0xff, 1}), ErrBadRecord},
		{"key past record", rebuild(1, []byte{2, 0, 0, 0, 5, 1}), ErrBadRecord},
		{"unterminated varint", rebuild(1, []byte{2, 0, 0, 0, 0x80, 0x80}), ErrBadRecord},
		{"padded varint", rebuild(1, []byte{3, 0, 0, 0, 0x81, 0x00, 7}), ErrBadRecord},
		{"six-byte varint", rebuild(1, []byte{6, 0, 0, 0, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00}), ErrBadRecord},
		{"varint over 32 bits", rebuild(1, []byte{5, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0x7f}), ErrBadRecord},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseKvBatch(tt.in)
			if !errors.Is(err, tt.want) || ferr.CodeOf(err) != ferr.CorruptRecordException {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestUvarint32(t *testing.T) {
	tests := []struct {
		in   []byte
		v    uint32
		n    int
		fail bool
	}{
		{in: []byte{0}, v: 0, n: 1},
		{in: []byte{0x7f}, v: 127, n: 1},
		{in: []byte{0x80, 0x01}, v: 128, n: 2},
		{in: []byte{0xff, 0xff, 0xff, 0xff, 0x0f}, v: 0xffffffff, n: 5},
		{in: []byte{0x80, 0x00}, fail: true},
		{in: []byte{0x80}, fail: true},
		{in: nil, fail: true},
	}
	for _, tt := range tests {
		v, n := uvarint32(tt.in)
		if tt.fail != (n <= 0) || (!tt.fail && (v != tt.v || n != tt.n)) {
			t.Errorf("uvarint32(%x) = %d, %d", tt.in, v, n)
		}
		if !tt.fail {
			if got := appendUvarint32(nil, tt.v); !bytes.Equal(got, tt.in) || uvarint32Size(tt.v) != len(got) {
				t.Errorf("appendUvarint32(%d) = %x", tt.v, got)
			}
		}
	}
}

func TestKvReaderAllocs(t *testing.T) {
	buf := AppendKvBatch(nil, KvHeader{SchemaID: 1, WriterID: -1, BatchSequence: -1},
		KvRecord{Key: []byte("a"), Row: []byte("b")}, KvRecord{Key: []byte("c")})
	n := testing.AllocsPerRun(100, func() {
		b, err := ParseKvBatch(buf)
		if err != nil {
			panic(err)
		}
		it := b.Records()
		for {
			if _, _, ok := it.Next(); !ok {
				break
			}
		}
	})
	if n != 0 {
		t.Fatalf("%v allocations", n)
	}
	dst := make([]byte, 0, 256)
	if n := testing.AllocsPerRun(100, func() {
		_ = AppendKvBatch(dst[:0], KvHeader{}, KvRecord{Key: []byte("a"), Row: []byte("b")})
	}); n != 0 {
		t.Fatalf("%v allocations", n)
	}
}
