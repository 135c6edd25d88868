// Package diskwatch keeps track of how the process's disks behave: which fdatasync calls
// are in flight and for how long, and which file operations failed with which errno, per
// device. The log store reports to it; the control plane asks it whether a sync has stalled
// beyond log.flush.max-stall-time (a tablet server whose disk stalls leaves the cluster,
// docs/cluster.md, "Gray failures"); the metrics export it.
//
// Its state is process-wide, like the disks: a process holds one tablet server, so one
// stalled disk concerns all of it. (Tests that run several tablet servers in one process
// share it.)
package diskwatch

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sys/unix"
)

// inflight is one sync that has not returned.
type inflight struct {
	path  string
	start time.Time
}

// ioErrorKey groups failures for the metric.
type ioErrorKey struct{ device, op, errno string }

var state struct {
	mu       sync.Mutex
	next     uint64
	syncs    map[uint64]inflight
	ioErrors map[ioErrorKey]uint64
	stalls   uint64 // syncs that ran longer than the stall bound asked last (StallsCounted)
}

func init() {
	state.syncs = make(map[uint64]inflight)
	state.ioErrors = make(map[ioErrorKey]uint64)
}

// BeginSync records that an fdatasync of path starts now; call the returned function when
// it returns.
func BeginSync(path string) (end func()) {
	state.mu.Lock()
	state.next++
	id := state.next
	state.syncs[id] = inflight{path: path, start: time.Now()}
	state.mu.Unlock()
	return func() {
		state.mu.Lock()
		delete(state.syncs, id)
		state.mu.Unlock()
	}
}

// Stall describes the oldest sync in flight.
type Stall struct {
	Path string        // the file being synced
	For  time.Duration // how long it has been in flight
}

// Oldest returns the sync that has been in flight longest, if any.
func Oldest(now time.Time) (Stall, bool) {
	state.mu.Lock()
	defer state.mu.Unlock()
	var s Stall
	found := false
	for _, f := range state.syncs {
		if d := now.Sub(f.start); !found || d > s.For {
			s, found = Stall{Path: f.path, For: d}, true
		}
	}
	return s, found
}

// CountStall adds one to the number of stalls reported by the metric (the control plane
// calls it once per stall it acts on).
func CountStall() {
	state.mu.Lock()
	state.stalls++
	state.mu.Unlock()
}

// IOError records that op on the file at path failed with err.
func IOError(path, op string, err error) {
	k := ioErrorKey{device: Device(path), op: op, errno: errnoName(err)}
	state.mu.Lock()
	state.ioErrors[k]++
	state.mu.Unlock()
}

// Device names the device holding path as "major:minor" (as /proc/self/mountinfo and lsblk
// show it), or "unknown" when path cannot be stat'ed.
func Device(path string) string {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return "unknown"
	}
	return fmt.Sprintf("%d:%d", unix.Major(st.Dev), unix.Minor(st.Dev))
}

func errnoName(err error) string {
	var errno syscall.Errno
	switch {
	case errors.As(err, &errno) && errno == syscall.EIO:
		return "EIO"
	case errors.As(err, &errno) && errno == syscall.ENOSPC:
		return "ENOSPC"
	case errors.As(err, &errno):
		return fmt.Sprintf("errno_%d", int(errno))
	case errors.Is(err, os.ErrClosed):
		return "closed"
	}
	return "other"
}

// IsMediaError reports whether err says the device failed the operation (EIO), as opposed
// to a full disk or a caller's mistake: the data of that file can no longer be trusted.
func IsMediaError(err error) bool { return errors.Is(err, syscall.EIO) }

// Collector exports the package's state:
//
//	strom_disk_sync_in_flight_max_seconds   how long the oldest fdatasync in flight has run
//	strom_disk_sync_stalls_total            stalls beyond log.flush.max-stall-time acted on
//	strom_disk_io_errors_total{device,op,errno}  failed log-store file operations
func Collector() prometheus.Collector { return collector{} }

type collector struct{}

var (
	inFlightDesc = prometheus.NewDesc("strom_disk_sync_in_flight_max_seconds",
		"How long the oldest fdatasync of a log segment still in flight has been running (0: none).", nil, nil)
	stallsDesc = prometheus.NewDesc("strom_disk_sync_stalls_total",
		"fdatasync calls that ran past log.flush.max-stall-time and made the tablet server leave the cluster.", nil, nil)
	ioErrorsDesc = prometheus.NewDesc("strom_disk_io_errors_total",
		"Failed log-store file operations by device (major:minor), operation and errno.", []string{"device", "op", "errno"}, nil)
)

func (collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- inFlightDesc
	ch <- stallsDesc
	ch <- ioErrorsDesc
}

func (collector) Collect(ch chan<- prometheus.Metric) {
	var oldest float64
	if s, ok := Oldest(time.Now()); ok {
		oldest = s.For.Seconds()
	}
	ch <- prometheus.MustNewConstMetric(inFlightDesc, prometheus.GaugeValue, oldest)
	state.mu.Lock()
	stalls := state.stalls
	keys := make([]ioErrorKey, 0, len(state.ioErrors))
	counts := make(map[ioErrorKey]uint64, len(state.ioErrors))
	for k, n := range state.ioErrors {
		keys = append(keys, k)
		counts[k] = n
	}
	state.mu.Unlock()
	ch <- prometheus.MustNewConstMetric(stallsDesc, prometheus.CounterValue, float64(stalls))
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		return a.device+a.op+a.errno < b.device+b.op+b.errno
	})
	for _, k := range keys {
		ch <- prometheus.MustNewConstMetric(ioErrorsDesc, prometheus.CounterValue, float64(counts[k]), k.device, k.op, k.errno)
	}
}
