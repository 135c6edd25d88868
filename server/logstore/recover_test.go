package logstore

import (
	"bytes"
	"context"
	"errors"
	"os"
	"testing"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/record"
)

func TestTornTailRecovery(t *testing.T) {
	// Five batches of 2 records; each case damages the tail of the active segment file after
	// a crash (nothing valid follows the damage, so it is a torn last write). keep is how
	// many batches must survive. Damage followed by valid batches is TestMidSegmentCorruption.
	const n = 5
	cases := []struct {
		name   string
		damage func(data []byte, sizes []int) []byte
		keep   int
	}{
		{"intact", func(d []byte, _ []int) []byte { return d }, 5},
		{"garbage appended", func(d []byte, _ []int) []byte { return append(d, "not a batch at all, just noise"...) }, 5},
		{"zeros appended", func(d []byte, _ []int) []byte { return append(d, make([]byte, 4096)...) }, 5},
		{"few bytes appended", func(d []byte, _ []int) []byte { return append(d, 1, 2, 3) }, 5},
		{"half a batch appended", func(d []byte, s []int) []byte {
			b := plain(3, 200)
			return append(d, b[:len(b)/2]...)
		}, 5},
		{"last batch cut", func(d []byte, s []int) []byte { return d[:len(d)-7] }, 4},
		{"crc byte flipped in last batch", func(d []byte, s []int) []byte {
			d[len(d)-s[4]+21] ^= 0x01
			return d
		}, 4},
		{"payload byte flipped in last batch", func(d []byte, _ []int) []byte {
			d[len(d)-1] ^= 0x80
			return d
		}, 4},
		{"length field huge", func(d []byte, s []int) []byte {
			p := s[0] + s[1] + s[2] + s[3] + 8
			d[p+3] = 0x7f
			return d
		}, 4},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			l := open(t, dir, Options{IndexIntervalBytes: 100})
			var sizes []int
			for i := 0; i < n; i++ {
				b := batch(11, int32(i), 2, 60+i*10)
				sizes = append(sizes, len(b))
				mustAppend(t, l, 1000, b)
			}
			crash(l)
			path := fileName(dir, 0, logSuffix)
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			valid := 0
			for _, s := range sizes[:c.keep] {
				valid += s
			}
			if err := os.WriteFile(path, c.damage(data, sizes), 0o644); err != nil {
				t.Fatal(err)
			}
			l = open(t, dir, Options{IndexIntervalBytes: 100})
			defer l.Close()
			if l.LogEndOffset() != int64(2*c.keep) || l.HighWatermark() != int64(2*c.keep) {
				t.Fatalf("LEO %d HW %d, want %d", l.LogEndOffset(), l.HighWatermark(), 2*c.keep)
			}
			if st, _ := os.Stat(path); st.Size() != int64(valid) {
				t.Fatalf("file size %d, want %d", st.Size(), valid)
			}
			if got := readAll(t, l, 0); len(got) != c.keep {
				t.Fatalf("read %d batches", len(got))
			}
			// The writer continues where the surviving log ends: the lost batches are not
			// duplicates, the retained one is.
			if c.keep > 0 {
				r, err := l.Append([]record.Batch{batch(11, int32(c.keep-1), 2, 8)}, 2000)
				if err != nil || !r.Duplicate {
					t.Fatalf("retry of last kept batch: %+v %v", r, err)
				}
			}
			r := mustAppend(t, l, 2000, batch(11, int32(c.keep), 2, 8))
			if r.Duplicate || r.FirstOffset != int64(2*c.keep) {
				t.Fatalf("append after recovery: %+v", r)
			}
		})
	}
}

func TestCleanShutdownTrustsIndexes(t *testing.T) {
	dir := t.TempDir()
	l := open(t, dir, Options{IndexIntervalBytes: 64})
	fill(t, l, 30, 3, 40, 1)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	l = open(t, dir, Options{IndexIntervalBytes: 64})
	act := l.active()
	if act.idx.offLen() == 0 {
		t.Fatal("active index not loaded")
	}
	if got := readAll(t, l, 0); len(got) != 30 {
		t.Fatalf("read %d", len(got))
	}
	crash(l)
	// After a crash the active index files (written by the earlier Close) are ignored.
	if err := os.WriteFile(fileName(dir, 0, indexSuffix), bytes.Repeat([]byte{0xff}, 16), 0o644); err != nil {
		t.Fatal(err)
	}
	l = open(t, dir, Options{IndexIntervalBytes: 64})
	defer l.Close()
	if got := readAll(t, l, 0); len(got) != 30 {
		t.Fatalf("read %d", len(got))
	}
}

