package logstore

import (
	"math"
	"testing"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/record"
)

// TestRecordSequencedWriter checks Kafka's sequence rule for a writer id carrying
// record.RecordSequencedWriter: a batch's sequence is the previous one's plus its record
// count; a retry of one of the last five is a duplicate with the original offsets; a gap or a
// batch-counted sequence is out of order. The state survives a crash and reaches a follower,
// which applies the same rule once promoted (a Kafka producer's retry after a failover).
func TestRecordSequencedWriter(t *testing.T) {
	const w = record.RecordSequencedWriter | 7
	dir := t.TempDir()
	l := open(t, dir, Options{})
	if _, err := l.Append([]record.Batch{batch(w, 1, 1, 8)}, 100); ferr.CodeOf(err) != ferr.OutOfOrderSequenceException {
		t.Fatalf("first batch at sequence 1: %v, want OUT_OF_ORDER_SEQUENCE_EXCEPTION", err)
	}
	mustAppend(t, l, 100, batch(w, 0, 3, 8)) // offsets 0-2, sequences 0-2
	if _, err := l.Append([]record.Batch{batch(w, 1, 1, 8)}, 100); ferr.CodeOf(err) != ferr.OutOfOrderSequenceException {
		t.Fatalf("batch-counted next sequence: %v, want OUT_OF_ORDER_SEQUENCE_EXCEPTION", err)
	}
	if r := mustAppend(t, l, 100, batch(w, 3, 2, 8)); r.FirstOffset != 3 || r.Duplicate {
		t.Fatalf("second batch: %+v", r)
	}
	if r := mustAppend(t, l, 100, batch(w, 0, 3, 8)); !r.Duplicate || r.FirstOffset != 0 || r.LastOffset != 2 {
		t.Fatalf("retry of the first batch: %+v, want the duplicate at 0-2", r)
	}
	if _, err := l.Append([]record.Batch{batch(w, 6, 1, 8)}, 100); ferr.CodeOf(err) != ferr.OutOfOrderSequenceException {
		t.Fatalf("gap: %v, want OUT_OF_ORDER_SEQUENCE_EXCEPTION", err)
	}
	mustAppend(t, l, 100, batch(w, 5, 4, 8)) // offsets 5-8
	crash(l)

	l = open(t, dir, Options{})
	defer l.Close()
	if r := mustAppend(t, l, 200, batch(w, 5, 4, 8)); !r.Duplicate || r.FirstOffset != 5 {
		t.Fatalf("retry after a crash: %+v, want the duplicate at 5", r)
	}
	if r := mustAppend(t, l, 200, batch(w, 9, 1, 8)); r.Duplicate || r.FirstOffset != 9 {
		t.Fatalf("next batch after a crash: %+v", r)
	}

	// A follower fed the leader's batches knows the writer as well.
	res, err := l.Read(0, 1<<20, false)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := res.AppendTo(nil)
	res.Release()
	if err != nil {
		t.Fatal(err)
	}
	var fetched []record.Batch
	rd := record.NewBatchReader(raw)
	for b, ok := rd.Next(); ok; b, ok = rd.Next() {
		fetched = append(fetched, b)
	}
	f := open(t, t.TempDir(), Options{})
	defer f.Close()
	if _, err := f.Replica().AppendAsFollower(fetched); err != nil {
		t.Fatal(err)
	}
	if r := mustAppend(t, f, 300, batch(w, 9, 1, 8)); !r.Duplicate || r.FirstOffset != 9 {
		t.Fatalf("retry on the promoted follower: %+v, want the duplicate at 9", r)
	}
	if _, err := f.Append([]record.Batch{batch(w, 11, 1, 8)}, 300); ferr.CodeOf(err) != ferr.OutOfOrderSequenceException {
		t.Fatalf("gap on the promoted follower: %v", err)
	}
	mustAppend(t, f, 300, batch(w, 10, 1, 8))
}

func TestNextRecordSequenceWraps(t *testing.T) {
	for _, c := range []struct {
		seq   int32
		count int64
		want  int32
	}{{0, 1, 1}, {5, 10, 15}, {math.MaxInt32, 1, 0}, {math.MaxInt32 - 1, 3, 1}} {
		if got := record.NextRecordSequence(c.seq, c.count); got != c.want {
			t.Errorf("NextRecordSequence(%d, %d) = %d, want %d", c.seq, c.count, got, c.want)
		}
	}
	if record.IsRecordSequenced(record.NoWriterID) || record.IsRecordSequenced(42) || !record.IsRecordSequenced(record.RecordSequencedWriter|42) {
		t.Fatal("IsRecordSequenced is wrong")
	}
}
