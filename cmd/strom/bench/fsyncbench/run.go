package fsyncbench

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/stromdb/strom/cmd/strom/bench/compare"
)

// Layout names one way of making appends durable.
type Layout string

// The layouts measured; see the package comment.
const (
	LayoutFiles           Layout = "files"
	LayoutJournal         Layout = "journal"
	LayoutJournalSegments Layout = "journal+segments"
)

// Layouts lists every layout in the order a round measures them.
var Layouts = []Layout{LayoutFiles, LayoutJournal, LayoutJournalSegments}

// Config describes the matrix: every layout × writer count × record size, Rounds times,
// interleaved (round 1 measures every cell once, then round 2 …) so that a drift of the
// shared machine hits every cell alike.
type Config struct {
	Dir              string        // a directory on the disk under test; each run uses a fresh subdirectory
	Writers          []int         // concurrent writers, e.g. 1, 4, 16, 64
	RecordBytes      []int         // bytes each append carries
	Layouts          []Layout      // default Layouts
	Duration         time.Duration // length of one run
	Rounds           int
	SegmentSyncEvery time.Duration // LayoutJournalSegments: interval of the background segment syncs
	Journals         int           // journal files the journal layouts stripe the writers over; 0 or 1: one (the design measured)
	Log              io.Writer     // progress lines; nil discards them

	// ReferenceBytes, when positive, is written before each round as the disk's plain
	// fdatasync'd sequential write (compare.DiskWriteMBps, the probe of `make bench-fluss`),
	// the best any fsync-before-ack design could reach.
	ReferenceBytes int64
}

// Result is everything Run measured.
type Result struct {
	Samples       []Sample  `json:"samples"`
	ReferenceMBps []float64 `json:"reference_mb_per_sec"` // one per round
}

// Sample is what one run of one cell measured.
type Sample struct {
	Layout      Layout  `json:"layout"`
	Writers     int     `json:"writers"`
	RecordBytes int     `json:"record_bytes"`
	Round       int     `json:"round"`
	Journals    int     `json:"journals,omitempty"` // journal files of a journal layout
	Appends     int64   `json:"appends"`            // acknowledged (durable) appends
	Bytes       int64   `json:"bytes"`              // their payload bytes, each counted once
	Syncs       int64   `json:"syncs"`              // fdatasync calls, background ones included
	Seconds     float64 `json:"seconds"`            // wall time of the run
	CPUSeconds  float64 `json:"cpu_s"`              // user + system CPU of this process over the run
	P50Ms       float64 `json:"p50_ms"`             // append latency, submit to durable
	P99Ms       float64 `json:"p99_ms"`
}

// MBps is the acknowledged payload rate in MB/s (1e6 bytes).
func (s Sample) MBps() float64 { return float64(s.Bytes) / s.Seconds / 1e6 }

// SyncsPerSec is the fdatasync rate.
func (s Sample) SyncsPerSec() float64 { return float64(s.Syncs) / s.Seconds }

// Run measures every cell of cfg Rounds times and returns the samples in the order taken.
// A failed run ends the whole measurement with its error (and what was measured before it);
// ctx cancels it between writes.
func Run(ctx context.Context, cfg Config) (Result, error) {
	if cfg.Rounds < 1 || cfg.Duration <= 0 || len(cfg.Writers) == 0 || len(cfg.RecordBytes) == 0 {
		return Result{}, fmt.Errorf("fsyncbench: need rounds, a duration, writer counts and record sizes")
	}
	if len(cfg.Layouts) == 0 {
		cfg.Layouts = Layouts
	}
	if cfg.SegmentSyncEvery <= 0 {
		cfg.SegmentSyncEvery = time.Second
	}
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	var out Result
	for round := 1; round <= cfg.Rounds; round++ {
		if cfg.ReferenceBytes > 0 {
			ref, err := compare.DiskWriteMBps(ctx, cfg.Dir, cfg.ReferenceBytes)
			if err != nil {
				return out, fmt.Errorf("fsyncbench: %w", err)
			}
			fmt.Fprintf(cfg.Log, "round %d reference: %.0f MB/s sequential write with fdatasync\n", round, ref)
			out.ReferenceMBps = append(out.ReferenceMBps, ref)
		}
		for _, size := range cfg.RecordBytes {
			for _, n := range cfg.Writers {
				for _, layout := range cfg.Layouts {
					s, err := runOne(ctx, cfg, layout, n, size)
					if err != nil {
						return out, fmt.Errorf("fsyncbench: %s, %d writers, %d-byte records: %w", layout, n, size, err)
					}
					s.Round = round
					fmt.Fprintf(cfg.Log, "round %d %-16s writers %3d record %7d B: %7.1f MB/s %7.0f fdatasync/s p50 %.2f ms p99 %.2f ms\n",
						round, layout, n, size, s.MBps(), s.SyncsPerSec(), s.P50Ms, s.P99Ms)
					out.Samples = append(out.Samples, s)
				}
			}
		}
	}
	return out, nil
}

