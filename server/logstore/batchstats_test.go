package logstore

import (
	"bytes"
	"os"
	"testing"
)

type statsRec struct {
	base int64
	crc  uint32
	size int32
	blob string
}

func readStats(t *testing.T, l *Log, seg int64) []statsRec {
	t.Helper()
	var out []statsRec
	if err := l.BatchStats().Read(seg, func(base int64, crc uint32, size int32, blob []byte) {
		out = append(out, statsRec{base, crc, size, string(blob)})
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestBatchStatsSidecar(t *testing.T) {
	dir := t.TempDir()
	l := open(t, dir, Options{SegmentBytes: 1024})
	var bases []int64
	for range 6 {
		r := mustAppend(t, l, 1, plain(2, 300))
		bases = append(bases, r.FirstOffset)
	}
	segs := map[int64][]int64{}
	for _, b := range bases {
		seg, ok := l.SegmentBase(b)
		if !ok {
			t.Fatalf("no segment for %d", b)
		}
		segs[seg] = append(segs[seg], b)
		if err := l.BatchStats().Append(b, uint32(b), int32(b*2), []byte{byte(b), 1, 2}); err != nil {
			t.Fatal(err)
		}
	}
	if len(segs) < 2 {
		t.Fatalf("want several segments, got %v", segs)
	}
	for seg, want := range segs {
		got := readStats(t, l, seg)
		if len(got) != len(want) {
			t.Fatalf("segment %d: %v, want bases %v", seg, got, want)
		}
		for i, r := range got {
			if r.base != want[i] || r.crc != uint32(want[i]) || r.size != int32(want[i]*2) || r.blob != string([]byte{byte(want[i]), 1, 2}) {
				t.Errorf("segment %d record %d: %+v", seg, i, r)
			}
		}
	}
	// A torn tail ends the records; what precedes it is kept.
	first := bases[0]
	seg0, _ := l.SegmentBase(first)
	path := fileName(dir, seg0, batchStatsSuffix)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, append(bytes.Clone(data), 0x30, 1, 2), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := readStats(t, l, seg0); len(got) != len(segs[seg0]) {
		t.Errorf("torn tail: %d records, want %d", len(got), len(segs[seg0]))
	}
	if cut, _ := os.ReadFile(path); !bytes.Equal(cut, data) {
		t.Errorf("torn tail not cut: %d bytes, want %d", len(cut), len(data))
	}
	// Missing: no records, no error.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if got := readStats(t, l, seg0); len(got) != 0 {
		t.Errorf("missing sidecar: %v", got)
	}
	// Removed with its segment.
	last, _ := l.SegmentBase(bases[len(bases)-1])
	if err := l.Replica().Truncate(l.LogEndOffset()); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.BatchStats().Append(bases[0], 0, 0, nil); err == nil {
		t.Error("append after Close accepted")
	}
	if _, err := os.Stat(fileName(dir, last, batchStatsSuffix)); err != nil {
		t.Errorf("sidecar of a kept segment: %v", err)
	}
}

func TestBatchStatsSidecarGoesWithItsSegment(t *testing.T) {
	dir := t.TempDir()
	l := open(t, dir, Options{SegmentBytes: 1024})
	defer l.Close()
	r := mustAppend(t, l, 1, plain(2, 300))
	seg, _ := l.SegmentBase(r.FirstOffset)
	if err := l.BatchStats().Append(r.FirstOffset, 1, 1, []byte("x")); err != nil {
		t.Fatal(err)
	}
	s := l.v.Load().segs[0]
	if s.base != seg {
		t.Fatalf("first segment %d, sidecar of %d", s.base, seg)
	}
	if err := s.removeFiles(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(fileName(dir, seg, batchStatsSuffix)); !os.IsNotExist(err) {
		t.Errorf("sidecar left after its segment's files were removed: %v", err)
	}
}
