package record

import (
	"bytes"
	"errors"
	"testing"

	"github.com/stromdb/strom/internal/ferr"
)

// The CRC-32C check value from the Castagnoli specification (RFC 3720 B.4 style), so our
// table is not only self-consistent.
func TestChecksumKnownAnswer(t *testing.T) {
	if got := Checksum([]byte("123456789")); got != 0xE3069283 {
		t.Fatalf("crc32c(123456789) = %08x, want e3069283", got)
	}
}

type headerWant struct {
	magic                      byte
	length                     int
	crc                        uint32
	schemaID                   int16
	attrs                      byte
	appendOnly                 bool
	lastOffsetDelta, count     int32
	writerID                   int64
	seq                        int32
	recordsOffset, recordsSize int
}

func TestAppendixABatchHeaders(t *testing.T) {
	tests := []struct {
		file string
		want headerWant
	}{
		{"v0_arrow_batch.hex", headerWant{0, 368, 0x8eb9efcb, 1, 1, true, 1, 2, -1, -1, 48, 320}},
		{"v0_arrow_changelog_batch.hex", headerWant{0, 354, 0x2be8df1f, 1, 0, false, 1, 2, -1, -1, 48, 306}},
		{"v0_indexed_batch.hex", headerWant{0, 75, 0x80073b0a, 1, 1, true, 0, 1, -1, -1, 48, 27}},
		{"v0_empty_cdc_batch.hex", headerWant{0, 48, 0x3c6802ac, 1, 0, false, 0, 0, 7, 3, 48, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			raw := loadHex(t, tt.file)
			b, rest, ok := Split(raw)
			if !ok || len(rest) != 0 {
				t.Fatalf("Split: ok=%v rest=%d", ok, len(rest))
			}
			if err := b.Validate(); err != nil {
				t.Fatalf("Validate: %v", err)
			}
			w := tt.want
			got := headerWant{b.Magic(), b.SizeInBytes(), b.CRC(), b.SchemaID(), b.Attributes(),
				b.AppendOnly(), b.LastOffsetDelta(), b.RecordCount(), b.WriterID(), b.BatchSequence(),
				b.RecordsOffset(), len(b.Records())}
			if got != w {
				t.Fatalf("header\n got %+v\nwant %+v", got, w)
			}
			if b.BaseOffset() != 0 || b.CommitTimestamp() != 0 || b.LeaderEpoch() != NoLeaderEpoch {
				t.Fatalf("base %d ts %d epoch %d", b.BaseOffset(), b.CommitTimestamp(), b.LeaderEpoch())
			}
			if b.HeaderSize() != HeaderSizeV0 || b.StatisticsLength() != 0 || b.Statistics() != nil {
				t.Fatalf("header size %d stats %d", b.HeaderSize(), b.StatisticsLength())
			}
			if b.NextOffset() != int64(w.lastOffsetDelta)+1 {
				t.Fatalf("NextOffset %d", b.NextOffset())
			}
		})
	}
}

// AppendV0Batch must rebuild each Appendix A batch byte for byte from its header fields and
// records section.
func TestAppendV0BatchMatchesAppendixA(t *testing.T) {
	for _, file := range []string{"v0_arrow_batch.hex", "v0_arrow_changelog_batch.hex",
		"v0_indexed_batch.hex", "v0_empty_cdc_batch.hex"} {
		t.Run(file, func(t *testing.T) {
			want := Batch(loadHex(t, file))
			h := V0Header{want.SchemaID(), want.AppendOnly(), want.WriterID(), want.BatchSequence(), want.RecordCount()}
			prefix := []byte("prefix")
			got := AppendV0Batch(bytes.Clone(prefix), h, want.Records())
			if !bytes.HasPrefix(got, prefix) || !bytes.Equal(got[len(prefix):], want) {
				t.Fatalf("AppendV0Batch\n got %x\nwant %x", got[len(prefix):], []byte(want))
			}
			// The in-place builder produces the same bytes.
			buf, start := BeginV0Batch(nil)
			buf = append(buf, want.Records()...)
			if err := FinishV0Batch(buf[start:], h); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(buf, want) {
				t.Fatalf("Begin/FinishV0Batch\n got %x\nwant %x", buf, []byte(want))
			}
		})
	}
}

func TestPatchOutsideCRC(t *testing.T) {
	b := Batch(loadHex(t, "v0_arrow_batch.hex"))
	b.SetBaseOffset(1 << 40)
	b.SetCommitTimestamp(1_700_000_000_123)
	if err := b.Validate(); err != nil {
		t.Fatalf("patched batch: %v", err)
	}
	if b.BaseOffset() != 1<<40 || b.CommitTimestamp() != 1_700_000_000_123 {
		t.Fatalf("got %d %d", b.BaseOffset(), b.CommitTimestamp())
	}
	if b.LastOffset() != 1<<40+1 || b.NextOffset() != 1<<40+2 {
		t.Fatalf("last %d next %d", b.LastOffset(), b.NextOffset())
	}
}

