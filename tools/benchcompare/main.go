// Command benchcompare runs the side-by-side benchmark of Strom against Apache Fluss
// (`make bench-fluss`; see docs/benchmarks.md): interleaved rounds on fresh single-node
// servers, medians, a Markdown ratio table on stdout and every sample as JSON.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/stromdb/strom/cmd/strom/bench"
	"github.com/stromdb/strom/cmd/strom/bench/compare"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "benchcompare:", err)
		os.Exit(1)
	}
}

func run() error {
	cfg := bench.DefaultConfig()
	cfg.Rows, cfg.BatchRows, cfg.Buckets, cfg.Concurrency, cfg.Lookups = 1_000_000, 1000, 4, 4, 100_000
	cfg.Table = "cmp"
	var (
		flussJars = flag.String("fluss-jars", ".cache/fluss-0.9.1", "directory of the Fluss server jar and its logging backend")
		java      = flag.String("java", "java", "java binary (17+)")
		jvmFlags  = flag.String("jvm-flags", "", "extra JVM flags for every Fluss JVM, space-separated")
		stromBin  = flag.String("strom", "bin/strom", "strom binary")
		baseBin   = flag.String("strom-base", "", "a second strom binary (e.g. main's build) measured in the same interleaved rounds as system strom-base, to show a branch's effect")
		interval  = flag.Bool("interval-column", true, "also measure Strom with --set log.flush.interval=1s")
		rounds    = flag.Int("rounds", 3, "interleaved rounds (fresh servers each)")
		modes     = flag.String("modes", "scan,update,partial-update,lookup,mixed", "strom bench modes (comma-separated; scan implies append, the others upsert)")
		python    = flag.String("python", ".venv/bin/python", "python with pyfluss; empty skips the pyfluss workload")
		pyScript  = flag.String("py-script", "bench/pyfluss_bench.py", "pyfluss workload script")
		pyRows    = flag.Int("py-rows", 200_000, "rows of the pyfluss workload")
		workDir   = flag.String("work-dir", "", "where servers keep their data and logs (default: a new temp dir)")
		keep      = flag.Bool("keep", false, "keep data directories and logs of good rounds")
		outJSON   = flag.String("json", "", "write samples and summary as JSON here (default WORK-DIR/results.json)")
		outMD     = flag.String("md", "", "also write the Markdown table (with its header line) here")
		only      = flag.String("systems", "", "measure only these systems (comma-separated: fluss, strom, strom-base, strom-1s)")
		limitMiB  = flag.Int64("limit-mib", 1024, "MiB the disk and loopback bandwidth probes write before each server starts (the append and scan shares of the table); 0 skips them")
		commit    = flag.String("commit", "", "commit the strom binary was built from, for the header (default: git rev-parse --short HEAD)")
	)
	flag.IntVar(&cfg.Rows, "rows", cfg.Rows, "rows of the Go-client workloads")
	flag.IntVar(&cfg.LogRows, "log-rows", 0, "rows of the Go-client log-table workloads (append, scan) when not -rows: steady state holds more log rows than keys")
	flag.IntVar(&cfg.BatchRows, "batch", cfg.BatchRows, "rows per request of the Go-client workloads")
	flag.IntVar(&cfg.Buckets, "buckets", cfg.Buckets, "buckets per table")
	flag.IntVar(&cfg.Concurrency, "concurrency", cfg.Concurrency, "requests in flight")
	flag.IntVar(&cfg.Conns, "conns", cfg.Conns, "connections per tablet server the Go-client workers share (0: one per request in flight; 1: one, as the official clients connect)")
	flag.IntVar(&cfg.Lookups, "lookups", cfg.Lookups, "LOOKUP requests")
	flag.IntVar(&cfg.Columns, "columns", cfg.Columns, "columns of the Go-client tables")
	flag.DurationVar(&cfg.MaxDuration, "max-duration", cfg.MaxDuration, "bound of each timed section")
	flag.Parse()

	var goModes []bench.Mode
	for _, s := range strings.Split(*modes, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		m, err := bench.ParseMode(s)
		if err != nil {
			return err
		}
		goModes = append(goModes, m)
	}
	if *workDir == "" {
		d, err := os.MkdirTemp("", "strom-bench-fluss-")
		if err != nil {
			return err
		}
		*workDir = d
	}
	if *outJSON == "" {
		*outJSON = filepath.Join(*workDir, "results.json")
	}
	jarDir, err := filepath.Abs(*flussJars)
	if err != nil {
		return err
	}
	binary, err := filepath.Abs(*stromBin)
	if err != nil {
		return err
	}
	systems := []compare.System{
		compare.FlussSystem("fluss", "Fluss 0.9.1", compare.FlussJVM{Java: *java, JarDir: jarDir, JVMFlags: strings.Fields(*jvmFlags)}),
		compare.StromSystem("strom", "Strom (fsync each write)", binary),
	}
	if *baseBin != "" {
		base, err := filepath.Abs(*baseBin)
		if err != nil {
			return err
		}
		systems = append(systems, compare.StromSystem("strom-base", "Strom base build (fsync each write)", base))
	}
	if *interval {
		systems = append(systems, compare.StromSystem("strom-1s", "Strom (`log.flush.interval=1s`)", binary, "--set", "log.flush.interval=1s"))
	}
	if *only != "" {
		want := map[string]bool{}
		for _, s := range strings.Split(*only, ",") {
			want[strings.TrimSpace(s)] = true
		}
		var kept []compare.System
		for _, s := range systems {
			if want[s.Name] {
				kept = append(kept, s)
			}
		}
		systems = kept
	}
	opts := compare.Options{
		Systems: systems, Rounds: *rounds, WorkDir: *workDir, Keep: *keep,
		Bench: cfg, GoModes: goModes,
		PyRows: *pyRows, Log: os.Stderr, LimitBytes: *limitMiB << 20,
	}
	if *limitMiB <= 0 {
		opts.LimitBytes = -1
	}
	if *python != "" {
		if opts.Python, err = exec.LookPath(*python); err != nil {
			return fmt.Errorf("-python: %w (run `make .venv/.installed`, or pass -python '' to skip pyfluss)", err)
		}
		opts.PyScript = *pyScript
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	// The commit is read before the rounds: a commit made while they run did not build the binaries.
	if *commit == "" {
		out, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output()
		*commit = strings.TrimSpace(string(out))
		if err != nil || *commit == "" {
			*commit = "unknown"
		}
	}
	started := time.Now()
	fmt.Fprintf(os.Stderr, "benchcompare: %d rounds of %d systems, work dir %s\n", *rounds, len(systems), *workDir)
	samples, runErr := compare.Run(ctx, opts)

	sum := compare.Summarize("fluss", samples)
	labels := map[string]string{}
	for _, s := range systems {
		labels[s.Name] = s.Label
	}
	load, _ := os.ReadFile("/proc/loadavg")
	logRows := cfg.LogRows
	if logRows == 0 {
		logRows = cfg.Rows
	}
	header := fmt.Sprintf("Measured %s at commit %s on %s (%d CPUs, load average at the end: %s); "+
		"%d interleaved rounds, medians (min–max); Go client: %d rows × %d columns (%d log rows), batches of %d, %d buckets, %d in flight, %d lookups; pyfluss: %d rows × 4 columns.",
		started.UTC().Format("2006-01-02"), *commit, hostDescription(), runtime.NumCPU(),
		strings.Join(strings.Fields(string(load))[:3], " "), *rounds, cfg.Rows, cfg.Columns, logRows, cfg.BatchRows, cfg.Buckets, cfg.Concurrency, cfg.Lookups, *pyRows)
	var md strings.Builder
	md.WriteString(header + "\n\n" + sum.Markdown(labels))
	for _, s := range samples {
		if s.Error != "" {
			fmt.Fprintf(&md, "\nround %d, %s failed: %s\n", s.Round, s.System, firstLine(s.Error))
		}
	}
	fmt.Print(md.String())
	if *outMD != "" {
		if err := os.WriteFile(*outMD, []byte(md.String()), 0o644); err != nil {
			return err
		}
	}
	out := struct {
		Header  string           `json:"header"`
		Commit  string           `json:"commit"`
		Samples []compare.Sample `json:"samples"`
		Summary compare.Summary  `json:"summary"`
	}{header, *commit, samples, sum}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(*outJSON, b, 0o644); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "benchcompare: results in %s (%s)\n", *outJSON, time.Since(started).Round(time.Second))
	return runErr // a cancelled run still printed and saved what it measured
}

func hostDescription() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return runtime.GOOS
	}
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return runtime.GOOS
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}
