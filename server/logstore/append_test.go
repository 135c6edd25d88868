package logstore

import (
	"bytes"
	"testing"
	"time"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/record"
)

func TestOffsetAssignment(t *testing.T) {
	// Each row is one Append request: record counts of its batches and the expected base
	// offset of each batch. Empty batches occupy one offset.
	steps := []struct {
		counts []int32
		bases  []int64
		last   int64
	}{
		{[]int32{3}, []int64{0}, 2},
		{[]int32{0}, []int64{3}, 3},
		{[]int32{1, 0, 5}, []int64{4, 5, 6}, 10},
		{[]int32{0, 0}, []int64{11, 12}, 12},
		{[]int32{7}, []int64{13}, 19},
	}
	l := open(t, t.TempDir(), Options{})
	defer l.Close()
	var want []record.Batch
	for i, st := range steps {
		var bs []record.Batch
		for _, c := range st.counts {
			bs = append(bs, plain(c, 10+int(c)))
		}
		r := mustAppend(t, l, 1000+int64(i), bs...)
		if r.FirstOffset != st.bases[0] || r.LastOffset != st.last || r.Duplicate {
			t.Fatalf("step %d: result %+v, want first %d last %d", i, r, st.bases[0], st.last)
		}
		for j, b := range bs {
			if b.BaseOffset() != st.bases[j] {
				t.Fatalf("step %d batch %d: base %d, want %d", i, j, b.BaseOffset(), st.bases[j])
			}
			if b.CommitTimestamp() != 1000+int64(i) {
				t.Fatalf("step %d batch %d: ts %d", i, j, b.CommitTimestamp())
			}
			// Patched in place, outside the CRC.
			if err := b.Validate(); err != nil {
				t.Fatalf("patched batch invalid: %v", err)
			}
		}
		want = append(want, bs...)
	}
	if l.LogEndOffset() != 20 || l.HighWatermark() != 20 || l.LogStartOffset() != 0 {
		t.Fatalf("LEO %d HW %d start %d", l.LogEndOffset(), l.HighWatermark(), l.LogStartOffset())
	}
	got := readAll(t, l, 0)
	if len(got) != len(want) {
		t.Fatalf("read %d batches, want %d", len(got), len(want))
	}
	for i := range got {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("batch %d differs after round trip", i)
		}
	}
}

func TestCommitTimestampNeverDecreases(t *testing.T) {
	l := open(t, t.TempDir(), Options{})
	defer l.Close()
	for i, now := range []int64{500, 400, 900, 100} {
		r := mustAppend(t, l, now, plain(1, 8))
		want := []int64{500, 500, 900, 900}[i]
		if r.CommitTimestamp != want {
			t.Fatalf("append %d at now=%d: ts %d, want %d", i, now, r.CommitTimestamp, want)
		}
	}
	if l.MaxTimestamp() != 900 {
		t.Fatalf("max ts %d", l.MaxTimestamp())
	}
}

func TestAppendRejectsCorruptBatches(t *testing.T) {
	l := open(t, t.TempDir(), Options{})
	defer l.Close()
	good := plain(2, 20)
	bad := plain(2, 20)
	bad[len(bad)-1] ^= 0xff
	short := record.Batch(good[:30])
	for name, bs := range map[string][]record.Batch{
		"crc":   {good, bad},
		"short": {short},
		"none":  nil,
	} {
		_, err := l.Append(bs, 1)
		wantCode(t, err, ferr.CorruptRecordException)
		if l.LogEndOffset() != 0 {
			t.Fatalf("%s: something was appended", name)
		}
	}
}

func TestIdempotentWriter(t *testing.T) {
	const w = 42
	type step struct {
		seqs    []int32
		code    ferr.Code
		dup     bool
		first   int64 // expected FirstOffset on success or duplicate
		leoWant int64
	}
	steps := []step{
		{seqs: []int32{1}, code: ferr.OutOfOrderSequenceException, leoWant: 0}, // new writer must start at 0
		{seqs: []int32{0}, first: 0, leoWant: 2},
		{seqs: []int32{1, 2}, first: 2, leoWant: 6},
		{seqs: []int32{1}, dup: true, first: 2, leoWant: 6},                    // retry of an old batch
		{seqs: []int32{2, 3}, dup: true, first: 4, leoWant: 6},                 // any duplicate makes the request one
		{seqs: []int32{4}, code: ferr.OutOfOrderSequenceException, leoWant: 6}, // gap
		{seqs: []int32{3, 5}, code: ferr.OutOfOrderSequenceException, leoWant: 6},
		{seqs: []int32{3}, first: 6, leoWant: 8},
		{seqs: []int32{4}, first: 8, leoWant: 10},
		{seqs: []int32{5}, first: 10, leoWant: 12},
		{seqs: []int32{6}, first: 12, leoWant: 14},
		// Only the last five (2..6) are remembered: 1 is neither a duplicate nor in sequence.
		{seqs: []int32{1}, code: ferr.OutOfOrderSequenceException, leoWant: 14},
		{seqs: []int32{2}, dup: true, first: 4, leoWant: 14},
	}
	l := open(t, t.TempDir(), Options{})
	defer l.Close()
	for i, st := range steps {
		var bs []record.Batch
		for _, s := range st.seqs {
			bs = append(bs, batch(w, s, 2, 16))
		}
		r, err := l.Append(bs, 100)
		if st.code != ferr.None {
			wantCode(t, err, st.code)
		} else if err != nil {
			t.Fatalf("step %d: %v", i, err)
		} else if r.Duplicate != st.dup || r.FirstOffset != st.first {
			t.Fatalf("step %d: result %+v, want dup=%v first=%d", i, r, st.dup, st.first)
		}
		if l.LogEndOffset() != st.leoWant {
			t.Fatalf("step %d: LEO %d, want %d", i, l.LogEndOffset(), st.leoWant)
		}
	}
	// Non-idempotent batches and other writers are independent.
	mustAppend(t, l, 100, plain(1, 4), batch(7, 0, 1, 4))
}

