package record

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/stromdb/strom/internal/ferr"
)

func TestChangeTypeStrings(t *testing.T) {
	tests := []struct {
		c           ChangeType
		short, name string
	}{
		{AppendOnly, "+A", "APPEND_ONLY"},
		{Insert, "+I", "INSERT"},
		{UpdateBefore, "-U", "UPDATE_BEFORE"},
		{UpdateAfter, "+U", "UPDATE_AFTER"},
		{Delete, "-D", "DELETE"},
	}
	for i, tt := range tests {
		if byte(tt.c) != byte(i) || tt.c.ShortString() != tt.short || tt.c.String() != tt.name || !tt.c.Valid() {
			t.Errorf("%d: %q %q", tt.c, tt.c.ShortString(), tt.c)
		}
		if c, err := ParseChangeType(byte(i)); err != nil || c != tt.c {
			t.Errorf("ParseChangeType(%d) = %v, %v", i, c, err)
		}
	}
	if _, err := ParseChangeType(5); !errors.Is(err, ErrBadRecord) {
		t.Fatalf("ParseChangeType(5) = %v", err)
	}
	if ChangeType(9).Valid() || ChangeType(9).ShortString() != "?9" {
		t.Fatal("ChangeType(9)")
	}
}

// The Appendix A INDEXED batch holds one +A record whose row is an IndexedRow of (1,'alice',30).
func TestRowLogAppendixA(t *testing.T) {
	b := Batch(loadHex(t, "v0_indexed_batch.hex"))
	wantRecord := loadHex(t, "indexed_log_record.hex")
	if !bytes.Equal(b.Records(), wantRecord) {
		t.Fatalf("records section %x", b.Records())
	}
	wantRow := wantRecord[5:]
	r := b.RowLogRecords()
	ct, row, ok := r.Next()
	if !ok || ct != AppendOnly || !bytes.Equal(row, wantRow) {
		t.Fatalf("ok=%v ct=%v row=%x err=%v", ok, ct, row, r.Err())
	}
	if _, _, ok := r.Next(); ok || r.Err() != nil {
		t.Fatalf("after last: %v", r.Err())
	}
	if got := AppendRowLogRecord(nil, AppendOnly, wantRow); !bytes.Equal(got, wantRecord) {
		t.Fatalf("AppendRowLogRecord %x", got)
	}
	if RowLogRecordSize(wantRow) != len(wantRecord) {
		t.Fatal("RowLogRecordSize")
	}
}

// Build a server-style changelog batch in place and read it back.
func TestRowLogChangelogRoundTrip(t *testing.T) {
	type rec struct {
		ct  ChangeType
		row []byte
	}
	recs := []rec{{Insert, []byte("a")}, {UpdateBefore, []byte("a")}, {UpdateAfter, []byte("bb")},
		{Delete, []byte("bb")}, {Insert, nil}}
	buf, start := BeginV0Batch([]byte("head"))
	for _, r := range recs {
		buf = AppendRowLogRecord(buf, r.ct, r.row)
	}
	h := V0Header{SchemaID: 2, WriterID: 5, BatchSequence: 1, RecordCount: int32(len(recs))}
	if err := FinishV0Batch(buf[start:], h); err != nil {
		t.Fatal(err)
	}
	n, err := ValidateAll(buf[start:])
	if err != nil || n != 1 {
		t.Fatalf("ValidateAll: %d %v", n, err)
	}
	b := Batch(buf[start:])
	if b.AppendOnly() || b.LastOffsetDelta() != 4 {
		t.Fatalf("attrs %d delta %d", b.Attributes(), b.LastOffsetDelta())
	}
	if err := ValidateRowLogRecords(b.Records(), b.RecordCount()); err != nil {
		t.Fatal(err)
	}
	r := b.RowLogRecords()
	for i, want := range recs {
		ct, row, ok := r.Next()
		if !ok || ct != want.ct || !bytes.Equal(row, want.row) {
			t.Fatalf("record %d: %v %q %v", i, ct, row, r.Err())
		}
	}
	if _, _, ok := r.Next(); ok || r.Err() != nil {
		t.Fatal(r.Err())
	}
}

