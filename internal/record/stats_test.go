package record

import (
	"bytes"
	"errors"
	"testing"

	"github.com/stromdb/strom/internal/ferr"
)

// Vectors built by a separate Python script from Java's LogRecordBatchFormat and
// LogRecordBatchStatisticsWriter layouts, with its own bitwise CRC-32C: a V1 and a V2 batch
// (schema 1, append-only, writer -1, seq -1, one record) carrying the same 28-byte statistics
// block (columns 0 and 2, null counts 0 and 1, min row 0a0b0c, max row 0d0e) and the records
// section 0200000001aa, and the V0 batch both must down-convert to.
const (
	statsHex = "01 0200 0000 0200 00000000 01000000 03000000 0a0b0c 02000000 0d0e"
	v1Hex    = "0000000000000000 4a000000 01 0000000000000000 3131f404 0100 01 00000000" +
		"ffffffffffffffff ffffffff 01000000 1c000000" + statsHex + "0200000001aa"
	v2Hex = "0000000000000000 4e000000 02 0000000000000000 ffffffff 3131f404 0100 01 00000000" +
		"ffffffffffffffff ffffffff 01000000 1c000000" + statsHex + "0200000001aa"
	v0FromStatsHex = "0000000000000000 2a000000 00 0000000000000000 3d260b5a 0100 01 00000000" +
		"ffffffffffffffff ffffffff 01000000 0200000001aa"
)

func TestStatisticsBatches(t *testing.T) {
	stats := mustHex(t, statsHex)
	recs := mustHex(t, "0200000001aa")
	h := V0Header{SchemaID: 1, AppendOnly: true, WriterID: -1, BatchSequence: -1, RecordCount: 1}
	tests := []struct {
		magic  byte
		hex    string
		header int
		epoch  int32
	}{
		{MagicV1, v1Hex, HeaderSizeV1, NoLeaderEpoch},
		{MagicV2, v2Hex, HeaderSizeV2, NoLeaderEpoch},
	}
	for _, tt := range tests {
		want := mustHex(t, tt.hex)
		got, err := AppendBatch(nil, tt.magic, h, stats, recs)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("magic %d: AppendBatch %v\n got %x\nwant %x", tt.magic, err, got, want)
		}
		b := Batch(want)
		if err := b.Validate(); err != nil {
			t.Fatalf("magic %d: %v", tt.magic, err)
		}
		if b.HeaderSize() != tt.header || b.StatisticsLength() != len(stats) ||
			!bytes.Equal(b.Statistics(), stats) || !bytes.Equal(b.Records(), recs) ||
			b.RecordsOffset() != tt.header+len(stats) || b.LeaderEpoch() != tt.epoch ||
			b.SchemaID() != 1 || !b.AppendOnly() || b.RecordCount() != 1 || b.CRC() != 0x04f43131 {
			t.Fatalf("magic %d: accessors", tt.magic)
		}
		s, err := ParseStatistics(b.Statistics())
		if err != nil {
			t.Fatal(err)
		}
		if s.ColumnCount() != 2 || s.ColumnIndex(0) != 0 || s.ColumnIndex(1) != 2 ||
			s.NullCount(0) != 0 || s.NullCount(1) != 1 || s.Size() != len(stats) ||
			!bytes.Equal(s.MinValues(), []byte{0xa, 0xb, 0xc}) || !bytes.Equal(s.MaxValues(), []byte{0xd, 0xe}) {
			t.Fatalf("statistics %+v", s)
		}
		rebuilt, err := AppendStatistics(nil, []int16{0, 2}, []int32{0, 1}, []byte{0xa, 0xb, 0xc}, []byte{0xd, 0xe})
		if err != nil || !bytes.Equal(rebuilt, stats) {
			t.Fatalf("AppendStatistics %x %v", rebuilt, err)
		}
	}
}

func TestAppendAsV0(t *testing.T) {
	wantV0 := mustHex(t, v0FromStatsHex)
	for _, src := range []string{v1Hex, v2Hex, v0FromStatsHex} {
		b := Batch(mustHex(t, src))
		got, err := AppendAsV0([]byte{9}, b)
		if err != nil || got[0] != 9 || !bytes.Equal(got[1:], wantV0) {
			t.Fatalf("AppendAsV0(magic %d) %v\n got %x\nwant %x", b.Magic(), err, got[1:], wantV0)
		}
		// The offsets and timestamp the log assigned survive the conversion.
		b.SetBaseOffset(77)
		b.SetCommitTimestamp(1234)
		got, err = AppendAsV0(nil, b)
		if err != nil {
			t.Fatal(err)
		}
		v0 := Batch(got)
		if v0.Validate() != nil || v0.BaseOffset() != 77 || v0.CommitTimestamp() != 1234 || v0.NextOffset() != 78 {
			t.Fatalf("patched: %v base %d ts %d", v0.Validate(), v0.BaseOffset(), v0.CommitTimestamp())
		}
	}
	// A changelog batch keeps its attributes, writer state and change-type vector.
	h := V0Header{SchemaID: 4, WriterID: 11, BatchSequence: 6, RecordCount: 2}
	recs := []byte{1, 4, 0xff, 0xff, 0xff, 0xff}
	v1, err := AppendBatch(nil, MagicV1, h, mustHex(t, statsHex), recs)
	if err != nil {
		t.Fatal(err)
	}
	got, err := AppendAsV0(nil, Batch(v1))
	if err != nil || !bytes.Equal(got, AppendV0Batch(nil, h, recs)) {
		t.Fatalf("changelog: %v", err)
	}
	if _, err := AppendAsV0(nil, Batch(v1[:60])); !errors.Is(err, ErrBadLength) {
		t.Fatalf("torn: %v", err)
	}
}

func TestParseStatisticsErrors(t *testing.T) {
	good := mustHex(t, statsHex)
	edit := func(i int, v byte) []byte { b := bytes.Clone(good); b[i] = v; return b }
	tests := []struct {
		name string
		in   []byte
	}{
		{"empty", nil},
		{"version", edit(0, 2)},
		{"zero columns", edit(1, 0)},
		{"negative columns", edit(2, 0x80)},
		{"columns past end", edit(1, 9)},
		{"min past end", edit(3+12, 40)},
		{"min negative", edit(3+12+3, 0x80)},
		{"max past end", edit(3+12+4+3, 3)},
		{"truncated", good[:len(good)-1]},
	}
	for _, tt := range tests {
		if _, err := ParseStatistics(tt.in); !errors.Is(err, ErrBadStatistics) || ferr.CodeOf(err) != ferr.CorruptRecordException {
			t.Errorf("%s: %v", tt.name, err)
		}
	}
	if s, err := ParseStatistics(append(bytes.Clone(good), 0, 0)); err != nil || s.Size() != len(good) {
		t.Fatalf("trailing bytes: %v", err)
	}
	if _, err := AppendStatistics(nil, nil, nil, nil, nil); err == nil {
		t.Fatal("empty statistics accepted")
	}
	if _, err := AppendBatch(nil, MagicV0, V0Header{}, []byte{1}, nil); err == nil {
		t.Fatal("V0 with statistics accepted")
	}
	if _, err := AppendBatch(nil, 3, V0Header{}, nil, nil); !errors.Is(err, ErrBadMagic) {
		t.Fatal(err)
	}
}
