package logstore

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"golang.org/x/time/rate"

	"github.com/stromdb/strom/internal/ferr"
)

// TestScrubFindsBytesThatWentBadAfterTheyWereVerified damages a sealed segment of an open log
// whose bytes are all in the verified set (appended by this process), so reads would serve
// them unchecked: Scrub re-reads them, reports the bad batch and takes the log offline.
func TestScrubFindsBytesThatWentBadAfterTheyWereVerified(t *testing.T) {
	dir := t.TempDir()
	logs, logger := capture()
	l := open(t, dir, Options{SegmentBytes: 1000, IndexIntervalBytes: 100, Logger: logger})
	fill(t, l, 40, 2, 100, 1) // 148-byte batches, 6 per segment
	lim := rate.NewLimiter(rate.Limit(1<<30), scrubChunk)

	res, err := l.Scrub(context.Background(), lim)
	if err != nil || res.Corrupt != nil {
		t.Fatalf("scrub of an intact log = %+v, %v", res, err)
	}
	bases, _ := scanDir(dir)
	var sealed int64
	for _, b := range bases[:len(bases)-1] {
		st, err := os.Stat(fileName(dir, b, logSuffix))
		if err != nil {
			t.Fatal(err)
		}
		sealed += st.Size()
	}
	if res.Segments != len(bases)-1 || res.Bytes != sealed {
		t.Fatalf("scrub checked %d segments, %d bytes; want the %d sealed segments, %d bytes", res.Segments, res.Bytes, len(bases)-1, sealed)
	}

	path := fileName(dir, bases[2], logSuffix)
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	var b [1]byte
	const pos = 3*148 + 60 // inside the segment's fourth batch
	if _, err := f.ReadAt(b[:], pos); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0x10
	if _, err := f.WriteAt(b[:], pos); err != nil {
		t.Fatal(err)
	}
	f.Close()

	res, err = l.Scrub(context.Background(), lim)
	if res.Corrupt == nil || res.Corrupt.File != path || res.Corrupt.Position != 3*148 {
		t.Fatalf("scrub after the damage = %+v, %v; want the batch at byte %d of %s", res, err, 3*148, path)
	}
	if res.Segments != 2 {
		t.Errorf("scrub stopped after %d intact segments, want 2", res.Segments)
	}
	wantCode(t, err, ferr.LogStorageException)
	wantCode(t, l.Offline(), ferr.LogStorageException)
	if !strings.Contains(logs.String(), "corrupt batch") {
		t.Errorf("no ERROR line for the corruption: %s", logs.String())
	}
	if _, ok, _ := readCorruptMarker(dir); !ok {
		t.Error("no corruption marker: a restart would serve the bad batch")
	}
}

func TestScrubStopsWithItsContext(t *testing.T) {
	l := open(t, t.TempDir(), Options{SegmentBytes: 1000, IndexIntervalBytes: 100})
	fill(t, l, 40, 2, 100, 1)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err := l.Scrub(ctx, rate.NewLimiter(1, scrubChunk))
	if !errors.Is(err, context.Canceled) || res.Corrupt != nil || l.Offline() != nil {
		t.Fatalf("scrub with a cancelled context = %+v, %v", res, err)
	}
}