func TestRowLogErrors(t *testing.T) {
	one := AppendRowLogRecord(nil, Insert, []byte("xyz"))
	tests := []struct {
		name  string
		recs  []byte
		count int32
		want  error
	}{
		{"negative count", nil, -1, ErrRecordCount},
		{"missing record", nil, 1, ErrBadRecord},
		{"extra record", append(bytes.Clone(one), one...), 1, ErrTrailingBytes},
		{"short header", one[:4], 1, ErrBadRecord},
		{"size zero", []byte{0, 0, 0, 0, 1}, 1, ErrBadRecord},
		{"size past end", one[:len(one)-1], 1, ErrBadRecord},
		{"negative size", []byte{0xff, 0xff, 0xff, 0xff, 1}, 1, ErrBadRecord},
		{"bad change type", []byte{1, 0, 0, 0, 5}, 1, ErrBadRecord},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ValidateRowLogRecords(tt.recs, tt.count)
			if !errors.Is(err, tt.want) || ferr.CodeOf(err) != ferr.CorruptRecordException {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
		})
	}
	if err := ValidateRowLogRecords(nil, 0); err != nil {
		t.Fatalf("empty: %v", err)
	}
}

func TestArrowBody(t *testing.T) {
	b := Batch(loadHex(t, "v0_arrow_changelog_batch.hex"))
	cts, ipc, err := b.ArrowBody()
	if err != nil || !bytes.Equal(cts, []byte{byte(Insert), byte(Delete)}) {
		t.Fatalf("change types %x err %v", cts, err)
	}
	if !bytes.HasPrefix(ipc, []byte{0xff, 0xff, 0xff, 0xff}) || ValidateChangeTypes(cts) != nil {
		t.Fatalf("ipc %x", ipc[:8])
	}
	a := Batch(loadHex(t, "v0_arrow_batch.hex"))
	cts, ipc, err = a.ArrowBody()
	if err != nil || cts != nil || len(ipc) != 320 {
		t.Fatalf("append-only: %x %d %v", cts, len(ipc), err)
	}
	e := Batch(loadHex(t, "v0_empty_cdc_batch.hex"))
	if cts, ipc, err := e.ArrowBody(); err != nil || len(cts) != 0 || len(ipc) != 0 {
		t.Fatalf("empty: %x %x %v", cts, ipc, err)
	}
	if err := ValidateChangeTypes([]byte{0, 1, 2, 3, 4, 5}); !errors.Is(err, ErrBadRecord) {
		t.Fatal(err)
	}
	// A change-type vector longer than the records section.
	short := AppendV0Batch(nil, V0Header{RecordCount: 3}, []byte{1, 1})
	if _, _, err := Batch(short).ArrowBody(); !errors.Is(err, ErrBadLength) {
		t.Fatal(err)
	}
}

func TestRowLogReaderAllocs(t *testing.T) {
	var recs []byte
	for i := range 10 {
		recs = AppendRowLogRecord(recs, Insert, fmt.Appendf(nil, "row-%d", i))
	}
	n := testing.AllocsPerRun(100, func() {
		r := NewRowLogReader(recs, 10)
		for {
			if _, _, ok := r.Next(); !ok {
				break
			}
		}
		if r.Err() != nil {
			panic(r.Err())
		}
	})
	if n != 0 {
		t.Fatalf("%v allocations", n)
	}
	dst := make([]byte, 0, 1024)
	if n := testing.AllocsPerRun(100, func() {
		d, start := BeginV0Batch(dst[:0])
		d = AppendRowLogRecord(d, Insert, recs[5:9])
		_ = FinishV0Batch(d[start:], V0Header{RecordCount: 1})
	}); n != 0 {
		t.Fatalf("builder: %v allocations", n)
	}
}
