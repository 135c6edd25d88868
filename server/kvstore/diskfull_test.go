package kvstore

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/server/logstore"
)

// smallDisk mounts an 8 MiB tmpfs for the test, or skips when mounting is not permitted.
func smallDisk(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "disk")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=8m"); err != nil {
		t.Skipf("cannot mount a small tmpfs (%v): needs root", err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(dir, syscall.MNT_DETACH) })
	return dir
}

// fillDisk writes a file until the disk is full and returns its path.
func fillDisk(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	for {
		if _, err := f.Write(buf); err != nil {
			return path
		}
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestDiskFull reproduces finding 6 of issue 11 on an 8 MiB tmpfs: with the disk full,
// Pebble's flush failed in a tight loop, Checkpoint and Close waited for it forever, and
// nothing was logged. Now: one ERROR line, retries slowed down, writes refused with a Fluss
// error, Checkpoint and Close return, and everything works again once space frees.
func TestDiskFull(t *testing.T) {
	disk := smallDisk(t)
	defer func(c, d time.Duration) { checkpointFlushWait, closeFlushWait = c, d }(checkpointFlushWait, closeFlushWait)
	checkpointFlushWait, closeFlushWait = time.Second, time.Second

	logs := &syncBuffer{}
	logger := slog.New(slog.NewTextHandler(logs, nil))
	h := &harness{t: t, dir: disk, table: usersTable(nil)}
	var err error
	h.log, err = logstore.Open(context.Background(), filepath.Join(disk, "log"), logstore.Options{Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	h.store, err = Open(filepath.Join(disk, "kv"), Options{Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	if h.tab, err = h.store.OpenTablet(context.Background(), testBucket, h.table, h.log); err != nil {
		t.Fatal(err)
	}
	name := strings.Repeat("x", 200)
	for n := 0; n < 200; n++ {
		var recs []rec
		for j := 0; j < 20; j++ {
			recs = append(recs, up(int64(n*20+j), name, 1))
		}
		h.put(nil, recs...)
	}
	filler := fillDisk(t, disk)

	start := time.Now()
	if err := h.store.Checkpoint(); ferr.CodeOf(err) != ferr.KvStorageException {
		t.Fatalf("checkpoint on a full disk: %v", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("checkpoint took %v", d)
	}
	if err := h.store.WriteError(); ferr.CodeOf(err) != ferr.KvStorageException {
		t.Fatalf("writes not refused while Pebble cannot write: %v", err)
	}
	time.Sleep(2 * time.Second)
	h.store.bg.mu.Lock()
	retries := h.store.bg.count
	h.store.bg.mu.Unlock()
	if retries > 20 {
		t.Fatalf("%d flush attempts in ~3s: retries are not backing off", retries)
	}
	if n := strings.Count(logs.String(), "Pebble background write failed"); n != 1 {
		t.Fatalf("%d ERROR lines for the failing flushes, want exactly 1:\n%s", n, logs.String())
	}

	// Space frees: flushes succeed again and writes are accepted.
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for h.store.WriteError() != nil && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if err := h.store.WriteError(); err != nil {
		t.Fatalf("still refusing writes after space freed: %v", err)
	}
	h.put(nil, up(1, "y", 2))
	if err := h.store.Checkpoint(); err != nil {
		t.Fatalf("checkpoint after space freed: %v", err)
	}

	// A full disk at shutdown: Close returns.
	fillDisk(t, disk)
	_, _ = h.tryPut(nil, up(2, "z", 3)) // may fail in the log: the disk is full
	done := make(chan struct{})
	go func() { h.close(); close(done) }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		t.Fatal("Close hangs on a full disk")
	}
}
