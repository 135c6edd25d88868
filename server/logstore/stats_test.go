package logstore

import "testing"

func TestStatsCountSegmentsBytesAndWriters(t *testing.T) {
	l := open(t, t.TempDir(), Options{SegmentBytes: 1024})
	defer l.Close()
	if st := l.Stats(); st.Segments != 1 || st.Bytes != 0 || st.Writers != 0 {
		t.Fatalf("empty log: %+v", st)
	}
	var total int64
	for i := range int32(6) {
		b := batch(7, i, 1, 400) // one idempotent writer, in sequence
		total += int64(len(b))
		mustAppend(t, l, 1000, b)
	}
	b := batch(8, 0, 1, 10)
	total += int64(len(b))
	mustAppend(t, l, 1000, b)
	st := l.Stats()
	if st.Bytes != total {
		t.Errorf("Bytes = %d, want %d", st.Bytes, total)
	}
	if st.Segments < 2 {
		t.Errorf("Segments = %d, want several after %d bytes with 1 KiB segments", st.Segments, total)
	}
	if st.Writers != 2 {
		t.Errorf("Writers = %d, want 2", st.Writers)
	}
}
