package logstore

import (
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stromdb/strom/internal/faultfs"
	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/record"
)

// setFaults turns fault injection on for the test with the given rules (docs of faultfs).
func setFaults(t *testing.T, rules string) {
	t.Helper()
	f := filepath.Join(t.TempDir(), "faults")
	if err := os.WriteFile(f, []byte(rules), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(faultfs.ActivateForTest(f))
}

// TestEIOOnSyncTakesOnlyThatBucketOffline: an fdatasync failing with EIO on one log's
// segment file takes that log offline (appends and reads get LOG_STORAGE_EXCEPTION naming
// the file and the device) with one WARN line naming them; another log on the same disk
// goes on; the log reopens after the "restart" with every batch acknowledged before.
func TestEIOOnSyncTakesOnlyThatBucketOffline(t *testing.T) {
	root := t.TempDir()
	sick, healthy := filepath.Join(root, "bucket-0"), filepath.Join(root, "bucket-1")
	logs, logger := capture()
	var offlineCalls atomic.Int32 // the owner's repair hook (Options.OnOffline)
	a := open(t, sick, Options{Logger: logger, OnOffline: func() { offlineCalls.Add(1) }})
	b := open(t, healthy, Options{Logger: logger, OnOffline: func() { t.Error("OnOffline of the healthy bucket called") }})
	mustAppend(t, a, 1, plain(5, 100))
	setFaults(t, "sync "+sick+"/ eio\n")

	if _, err := a.Append([]record.Batch{plain(5, 100)}, 2); err == nil {
		t.Fatal("append with a failing fdatasync succeeded")
	} else {
		wantCode(t, err, ferr.LogStorageException)
		if !strings.Contains(err.Error(), "EIO") || !strings.Contains(err.Error(), "00000000000000000000.log") {
			t.Fatalf("error %q names neither EIO nor the segment file", err)
		}
	}
	if err := a.Offline(); err == nil {
		t.Fatal("the log with the EIO is not offline")
	}
	if _, err := a.Read(0, 1<<20, true); err == nil {
		t.Fatal("an offline log still serves reads")
	}
	if _, err := a.Append([]record.Batch{plain(5, 100)}, 3); err == nil {
		t.Fatal("an offline log still takes appends")
	}
	if n := offlineCalls.Load(); n != 1 {
		t.Fatalf("OnOffline called %d times for the EIO, want once", n)
	}
	for i := 0; i < 3; i++ {
		mustAppend(t, b, int64(10+i), plain(5, 100)) // the other bucket is unaffected
	}
	out := logs.String()
	if n := strings.Count(out, "disk I/O error; bucket offline"); n != 1 {
		t.Fatalf("%d offline WARN lines, want 1:\n%s", n, out)
	}
	if !strings.Contains(out, "device=") || !strings.Contains(out, sick) {
		t.Fatalf("the WARN line names no device or file:\n%s", out)
	}

	// The disk is fixed and the server restarts: the acknowledged batch is there.
	faultfs.ActivateForTest(filepath.Join(root, "no-such-rules"))
	crash(a)
	a = open(t, sick, Options{Logger: logger})
	if a.Offline() != nil || a.LogEndOffset() < 5 {
		t.Fatalf("after the restart: offline %v, LEO %d", a.Offline(), a.LogEndOffset())
	}
}

// TestENOSPCOnWriteKeepsTheBucketOnline: a full disk is not a media error: the append is
// refused and cut back, the log stays online and accepts appends once space is back.
func TestENOSPCOnWriteKeepsTheBucketOnline(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "bucket-0")
	l := open(t, dir, Options{Logger: discardLogger()})
	mustAppend(t, l, 1, plain(5, 100))
	rules := filepath.Join(t.TempDir(), "faults")
	if err := os.WriteFile(rules, []byte("write "+dir+"/ enospc\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(faultfs.ActivateForTest(rules))
	if _, err := l.Append([]record.Batch{plain(5, 100)}, 2); err == nil {
		t.Fatal("append on a full disk succeeded")
	}
	if l.Offline() != nil || l.LogEndOffset() != 5 {
		t.Fatalf("after ENOSPC: offline %v, LEO %d (want online at 5)", l.Offline(), l.LogEndOffset())
	}
	if err := os.WriteFile(rules, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // the rules are re-read at most every 50 ms
	mustAppend(t, l, 3, plain(5, 100))
	if l.LogEndOffset() != 10 {
		t.Fatalf("LEO %d after space came back, want 10", l.LogEndOffset())
	}
}
