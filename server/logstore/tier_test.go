package logstore

import (
	"bytes"
	"encoding/binary"
	"io"
	"testing"
)

// tierLog builds a log of 40 one-record batches of ~200 bytes over 1 KiB segments (about ten
// segments of four batches each).
func tierLog(t *testing.T) *Log {
	l := open(t, t.TempDir(), Options{SegmentBytes: 1024, IndexIntervalBytes: 1})
	t.Cleanup(func() { l.Close() })
	for i := range 40 {
		mustAppend(t, l, int64(1000+i), plain(1, 200))
	}
	return l
}

func TestTierCandidatesAreSealedAndBelowTheHW(t *testing.T) {
	l := tierLog(t)
	cands, err := l.Tiering().TierCandidates(0)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		for _, c := range cands {
			c.Release()
		}
	}()
	segs := l.v.Load().segs
	if len(cands) != len(segs)-1 || len(cands) < 5 {
		t.Fatalf("%d candidates for %d segments", len(cands), len(segs))
	}
	for i, c := range cands {
		if c.Base != segs[i].base || c.End != segs[i+1].base {
			t.Fatalf("candidate %d [%d, %d), segment [%d, %d)", i, c.Base, c.End, segs[i].base, segs[i+1].base)
		}
		data, _ := io.ReadAll(c.LogData())
		want, err := l.ReadBatches(c.Base, int(c.Size))
		if err != nil || !bytes.Equal(data, want) || int64(len(data)) != c.Size {
			t.Fatalf("candidate %d: %d bytes, read %d (%v)", i, len(data), len(want), err)
		}
	}
	// A segment straddling from is returned from the batch holding from, with its index
	// rebased to that batch.
	s := cands[2]
	from := s.Base + 2
	part, err := l.Tiering().TierCandidates(from)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		for _, c := range part {
			c.Release()
		}
	}()
	p := part[0]
	if p.Base != from || p.End != s.End || len(part) != len(cands)-2 {
		t.Fatalf("from %d: first candidate [%d, %d), %d candidates", from, p.Base, p.End, len(part))
	}
	data, _ := io.ReadAll(p.LogData())
	want, _ := l.ReadBatches(from, int(p.Size))
	if !bytes.Equal(data, want) {
		t.Fatal("partial candidate's bytes differ from the log's")
	}
	offs, _ := p.Indexes()
	for i := 0; i+8 <= len(offs); i += 8 {
		rel, pos := binary.LittleEndian.Uint32(offs[i:]), binary.LittleEndian.Uint32(offs[i+4:])
		b, _, ok := splitAt(data, int(pos))
		if !ok || b != from+int64(rel) {
			t.Fatalf("rebased index entry {%d, %d}: batch %d there", rel, pos, b)
		}
	}
	if len(offs) == 0 {
		t.Fatal("rebased index is empty")
	}
	// Nothing at or above the HW is a candidate.
	if c, _ := l.Tiering().TierCandidates(l.LogEndOffset()); len(c) != 0 {
		t.Fatalf("%d candidates from the LEO", len(c))
	}
}

func splitAt(data []byte, pos int) (int64, int, bool) {
	if pos+8 > len(data) {
		return 0, 0, false
	}
	return int64(binary.LittleEndian.Uint64(data[pos:])), pos, true
}

func TestDeleteTieredSegmentsKeepsUncommittedAndFloors(t *testing.T) {
	l := tierLog(t)
	segs := l.v.Load().segs
	// Committed up to the middle of segment 3: segments 0..2 may go.
	n, err := l.Tiering().DeleteTieredSegments(segs[3].base+1, 1)
	if err != nil || n != 3 || l.LogStartOffset() != segs[3].base {
		t.Fatalf("deleted %d (%v), log start %d, want 3 and %d", n, err, l.LogStartOffset(), segs[3].base)
	}
	// The retention floor holds the rest back.
	floor := segs[5].base
	l.Retention().SetRetentionFloor(func() int64 { return floor })
	if n, _ := l.Tiering().DeleteTieredSegments(l.LogEndOffset(), 1); n != 2 || l.LogStartOffset() != segs[5].base {
		t.Fatalf("deleted %d past the floor: log start %d", n, l.LogStartOffset())
	}
	floor = l.LogEndOffset()
	// keep counts the active segment: keep 2 leaves one sealed segment.
	if _, err := l.Tiering().DeleteTieredSegments(l.LogEndOffset(), 2); err != nil {
		t.Fatal(err)
	}
	if k := len(l.v.Load().segs); k != 2 {
		t.Fatalf("%d segments left, want 2", k)
	}
	if got := readAll(t, l, l.LogStartOffset()); len(got) == 0 {
		t.Fatal("nothing readable after deletion")
	}
}
