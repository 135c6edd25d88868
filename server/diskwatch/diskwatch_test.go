package diskwatch

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestOldestSyncInFlight(t *testing.T) {
	if _, ok := Oldest(time.Now()); ok {
		t.Fatal("a sync in flight before any began")
	}
	endA := BeginSync("/d/a")
	time.Sleep(20 * time.Millisecond)
	endB := BeginSync("/d/b")
	s, ok := Oldest(time.Now())
	if !ok || s.Path != "/d/a" || s.For < 20*time.Millisecond {
		t.Fatalf("oldest = %+v %v, want /d/a in flight for at least 20ms", s, ok)
	}
	endA()
	if s, _ := Oldest(time.Now()); s.Path != "/d/b" {
		t.Fatalf("after /d/a ended the oldest is %q, want /d/b", s.Path)
	}
	endB()
	if _, ok := Oldest(time.Now()); ok {
		t.Fatal("a sync still in flight after both ended")
	}
}

func TestIOErrorsByDeviceAndErrno(t *testing.T) {
	f := filepath.Join(t.TempDir(), "seg.log")
	if err := os.WriteFile(f, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	dev := Device(f)
	if dev == "unknown" || !strings.Contains(dev, ":") {
		t.Fatalf("Device(%s) = %q", f, dev)
	}
	IOError(f, "sync", &os.PathError{Op: "sync", Path: f, Err: syscall.EIO})
	IOError(f, "sync", &os.PathError{Op: "sync", Path: f, Err: syscall.EIO})
	IOError(f, "append", fmt.Errorf("wrapped: %w", syscall.ENOSPC))
	reg := prometheus.NewRegistry()
	reg.MustRegister(Collector())
	want := fmt.Sprintf(`
# HELP strom_disk_io_errors_total Failed log-store file operations by device (major:minor), operation and errno.
# TYPE strom_disk_io_errors_total counter
strom_disk_io_errors_total{device=%q,errno="ENOSPC",op="append"} 1
strom_disk_io_errors_total{device=%q,errno="EIO",op="sync"} 2
`, dev, dev)
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "strom_disk_io_errors_total"); err != nil {
		t.Fatal(err)
	}
	if !IsMediaError(&os.PathError{Err: syscall.EIO}) || IsMediaError(syscall.ENOSPC) {
		t.Fatal("IsMediaError must be true for EIO only")
	}
}
