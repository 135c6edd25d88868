package logstore

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/record"
)

// logBuffer collects log lines for assertions.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func capture() (*logBuffer, *slog.Logger) {
	b := &logBuffer{}
	return b, slog.New(slog.NewTextHandler(b, nil))
}

// wantOffline checks that every request to l fails with LOG_STORAGE_EXCEPTION naming the
// corrupt segment file and position.
func wantOffline(t *testing.T, l *Log, file string, pos int64) {
	t.Helper()
	var c *CorruptionError
	if !errors.As(l.Offline(), &c) || filepath.Base(c.File) != filepath.Base(file) || c.Position != pos {
		t.Fatalf("offline error %v, want corruption in %s at %d", l.Offline(), filepath.Base(file), pos)
	}
	msg := ferr.MessageOf(l.Offline())
	if !strings.Contains(msg, filepath.Base(file)) || strings.Contains(msg, l.Dir()) {
		t.Errorf("client message %q should name the segment file but not the server path", msg)
	}
	_, err := l.Read(0, 1<<20, true)
	wantCode(t, err, ferr.LogStorageException)
	_, err = l.Append([]record.Batch{plain(1, 10)}, 1<<40)
	wantCode(t, err, ferr.LogStorageException)
	_, err = l.OffsetForTimestamp(0, 1<<40)
	wantCode(t, err, ferr.LogStorageException)
	_, _, err = l.ReadLastRecords(10)
	wantCode(t, err, ferr.LogStorageException)
}

// TestMidSegmentCorruptionAfterCrash reproduces finding 5a of issue 11: after a kill -9, one
// flipped byte in the middle of the active segment used to truncate every acknowledged batch
// after it with only a WARN. Now the bucket goes offline with an ERROR naming the file and
// offset, nothing is cut, it stays offline across restarts, and only the operator's
// AcceptTruncation drops the tail.
func TestMidSegmentCorruptionAfterCrash(t *testing.T) {
	for _, flip := range []struct {
		name string
		at   func(size int) int // byte to flip within batch 300, of the given size
	}{
		{"payload byte", func(n int) int { return n - 5 }},
		{"length field", func(int) int { return 10 }},
		{"crc byte", func(int) int { return 22 }},
	} {
		t.Run(flip.name, func(t *testing.T) {
			dir := t.TempDir()
			l := open(t, dir, Options{IndexIntervalBytes: 1024, FlushPolicy: FlushInterval(0)}) // no fsync per append: the test simulates a crash anyway
			const n = 900
			var pos300 int64
			var size int
			for i := 0; i < n; i++ {
				b := plain(1, 60)
				if i == 300 {
					pos300, size = l.active().size, len(b)
				}
				mustAppend(t, l, int64(1000+i), b)
			}
			crash(l)
			path := fileName(dir, 0, logSuffix)
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			data[pos300+int64(flip.at(size))] ^= 0x40
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}

			logs, logger := capture()
			l = open(t, dir, Options{IndexIntervalBytes: 1024, Logger: logger})
			wantOffline(t, l, path, pos300)
			if st, _ := os.Stat(path); st.Size() != int64(len(data)) {
				t.Fatalf("segment truncated to %d bytes (was %d)", st.Size(), len(data))
			}
			out := logs.String()
			if !strings.Contains(out, "level=ERROR") || !strings.Contains(out, path) || !strings.Contains(out, "position=") ||
				!strings.Contains(out, "strom repair-log") {
				t.Fatalf("no ERROR line naming the file, position and repair:\n%s", out)
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			// Offline survives a restart, even after a Close.
			l = open(t, dir, Options{IndexIntervalBytes: 1024})
			wantOffline(t, l, path, pos300)
			l.Close()

			rep, err := AcceptTruncation(dir)
			if err != nil {
				t.Fatal(err)
			}
			if rep.LogEnd != 300 || rep.Position != pos300 || rep.RemovedBytes != int64(len(data))-pos300 {
				t.Fatalf("repair report %+v", rep)
			}
			l = open(t, dir, Options{IndexIntervalBytes: 1024})
			defer l.Close()
			if end, ok := l.OperatorTruncation(); !ok || end != 300 {
				t.Fatalf("OperatorTruncation = %d, %v", end, ok)
			}
			if l.Offline() != nil || l.LogEndOffset() != 300 {
				t.Fatalf("after repair: offline %v LEO %d", l.Offline(), l.LogEndOffset())
			}
			if got := readAll(t, l, 0); len(got) != 300 {
				t.Fatalf("read %d batches after repair", len(got))
			}
			if r := mustAppend(t, l, 5000, plain(1, 10)); r.FirstOffset != 300 {
				t.Fatalf("append after repair at %d", r.FirstOffset)
			}
			if err := l.ClearOperatorTruncation(); err != nil {
				t.Fatal(err)
			}
			if _, ok := l.OperatorTruncation(); ok {
				t.Fatal("operator truncation not cleared")
			}
		})
	}
}

// TestAcceptTruncationNeedsAnOfflineLog: the repair refuses a healthy log.
func TestAcceptTruncationNeedsAnOfflineLog(t *testing.T) {
	dir := t.TempDir()
	l := open(t, dir, Options{})
	fill(t, l, 3, 1, 10, 1)
	l.Close()
	if _, err := AcceptTruncation(dir); err == nil {
		t.Fatal("AcceptTruncation of a healthy log succeeded")
	}
}

