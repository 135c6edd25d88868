package logstore

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/record"
)

// TestDiskFullRefusesAppendsWithOneErrorLine: on a full 8 MiB tmpfs appends get
// LOG_STORAGE_EXCEPTION, the failures produce one ERROR line, nothing partial is stored, and
// appends succeed again once space frees (finding 6 of issue 11).
func TestDiskFullRefusesAppendsWithOneErrorLine(t *testing.T) {
	disk := filepath.Join(t.TempDir(), "disk")
	if err := os.MkdirAll(disk, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", disk, "tmpfs", 0, "size=8m"); err != nil {
		t.Skipf("cannot mount a small tmpfs (%v): needs root", err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(disk, syscall.MNT_DETACH) })
	ioErrors.mu.Lock()
	ioErrors.last = time.Time{}
	ioErrors.mu.Unlock()

	// Space to give back later.
	filler := filepath.Join(disk, "filler")
	if err := os.WriteFile(filler, make([]byte, 2<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	logs, logger := capture()
	l := open(t, filepath.Join(disk, "log"), Options{Logger: logger})
	var failed int
	var leo int64
	for i := 0; i < 400; i++ {
		r, err := l.Append([]record.Batch{plain(10, 32<<10)}, int64(i+1))
		if err != nil {
			wantCode(t, err, ferr.LogStorageException)
			failed++
			continue
		}
		leo = r.LastOffset + 1
	}
	if failed < 100 {
		t.Fatalf("only %d of 400 32 KiB appends failed on an 8 MiB disk", failed)
	}
	if n := strings.Count(logs.String(), "level=ERROR"); n != 1 {
		t.Fatalf("%d ERROR lines for %d failed appends, want 1:\n%s", n, failed, logs.String())
	}
	if l.LogEndOffset() != leo || l.HighWatermark() != leo {
		t.Fatalf("LEO %d HW %d after failures, want %d", l.LogEndOffset(), l.HighWatermark(), leo)
	}
	// Free space: the same log accepts appends again, and everything reads back whole.
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	r := mustAppend(t, l, 1000, plain(10, 32<<10))
	if r.FirstOffset != leo {
		t.Fatalf("append after space freed at %d, want %d", r.FirstOffset, leo)
	}
	if got := readAll(t, l, 0); len(got) != int(leo/10)+1 {
		t.Fatalf("read %d batches, want %d", len(got), leo/10+1)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}
