package compare

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"time"
)

// Metric keys of the machine's limits, measured in each (round, system) right before the
// system starts, so that each share below divides by what the machine gave at that time.
const (
	KeyDiskMBps     = "machine.disk_write_mb_per_sec" // sequential write of LimitBytes, then fdatasync
	KeyLoopbackMBps = "machine.loopback_mb_per_sec"   // one TCP stream over 127.0.0.1

	KeyAppendDiskShare    = "go.append.disk_share"   // append MB/s on the wire ÷ KeyDiskMBps
	KeyScanLoopbackShare  = "go.scan.loopback_share" // scan MB/s on the wire ÷ KeyLoopbackMBps
	limitChunk            = 1 << 20
	defaultLimitBytes     = 1 << 30
	defaultLoopbackMaxDur = 2 * time.Second
)

// DiskWriteMBps writes size bytes in 1 MiB writes to a new file in dir, fdatasyncs it and
// returns MB/s (1e6 bytes) over the whole, sync included — the rate a writer that syncs
// what it wrote before acknowledging could reach at best. The file is removed.
func DiskWriteMBps(ctx context.Context, dir string, size int64) (float64, error) {
	f, err := os.CreateTemp(dir, "disk-limit-*")
	if err != nil {
		return 0, fmt.Errorf("disk limit: %w", err)
	}
	defer func() { _ = os.Remove(f.Name()) }()
	defer func() { _ = f.Close() }()
	buf := make([]byte, limitChunk)
	for i := range buf {
		buf[i] = byte(i * 131) // not all zeros, in case the file system or disk compresses
	}
	start := time.Now()
	for written := int64(0); written < size; written += int64(len(buf)) {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		if _, err := f.Write(buf); err != nil {
			return 0, fmt.Errorf("disk limit: write %s: %w", filepath.Base(f.Name()), err)
		}
	}
	if err := f.Sync(); err != nil {
		return 0, fmt.Errorf("disk limit: sync: %w", err)
	}
	return float64(size) / time.Since(start).Seconds() / 1e6, nil
}

// loopbackMBps sends size bytes (or for at most maxDur) over one TCP connection on
// 127.0.0.1 in 1 MiB writes and returns MB/s as the receiver counted it.
func loopbackMBps(ctx context.Context, size int64, maxDur time.Duration) (float64, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("loopback limit: %w", err)
	}
	defer func() { _ = ln.Close() }()
	type result struct {
		n   int64
		dur time.Duration
		err error
	}
	got := make(chan result, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- result{err: err}
			return
		}
		defer func() { _ = c.Close() }()
		start := time.Now()
		n, err := io.CopyBuffer(io.Discard, c, make([]byte, limitChunk))
		got <- result{n: n, dur: time.Since(start), err: err}
	}()
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", ln.Addr().String())
	if err != nil {
		return 0, fmt.Errorf("loopback limit: %w", err)
	}
	buf := make([]byte, limitChunk)
	deadline := time.Now().Add(maxDur)
	for sent := int64(0); sent < size && time.Now().Before(deadline) && ctx.Err() == nil; sent += int64(len(buf)) {
		if _, err := c.Write(buf); err != nil {
			_ = c.Close()
			return 0, fmt.Errorf("loopback limit: write: %w", err)
		}
	}
	if err := c.Close(); err != nil {
		return 0, fmt.Errorf("loopback limit: close: %w", err)
	}
	r := <-got
	if r.err != nil && !errors.Is(r.err, io.EOF) {
		return 0, fmt.Errorf("loopback limit: read: %w", r.err)
	}
	if r.dur <= 0 || r.n == 0 {
		return 0, errors.New("loopback limit: nothing received")
	}
	return float64(r.n) / r.dur.Seconds() / 1e6, nil
}

// measureLimits records the machine's disk and loopback bandwidth in m. A failure is
// logged and leaves the keys out: the limits give context, the comparison does not need them.
func measureLimits(ctx context.Context, o Options, dir string, m map[string]float64) {
	if o.LimitBytes < 0 {
		return
	}
	size := o.LimitBytes
	if size == 0 {
		size = defaultLimitBytes
	}
	if v, err := DiskWriteMBps(ctx, dir, size); err != nil {
		fmt.Fprintf(o.Log, "   %v\n", err)
	} else {
		m[KeyDiskMBps] = v
	}
	if v, err := loopbackMBps(ctx, 4*size, defaultLoopbackMaxDur); err != nil {
		fmt.Fprintf(o.Log, "   %v\n", err)
	} else {
		m[KeyLoopbackMBps] = v
	}
	fmt.Fprintf(o.Log, "   machine: disk %.0f MB/s sequential write with fdatasync, loopback %.0f MB/s\n", m[KeyDiskMBps], m[KeyLoopbackMBps])
}

// addShares derives the shares of the machine's limits from the Go workloads' wire rates.
func addShares(m map[string]float64) {
	share := func(key, rate, limit string) {
		if r, l := m[rate], m[limit]; r > 0 && l > 0 {
			m[key] = r / l
		}
	}
	share(KeyAppendDiskShare, "go.append.mb_per_sec", KeyDiskMBps)
	share(KeyScanLoopbackShare, "go.scan.mb_per_sec", KeyLoopbackMBps)
}
