package kvstore

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stromdb/strom/internal/faultfs"
	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/server/diskwatch"
	"github.com/stromdb/strom/server/logstore"
)

// TestFaultsInPebbleFiles injects STROM_FAULTS rules into Pebble's own files (server/pebblefs;
// docs/durability.md, "Gray failures"): an EIO on them makes the store refuse writes with
// KV_STORAGE_EXCEPTION and WARN once naming the file and its device, and it writes again once
// the disk does; ENOSPC is refused the same way without a WARN; a slow Pebble sync is seen by
// the disk watch that the stall fence reads, as a slow segment sync is.
func TestFaultsInPebbleFiles(t *testing.T) {
	defer func(c, d time.Duration) { checkpointFlushWait, closeFlushWait = c, d }(checkpointFlushWait, closeFlushWait)
	checkpointFlushWait, closeFlushWait = time.Second, time.Second
	dir := t.TempDir()
	rules := filepath.Join(dir, "faults")
	setRules := func(s string) {
		t.Helper()
		if err := os.WriteFile(rules, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		time.Sleep(120 * time.Millisecond) // faultfs rereads the file at most every 50 ms
	}
	defer faultfs.ActivateForTest(rules)()
	kvDir := filepath.Join(dir, "kv")

	logs := &syncBuffer{}
	logger := slog.New(slog.NewTextHandler(logs, nil))
	h := &harness{t: t, dir: dir, table: usersTable(nil)}
	var err error
	if h.log, err = logstore.Open(context.Background(), filepath.Join(dir, "log"), logstore.Options{Logger: logger}); err != nil {
		t.Fatal(err)
	}
	if h.store, err = Open(kvDir, Options{Logger: logger}); err != nil {
		t.Fatal(err)
	}
	defer h.close()
	if h.tab, err = h.store.OpenTablet(context.Background(), testBucket, h.table, h.log); err != nil {
		t.Fatal(err)
	}
	next := int64(0)
	fill := func() {
		for range 50 {
			h.put(nil, up(next, strings.Repeat("x", 100), 1))
			next++
		}
	}
	recoverWrites := func(what string) {
		t.Helper()
		setRules("")
		deadline := time.Now().Add(10 * time.Second)
		for h.store.WriteError() != nil && time.Now().Before(deadline) {
			_ = h.store.Checkpoint()
			time.Sleep(50 * time.Millisecond)
		}
		if err := h.store.WriteError(); err != nil {
			t.Fatalf("after %s: still refusing writes once the disk works: %v", what, err)
		}
		fill()
		if err := h.store.Checkpoint(); err != nil {
			t.Fatalf("after %s: checkpoint: %v", what, err)
		}
	}

	for _, fault := range []string{"eio", "enospc"} {
		fill()
		setRules("* " + kvDir + " " + fault + "\n")
		if err := h.store.Checkpoint(); ferr.CodeOf(err) != ferr.KvStorageException {
			t.Fatalf("%s: checkpoint (a flush) while Pebble's files fail: %v, want KV_STORAGE_EXCEPTION", fault, err)
		}
		if err := h.store.WriteError(); ferr.CodeOf(err) != ferr.KvStorageException {
			t.Fatalf("%s: writes not refused while Pebble cannot write: %v", fault, err)
		}
		if media := h.store.MediaError(); (media != nil) != (fault == "eio") {
			t.Fatalf("%s: MediaError %v", fault, media)
		}
		recoverWrites(fault)
		if err := h.store.MediaError(); err != nil {
			t.Fatalf("after %s: MediaError %v once flushes succeed", fault, err)
		}
	}
	warns := 0
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, "disk I/O error in a Pebble file") {
			warns++
			if !strings.Contains(line, "file="+kvDir) || !strings.Contains(line, "device=") || strings.Contains(line, "device=unknown") {
				t.Errorf("the WARN does not name the file and its device: %s", line)
			}
			if strings.Contains(line, "ENOSPC") || strings.Contains(line, "no space") {
				t.Errorf("a full disk was reported as a media error: %s", line)
			}
		}
	}
	if warns != 1 {
		t.Errorf("%d WARN lines for the EIO, want 1 (one per file, and only one file failed first):\n%s", warns, logs.String())
	}

	// A slow sync of a Pebble file is in flight where the stall fence looks.
	fill()
	setRules("sync " + kvDir + " delay=1500ms\n")
	done := make(chan error, 1)
	go func() { done <- h.store.Checkpoint() }()
	var seen diskwatch.Stall
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) && seen.For < 500*time.Millisecond {
		if s, ok := diskwatch.Oldest(time.Now()); ok && strings.HasPrefix(s.Path, kvDir) {
			seen = s
		}
		time.Sleep(20 * time.Millisecond)
	}
	if seen.For < 500*time.Millisecond {
		t.Fatalf("no slow sync of a Pebble file seen by diskwatch (last %+v)", seen)
	}
	setRules("")
	if err := <-done; err != nil {
		t.Fatalf("checkpoint with slow syncs: %v", err)
	}
}