// TestTornSealedSegmentTakesLogOffline: sealed segments were synced before the roll, so a bad
// batch in one is corruption, never a torn tail: the later segments (acknowledged data) are
// kept and the log goes offline until an operator accepts the cut.
func TestTornSealedSegmentTakesLogOffline(t *testing.T) {
	dir := t.TempDir()
	opts := Options{SegmentBytes: 400}
	l := open(t, dir, opts)
	fill(t, l, 12, 1, 100, 1) // 148-byte batches, two per segment
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	segs, _ := scanDir(dir)
	if len(segs) != 6 {
		t.Fatalf("%d segments", len(segs))
	}
	// Cut the second segment in the middle of its second batch.
	if err := os.Truncate(fileName(dir, segs[1], logSuffix), 200); err != nil {
		t.Fatal(err)
	}
	l = open(t, dir, opts)
	wantCode(t, l.Offline(), ferr.LogStorageException)
	if left, _ := scanDir(dir); len(left) != 6 {
		t.Fatalf("segments after the torn one were deleted: %v", left)
	}
	_, err := l.Append([]record.Batch{plain(1, 10)}, 50)
	wantCode(t, err, ferr.LogStorageException)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	rep, err := AcceptTruncation(dir)
	if err != nil {
		t.Fatal(err)
	}
	if rep.LogEnd != 3 || len(rep.RemovedSegments) != 4 {
		t.Fatalf("repair report %+v", rep)
	}
	l = open(t, dir, opts)
	defer l.Close()
	if l.Offline() != nil || l.LogEndOffset() != 3 {
		t.Fatalf("after repair: offline %v, LEO %d", l.Offline(), l.LogEndOffset())
	}
	mustAppend(t, l, 50, plain(1, 10))
	if got := readAll(t, l, 0); len(got) != 4 {
		t.Fatalf("read %d", len(got))
	}
}

func TestOpenHonoursContext(t *testing.T) {
	dir := t.TempDir()
	l := open(t, dir, Options{})
	fill(t, l, 3, 1, 10, 1)
	crash(l)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Open(ctx, dir, Options{Logger: discardLogger()}); err == nil {
		t.Fatal("Open with cancelled context succeeded")
	}
}

// FuzzRecover feeds arbitrary bytes as the tail of the active segment: Open must never panic
// and must keep exactly the valid prefix.
func FuzzRecover(f *testing.F) {
	valid := append(plain(2, 30), plain(0, 0)...)
	f.Add([]byte{})
	f.Add([]byte(plain(1, 5)))
	f.Add(bytes.Repeat([]byte{0}, 64))
	f.Add([]byte(plain(1, 5))[:20])
	f.Fuzz(func(t *testing.T, tail []byte) {
		dir := t.TempDir()
		l := open(t, dir, Options{IndexIntervalBytes: 16})
		mustAppend(t, l, 5, record.Batch(append([]byte(nil), valid[:78]...)), record.Batch(append([]byte(nil), valid[78:]...)))
		crash(l)
		path := fileName(dir, 0, logSuffix)
		data, _ := os.ReadFile(path)
		if err := os.WriteFile(path, append(data, tail...), 0o644); err != nil {
			t.Fatal(err)
		}
		l = open(t, dir, Options{IndexIntervalBytes: 16})
		defer l.Close()
		if l.Offline() != nil {
			// Only a valid batch somewhere in the tail (acknowledged data after damage, as
			// far as recovery can tell) may take the log offline, and nothing is cut then.
			var c *CorruptionError
			if !errors.As(l.Offline(), &c) || c.ValidAfter < c.Position || c.Position < int64(len(data)) {
				t.Fatalf("offline without a valid batch after the damage: %v", l.Offline())
			}
			if st, _ := os.Stat(path); st.Size() != int64(len(data)+len(tail)) {
				t.Fatalf("offline log was truncated to %d bytes", st.Size())
			}
			return
		}
		if l.LogEndOffset() < 3 {
			t.Fatalf("lost valid data: LEO %d", l.LogEndOffset())
		}
		got := readAll(t, l, 0)
		if len(got) < 2 {
			t.Fatalf("read %d batches", len(got))
		}
		mustAppend(t, l, 6, plain(1, 4))
	})
}
