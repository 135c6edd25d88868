package record

import (
	"bytes"
	"errors"
	"path/filepath"
	"testing"

	"github.com/stromdb/strom/internal/ferr"
)

// addHexSeeds adds every Appendix A vector as a seed.
func addHexSeeds(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.hex"))
	for _, p := range files {
		f.Add(loadHex(f, filepath.Base(p)))
	}
}

// checkCorrupt fails unless err is nil or maps to CORRUPT_RECORD_EXCEPTION.
func checkCorrupt(t *testing.T, err error) {
	t.Helper()
	if err != nil && ferr.CodeOf(err) != ferr.CorruptRecordException {
		t.Fatalf("error without CORRUPT_RECORD code: %v", err)
	}
}

// FuzzValidate feeds arbitrary payloads to every log-batch decoder. None may panic; every
// error must carry CORRUPT_RECORD; batches the reader yields must be safe for all accessors;
// ValidateAll must agree with validating the batches one by one.
func FuzzValidate(f *testing.F) {
	addHexSeeds(f)
	f.Add(mustHex(f, v1Hex))
	f.Add(mustHex(f, v2Hex))
	f.Add(bytes.Join([][]byte{mustHex(f, v1Hex), mustHex(f, v0FromStatsHex)}, nil))
	f.Fuzz(func(t *testing.T, data []byte) {
		checkCorrupt(t, Batch(data).Validate())
		_, _, _ = Split(data)

		valid, total := 0, 0
		allValid := true
		r := NewBatchReader(data)
		for {
			b, ok := r.Next()
			if !ok {
				break
			}
			total++
			// Every accessor must be safe on a yielded batch.
			_ = b.BaseOffset() + b.CommitTimestamp() + int64(b.LeaderEpoch()) + int64(b.CRC()) +
				int64(b.SchemaID()) + int64(b.Attributes()) + b.NextOffset() + b.WriterID() +
				int64(b.BatchSequence()) + int64(b.RecordCount()) + int64(len(b.Records())) +
				int64(len(b.Statistics())) + int64(b.HeaderSize())
			_, _, err := b.ArrowBody()
			checkCorrupt(t, err)
			rr := b.RowLogRecords()
			for {
				if _, _, ok := rr.Next(); !ok {
					break
				}
			}
			checkCorrupt(t, rr.Err())
			if s := b.Statistics(); s != nil {
				st, err := ParseStatistics(s)
				checkCorrupt(t, err)
				if err == nil {
					for i := range st.ColumnCount() {
						_ = st.ColumnIndex(i)
						_ = st.NullCount(i)
					}
					_, _ = st.MinValues(), st.MaxValues()
				}
			}
			v0, err := AppendAsV0(nil, b)
			if err != nil {
				t.Fatalf("AppendAsV0 of a yielded batch: %v", err)
			}
			verr := b.Validate()
			checkCorrupt(t, verr)
			if verr == nil {
				valid++
				if err := Batch(v0).Validate(); err != nil {
					t.Fatalf("down-converted valid batch is invalid: %v", err)
				}
			} else {
				allValid = false
			}
		}
		checkCorrupt(t, r.Err())
		for _, err := range Iterate(data) {
			checkCorrupt(t, err)
		}
		n, err := ValidateAll(data)
		checkCorrupt(t, err)
		clean := r.Err() == nil && len(r.Rest()) == 0
		if (err == nil) != (allValid && clean) {
			t.Fatalf("ValidateAll err=%v, but reader saw %d/%d valid, clean=%v", err, valid, total, clean)
		}
		if err == nil && n != total {
			t.Fatalf("ValidateAll n=%d, reader %d", n, total)
		}
	})
}

// FuzzKvBatch checks that the KV decoder never panics, that every error carries
// CORRUPT_RECORD, and that a batch it accepts re-encodes to the same bytes.
func FuzzKvBatch(f *testing.F) {
	f.Add(loadHex(f, "kv_upsert.hex"))
	f.Add(loadHex(f, "kv_delete.hex"))
	f.Add(AppendKvBatch(nil, KvHeader{SchemaID: 2, WriterID: 3, BatchSequence: 4},
		KvRecord{Key: bytes.Repeat([]byte{7}, 200), Row: []byte("r")}, KvRecord{Key: []byte("d")}))
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := ParseKvBatch(data)
		checkCorrupt(t, err)
		if len(data) >= KvHeaderSize {
			it := KvBatch(data).Records()
			for {
				if _, _, ok := it.Next(); !ok {
					break
				}
			}
			checkCorrupt(t, it.Err())
		}
		if err != nil {
			return
		}
		var recs []KvRecord
		it := b.Records()
		for {
			k, r, ok := it.Next()
			if !ok {
				break
			}
			recs = append(recs, KvRecord{Key: k, Row: r})
		}
		if it.Err() != nil {
			t.Fatalf("valid batch fails to iterate: %v", it.Err())
		}
		h := KvHeader{SchemaID: b.SchemaID(), WriterID: b.WriterID(), BatchSequence: b.BatchSequence()}
		// Attributes are not part of KvHeader (no bit is defined), so only attribute-free
		// batches can round-trip.
		if re := AppendKvBatch(nil, h, recs...); b.Attributes() == 0 && !bytes.Equal(re, data) {
			t.Fatalf("re-encoding differs\n got %x\nwant %x", re, data)
		}
	})
}

// FuzzRowLogRecords checks the row record reader: no panics, CORRUPT_RECORD errors, and
// accepted input re-encodes to the same bytes.
func FuzzRowLogRecords(f *testing.F) {
	f.Add(loadHex(f, "indexed_log_record.hex"), int32(1))
	f.Add(AppendRowLogRecord(AppendRowLogRecord(nil, Insert, []byte("a")), Delete, nil), int32(2))
	f.Add([]byte{}, int32(0))
	f.Fuzz(func(t *testing.T, data []byte, count int32) {
		err := ValidateRowLogRecords(data, count)
		checkCorrupt(t, err)
		if err == nil && count < 0 {
			t.Fatal("negative count accepted")
		}
		var re []byte
		r := NewRowLogReader(data, count)
		for {
			ct, row, ok := r.Next()
			if !ok {
				break
			}
			if !ct.Valid() {
				t.Fatalf("invalid change type %d yielded", ct)
			}
			re = AppendRowLogRecord(re, ct, row)
		}
		if (r.Err() == nil) != (err == nil) {
			t.Fatalf("reader err %v, validate err %v", r.Err(), err)
		}
		if err == nil && !bytes.Equal(re, data) {
			t.Fatalf("re-encoding differs")
		}
		if err != nil && !errors.Is(err, ErrBadRecord) && !errors.Is(err, ErrTrailingBytes) && !errors.Is(err, ErrRecordCount) {
			t.Fatalf("unexpected sentinel: %v", err)
		}
	})
}
