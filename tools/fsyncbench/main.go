// Command fsyncbench measures, on the disk under -dir, N writers each appending to and
// fdatasyncing its own file (Strom's per-bucket segments) against the same writers handing
// the same records to one group-commit journal (`make bench-fsync`; see docs/benchmarks.md).
// It prints a Markdown table on stdout and writes every sample as JSON.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/stromdb/strom/cmd/strom/bench/fsyncbench"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "fsyncbench:", err)
		os.Exit(1)
	}
}

func run() error {
	var (
		dir      = flag.String("dir", ".cache", "directory on the disk under test (fresh files per run are created and removed under it)")
		writers  = flag.String("writers", "1,4,16,64", "concurrent writers, comma-separated")
		records  = flag.String("record-bytes", "4096,131072", "bytes per append, comma-separated")
		layouts  = flag.String("layouts", "files,journal,journal+segments", "layouts, comma-separated")
		duration = flag.Duration("duration", time.Second, "length of each run")
		rounds   = flag.Int("rounds", 2, "interleaved rounds")
		segSync  = flag.Duration("segment-sync", time.Second, "journal+segments: interval of the background segment syncs")
		journals = flag.Int("journals", 1, "journal files the journal layouts stripe the writers over (writer w to journal w mod K); 1 is the design of issue 26")
		refMiB   = flag.Int64("reference-mib", 512, "MiB of the disk's plain fdatasync'd sequential write measured before each round; 0 skips it")
		outJSON  = flag.String("json", "", "write the samples as JSON here")
		outMD    = flag.String("md", "", "also write the Markdown table here")
	)
	flag.Parse()
	cfg := fsyncbench.Config{Dir: *dir, Duration: *duration, Rounds: *rounds, SegmentSyncEvery: *segSync, Journals: *journals,
		ReferenceBytes: *refMiB << 20, Log: os.Stderr}
	var err error
	if cfg.Writers, err = ints(*writers); err != nil {
		return fmt.Errorf("-writers: %w", err)
	}
	if cfg.RecordBytes, err = ints(*records); err != nil {
		return fmt.Errorf("-record-bytes: %w", err)
	}
	for _, l := range strings.Split(*layouts, ",") {
		l := fsyncbench.Layout(strings.TrimSpace(l))
		known := false
		for _, k := range fsyncbench.Layouts {
			known = known || k == l
		}
		if !known {
			return fmt.Errorf("-layouts: unknown layout %q (want %v)", l, fsyncbench.Layouts)
		}
		cfg.Layouts = append(cfg.Layouts, l)
	}
	if err := os.MkdirAll(*dir, 0o755); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	started := time.Now()
	res, runErr := fsyncbench.Run(ctx, cfg)
	load, _ := os.ReadFile("/proc/loadavg")
	md := fmt.Sprintf("Measured %s in %s, %d interleaved rounds of %s per run, %d journal file(s), segments of journal+segments synced every %s, load average at the end %s; medians (min–max).\n\n",
		started.UTC().Format("2006-01-02 15:04 UTC"), *dir, *rounds, *duration, max(*journals, 1), *segSync, strings.Join(strings.Fields(string(load))[:3], " ")) +
		fsyncbench.Markdown(res.Samples, cfg.Layouts, res.ReferenceMBps)
	fmt.Print(md)
	if *outMD != "" {
		if err := os.WriteFile(*outMD, []byte(md), 0o644); err != nil {
			return err
		}
	}
	if *outJSON != "" {
		b, err := json.MarshalIndent(res, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(*outJSON, b, 0o644); err != nil {
			return err
		}
	}
	return runErr
}

func ints(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || v < 1 {
			return nil, fmt.Errorf("%q: want positive integers separated by commas", s)
		}
		out = append(out, v)
	}
	return out, nil
}