// Every byte the CRC covers is checked: flipping any of them is caught, while flipping the
// uncovered BaseOffset/CommitTimestamp bytes is not.
func TestValidateCRCCoverage(t *testing.T) {
	orig := loadHex(t, "v0_indexed_batch.hex")
	for i := range orig {
		b := Batch(bytes.Clone(orig))
		b[i] ^= 0x40
		err := b.Validate()
		switch {
		case i < offLength || (i >= offCommitTimestamp && i < layoutV0.crc):
			if err != nil {
				t.Errorf("byte %d is outside the CRC but Validate says %v", i, err)
			}
		case err == nil:
			t.Errorf("flipping byte %d went unnoticed", i)
		case ferr.CodeOf(err) != ferr.CorruptRecordException:
			t.Errorf("byte %d: code %v, want CORRUPT_RECORD_EXCEPTION", i, ferr.CodeOf(err))
		}
	}
}

func TestValidateErrors(t *testing.T) {
	good := loadHex(t, "v0_empty_cdc_batch.hex")
	mut := func(f func(b []byte) []byte) []byte { return f(bytes.Clone(good)) }
	tests := []struct {
		name string
		in   []byte
		want error
	}{
		{"empty", nil, ErrShortBatch},
		{"12 bytes", good[:12], ErrShortBatch},
		{"truncated", good[:40], ErrBadLength},
		{"extra byte", append(bytes.Clone(good), 0), ErrBadLength},
		{"magic 3", mut(func(b []byte) []byte { b[offMagic] = 3; return b }), ErrBadMagic},
		{"header too short", mut(func(b []byte) []byte {
			b = b[:40]
			b[offLength] = 28
			return b
		}), ErrShortBatch},
		{"crc", mut(func(b []byte) []byte { b[layoutV0.crc] ^= 1; return b }), ErrCRCMismatch},
		{"negative count", mut(func(b []byte) []byte {
			b[layoutV0.recordCount+3] = 0x80
			return b
		}), ErrRecordCount},
		{"delta without records", mut(func(b []byte) []byte {
			b[layoutV0.lastOffsetDelta] = 1
			return b
		}), ErrRecordCount},
		// V1 header whose statistics length runs past the end.
		{"stats overrun", func() []byte {
			b, _ := AppendBatch(nil, MagicV1, V0Header{SchemaID: 1}, []byte{1, 2, 3}, nil)
			b[HeaderSizeV1-4] = 4
			return b
		}(), ErrBadLength},
		{"stats negative", func() []byte {
			b, _ := AppendBatch(nil, MagicV2, V0Header{SchemaID: 1}, nil, nil)
			b[HeaderSizeV2-1] = 0xff
			return b
		}(), ErrBadLength},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Batch(tt.in).Validate()
			if !errors.Is(err, tt.want) {
				t.Fatalf("Validate = %v, want %v", err, tt.want)
			}
			if ferr.CodeOf(err) != ferr.CorruptRecordException {
				t.Fatalf("code %v", ferr.CodeOf(err))
			}
		})
	}
}

// Java's LogRecordBatchFormat offsets, written out so a slip in the layout table shows.
func TestLayoutsMatchJava(t *testing.T) {
	want := map[byte]layout{
		MagicV0: {crc: 21, schemaID: 25, attributes: 27, lastOffsetDelta: 28, writerID: 32, batchSeq: 40, recordCount: 44, header: 48},
		MagicV1: {crc: 21, schemaID: 25, attributes: 27, lastOffsetDelta: 28, writerID: 32, batchSeq: 40, recordCount: 44, header: 52},
		MagicV2: {crc: 25, schemaID: 29, attributes: 31, lastOffsetDelta: 32, writerID: 36, batchSeq: 44, recordCount: 48, header: 56},
	}
	for m, w := range want {
		b := make(Batch, 64)
		b[offMagic] = m
		if got := b.layout(); got != w {
			t.Errorf("magic %d: %+v, want %+v", m, got, w)
		}
	}
}

func TestSplit(t *testing.T) {
	a := loadHex(t, "v0_indexed_batch.hex")
	e := loadHex(t, "v0_empty_cdc_batch.hex")
	buf := append(bytes.Clone(a), e...)
	b, rest, ok := Split(buf)
	if !ok || !bytes.Equal(b, a) || !bytes.Equal(rest, e) {
		t.Fatalf("first split ok=%v", ok)
	}
	if cap(b) != len(b) {
		t.Fatalf("batch capacity %d leaks into the next batch", cap(b))
	}
	if _, _, ok := Split(e[:47]); ok {
		t.Fatal("torn batch split ok")
	}
	neg := bytes.Clone(e)
	neg[offLength+3] = 0xff
	if _, _, ok := Split(neg); ok {
		t.Fatal("negative length split ok")
	}
}