// runOne measures one cell in a fresh directory, removed afterwards.
func runOne(ctx context.Context, cfg Config, layout Layout, writers, size int) (Sample, error) {
	dir, err := os.MkdirTemp(cfg.Dir, "fsyncbench-*")
	if err != nil {
		return Sample{}, err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	files := make([]*os.File, writers)
	for i := range files {
		if files[i], err = os.Create(filepath.Join(dir, fmt.Sprintf("segment-%03d", i))); err != nil {
			return Sample{}, err
		}
		defer files[i].Close()
	}
	// Journal layouts: cfg.Journals journal files, writer w committing to journal w mod K.
	var journals []*os.File
	if layout != LayoutFiles {
		journals = make([]*os.File, max(cfg.Journals, 1))
		for i := range journals {
			if journals[i], err = os.Create(filepath.Join(dir, fmt.Sprintf("journal-%02d", i))); err != nil {
				return Sample{}, err
			}
			defer journals[i].Close()
		}
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.Duration)
	defer cancel()
	record := make([]byte, size)
	for i := range record {
		record[i] = byte(i * 131) // not all zeros, in case the file system or disk compresses
	}

	var (
		st      stats
		commits []*committer
		bgDone  = make(chan error, 1)
		workers sync.WaitGroup
	)
	for _, j := range journals {
		c := newCommitter(j, &st)
		go c.run()
		commits = append(commits, c)
	}
	if layout == LayoutJournalSegments {
		go func() { bgDone <- syncSegments(ctx, files, cfg.SegmentSyncEvery, &st) }()
	} else {
		bgDone <- nil
	}
	lat := make([][]time.Duration, writers)
	errs := make([]error, writers)
	cpu0, t0 := processCPU(), time.Now()
	for w := range writers {
		workers.Add(1)
		go func() {
			defer workers.Done()
			var c *committer
			if len(commits) > 0 {
				c = commits[w%len(commits)]
			}
			lat[w], errs[w] = write(ctx, layout, files[w], c, record, &st)
		}()
	}
	workers.Wait()
	elapsed, cpu := time.Since(t0), processCPU()-cpu0
	for _, c := range commits {
		c.close()
	}
	cancel()
	if err := <-bgDone; err != nil {
		return Sample{}, err
	}
	for _, err := range errs {
		if err != nil {
			return Sample{}, err
		}
	}
	all := slices.Concat(lat...)
	slices.Sort(all)
	s := Sample{Layout: layout, Writers: writers, RecordBytes: size, Journals: len(journals), Seconds: elapsed.Seconds(), CPUSeconds: cpu.Seconds(),
		Appends: int64(len(all)), Bytes: int64(len(all)) * int64(size), Syncs: st.syncs()}
	if len(all) > 0 {
		s.P50Ms = quantileMs(all, 0.50)
		s.P99Ms = quantileMs(all, 0.99)
	}
	return s, nil
}

// write is one writer: appends until ctx ends, each acknowledged only once it is durable
// under layout; it returns each append's latency.
func write(ctx context.Context, layout Layout, own *os.File, commit *committer, record []byte, st *stats) ([]time.Duration, error) {
	var lat []time.Duration
	for ctx.Err() == nil {
		t0 := time.Now()
		switch layout {
		case LayoutFiles:
			if _, err := own.Write(record); err != nil {
				return lat, err
			}
			if err := fdatasync(own); err != nil {
				return lat, err
			}
			st.addSync()
		case LayoutJournalSegments:
			if _, err := own.Write(record); err != nil { // into the page cache; synced in the background
				return lat, err
			}
			fallthrough
		case LayoutJournal:
			if err := commit.append(record); err != nil {
				return lat, err
			}
		}
		lat = append(lat, time.Since(t0))
	}
	return lat, nil
}

// syncSegments fdatasyncs every file once per interval until ctx ends, as a journal design
// syncs the bucket segments behind its checkpoint.
func syncSegments(ctx context.Context, files []*os.File, every time.Duration, st *stats) error {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		for _, f := range files {
			if err := fdatasync(f); err != nil {
				return err
			}
			st.addSync()
		}
	}
}

// stats counts fdatasync calls from every goroutine of a run.
type stats struct {
	mu sync.Mutex
	n  int64
}

func (s *stats) addSync() {
	s.mu.Lock()
	s.n++
	s.mu.Unlock()
}

func (s *stats) syncs() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

func fdatasync(f *os.File) error {
	for {
		err := syscall.Fdatasync(int(f.Fd()))
		if err != syscall.EINTR {
			return err
		}
	}
}

// processCPU is the user plus system CPU time of this process so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// quantileMs returns the q-quantile (nearest rank) of sorted latencies, in milliseconds.
func quantileMs(sorted []time.Duration, q float64) float64 {
	i := int(q*float64(len(sorted))+0.5) - 1
	i = max(0, min(i, len(sorted)-1))
	return float64(sorted[i]) / 1e6
}