func TestSequenceWrapsAround(t *testing.T) {
	if !inSequence(2147483647, 0) || inSequence(2147483647, 1) || !inSequence(-1, 0) || inSequence(-1, 5) {
		t.Fatal("inSequence rules wrong")
	}
}

func TestWriterStateSurvivesRestart(t *testing.T) {
	for _, mode := range []string{"clean", "crash", "crash-after-rolls"} {
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			opts := Options{}
			if mode == "crash-after-rolls" {
				opts.SegmentBytes = 200
			}
			l := open(t, dir, opts)
			for s := int32(0); s < 8; s++ {
				mustAppend(t, l, 1000, batch(9, s, 3, 40))
			}
			if mode == "clean" {
				if err := l.Close(); err != nil {
					t.Fatal(err)
				}
			} else {
				crash(l)
			}
			l = open(t, dir, opts)
			defer l.Close()
			if mode == "crash-after-rolls" && len(l.v.Load().segs) < 3 {
				t.Fatalf("expected several segments, got %d", len(l.v.Load().segs))
			}
			r, err := l.Append([]record.Batch{batch(9, 6, 3, 40)}, 2000)
			if err != nil || !r.Duplicate || r.FirstOffset != 18 || r.LastOffset != 20 || r.CommitTimestamp != 1000 {
				t.Fatalf("duplicate after restart: %+v %v", r, err)
			}
			_, err = l.Append([]record.Batch{batch(9, 0, 3, 40)}, 2000)
			wantCode(t, err, ferr.OutOfOrderSequenceException)
			r = mustAppend(t, l, 2000, batch(9, 8, 3, 40))
			if r.FirstOffset != 24 {
				t.Fatalf("next append at %d", r.FirstOffset)
			}
		})
	}
}

func TestWriterExpiration(t *testing.T) {
	dir := t.TempDir()
	day := int64(24 * 3600 * 1000)
	l := open(t, dir, Options{})
	mustAppend(t, l, 1000, batch(5, 0, 1, 8))
	mustAppend(t, l, 1000, batch(6, 0, 1, 8))
	mustAppend(t, l, 3*day, batch(6, 1, 1, 8))
	if n := l.Retention().RemoveExpiredWriters(2000 + 7*day); n != 1 {
		t.Fatalf("expired %d writers, want 1", n)
	}
	// Writer 5 lost its state: it must start at 0 again; writer 6 continues.
	_, err := l.Append([]record.Batch{batch(5, 1, 1, 8)}, 8*day)
	wantCode(t, err, ferr.OutOfOrderSequenceException)
	mustAppend(t, l, 8*day, batch(5, 0, 1, 8))
	mustAppend(t, l, 8*day, batch(6, 2, 1, 8))
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	// Expiry also applies on Open, with the snapshot's timestamps.
	l = open(t, dir, Options{Now: func() time.Time { return time.UnixMilli(16 * day) }})
	defer l.Close()
	if len(l.writers) != 0 {
		t.Fatalf("writers not expired on open: %d", len(l.writers))
	}
}

func TestSnapshotRoundTrip(t *testing.T) {
	ws := writerState{}
	for i := int64(1); i <= 3; i++ {
		for s := int32(0); s < int32(i)*3; s++ {
			b := batch(i, s, 2, 4)
			b.SetBaseOffset(int64(s) * 2)
			b.SetCommitTimestamp(77 + int64(s))
			ws.observe(b)
		}
	}
	enc := encodeSnapshot(1234, ws)
	off, got, err := decodeSnapshot(enc)
	if err != nil || off != 1234 || len(got) != 3 {
		t.Fatalf("decode: %v off %d n %d", err, off, len(got))
	}
	for id, e := range ws {
		if *got[id] != *e {
			t.Fatalf("writer %d: %+v != %+v", id, *got[id], *e)
		}
	}
	if !bytes.Equal(encodeSnapshot(1234, got), enc) {
		t.Fatal("re-encoding differs")
	}
	for i := range enc {
		c := append([]byte(nil), enc...)
		c[i] ^= 0x10
		if _, _, err := decodeSnapshot(c); err == nil {
			t.Fatalf("flipped byte %d not detected", i)
		}
	}
	if _, _, err := decodeSnapshot(enc[:len(enc)-1]); err == nil {
		t.Fatal("truncated snapshot accepted")
	}
}

func FuzzDecodeSnapshot(f *testing.F) {
	ws := writerState{}
	b := batch(3, 0, 1, 4)
	ws.observe(b)
	f.Add(encodeSnapshot(10, ws))
	f.Add(encodeSnapshot(0, writerState{}))
	f.Add([]byte("SWS1"))
	f.Fuzz(func(t *testing.T, data []byte) {
		off, got, err := decodeSnapshot(data)
		if err != nil {
			return
		}
		if !bytes.Equal(encodeSnapshot(off, got), data) {
			t.Fatalf("accepted snapshot does not re-encode identically")
		}
	})
}