// TestFlippedByteAfterCleanShutdownIsNeverServed reproduces finding 5b: after a clean
// shutdown recovery trusts the segments, so a flipped byte used to be served as is. Reads now
// verify each range once before serving it; the bad batch fails the read and takes the
// bucket offline, also across a restart.
func TestFlippedByteAfterCleanShutdownIsNeverServed(t *testing.T) {
	for _, c := range []struct {
		name string
		seg  int // which segment's second batch to damage (-1: the active one)
	}{{"active segment", -1}, {"sealed segment", 1}} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			opts := Options{SegmentBytes: 1000, IndexIntervalBytes: 100}
			l := open(t, dir, opts)
			fill(t, l, 40, 2, 100, 1) // 148-byte batches, 7 per segment
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			bases, _ := scanDir(dir)
			base := bases[len(bases)-1]
			if c.seg >= 0 {
				base = bases[c.seg]
			}
			path := fileName(dir, base, logSuffix)
			data, _ := os.ReadFile(path)
			const pos = 148 // the segment's second batch
			data[pos+100] ^= 0x01
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}

			logs, logger := capture()
			opts.Logger = logger
			l = open(t, dir, opts)
			if l.Offline() != nil {
				t.Fatalf("clean open already offline: %v", l.Offline())
			}
			// Reading everything before the damaged batch works.
			bad := base + 2
			for off := int64(0); off < bad; {
				r, err := l.Read(off, 148, true)
				if err != nil {
					t.Fatalf("read %d before the damage: %v", off, err)
				}
				buf, _ := r.AppendTo(nil)
				r.Release()
				b, _, _ := record.Split(buf)
				off = b.NextOffset()
			}
			// The damaged batch is never handed out, whichever way it is asked for.
			r, err := l.Read(base, 1<<20, true)
			r.Release()
			wantCode(t, err, ferr.LogStorageException)
			if r.Size != 0 {
				t.Fatal("a range holding the corrupt batch was returned")
			}
			wantOffline(t, l, path, pos)
			if !strings.Contains(logs.String(), "level=ERROR") {
				t.Fatalf("no ERROR line:\n%s", logs.String())
			}
			l.Close()
			l = open(t, dir, opts)
			defer l.Close()
			wantOffline(t, l, path, pos)
		})
	}
}

// TestVerifiedRangesAreCheckedOnce: a verified range is remembered, so repeated reads of the
// same bytes (every consumer of a hot tail) do not re-read them for the CRC.
func TestVerifiedRangesAreCheckedOnce(t *testing.T) {
	dir := t.TempDir()
	l := open(t, dir, Options{})
	fill(t, l, 10, 1, 100, 1)
	l.Close()
	l = open(t, dir, Options{})
	defer l.Close()
	s := l.active()
	if g := s.verified.gaps(0, s.size); len(g) != 1 || g[0] != (span{0, s.size}) {
		t.Fatalf("after a clean open the segment should be unverified, gaps %v", g)
	}
	r, err := l.Read(3, 148*2, false)
	if err != nil {
		t.Fatal(err)
	}
	r.Release()
	if g := s.verified.gaps(0, s.size); len(g) != 2 || g[0].hi != r.Position || g[1].lo != r.Position+r.Size {
		t.Fatalf("gaps after one read %v (read [%d,+%d))", g, r.Position, r.Size)
	}
	// Appended bytes were validated in memory before the write: never re-read.
	mustAppend(t, l, 50, plain(1, 10))
	if g := s.verified.gaps(s.size-int64(len(plain(1, 10))), s.size); len(g) != 0 {
		t.Fatalf("appended bytes not marked verified: %v", g)
	}
}

func TestVerifiedSet(t *testing.T) {
	var v verifiedSet
	v.add(10, 20)
	v.add(30, 40)
	v.add(20, 25) // adjacent: merges
	if len(v.spans) != 2 || v.spans[0] != (span{10, 25}) {
		t.Fatalf("spans %v", v.spans)
	}
	if g := v.gaps(0, 50); len(g) != 3 || g[0] != (span{0, 10}) || g[1] != (span{25, 30}) || g[2] != (span{40, 50}) {
		t.Fatalf("gaps %v", g)
	}
	v.add(5, 45)
	if len(v.spans) != 1 || v.spans[0] != (span{5, 45}) {
		t.Fatalf("spans %v", v.spans)
	}
	v.truncate(30)
	if len(v.spans) != 1 || v.spans[0] != (span{5, 30}) {
		t.Fatalf("after truncate %v", v.spans)
	}
	if g := v.gaps(12, 20); len(g) != 0 {
		t.Fatalf("gaps inside %v", g)
	}
}

// FuzzFindBatchAfter: the scan that tells a torn tail from corruption never panics and only
// ever reports a position where a whole valid batch with a late enough base offset starts.
func FuzzFindBatchAfter(f *testing.F) {
	b := plain(2, 40)
	b.SetBaseOffset(7)
	f.Add(append([]byte("junk"), b...), int64(3))
	f.Add(append(make([]byte, 64), b...), int64(8))
	f.Add([]byte(b), int64(0))
	f.Fuzz(func(t *testing.T, data []byte, next int64) {
		path := filepath.Join(t.TempDir(), "seg")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		fh, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer fh.Close()
		pos, err := findBatchAfter(fh, 0, int64(len(data)), next)
		if err != nil {
			t.Fatal(err)
		}
		if pos < 0 {
			return
		}
		if pos < 1 || pos >= int64(len(data)) {
			t.Fatalf("position %d outside (0, %d)", pos, len(data))
		}
		got, _, ok := record.Split(data[pos:])
		if !ok || got.Validate() != nil || got.BaseOffset() < next {
			t.Fatalf("position %d holds no valid batch at or after offset %d", pos, next)
		}
	})
}
