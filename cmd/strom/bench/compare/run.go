package compare

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/stromdb/strom/cmd/strom/bench"
)

// Options configure Run.
type Options struct {
	Systems []System // measured in this order within each round
	Rounds  int
	WorkDir string // one directory per (round, system) is created under it
	Keep    bool   // keep the data directories and logs (they are removed after a good round)

	Bench   bench.Config // Go-client workload; Bootstrap is filled in per server
	GoModes []bench.Mode // e.g. scan (with append), update (with upsert), lookup

	Python   string // python interpreter with pyfluss; empty skips the pyfluss workload
	PyScript string // bench/pyfluss_bench.py
	PyRows   int
	PyArgs   []string // extra arguments for the script

	// LimitBytes is how much the disk and loopback bandwidth probes move before each system
	// starts (0: 1 GiB to disk, up to 4 GiB or 2 s over loopback; negative: not measured).
	LimitBytes int64

	ReadyTimeout time.Duration // cold start bound
	StopGrace    time.Duration // SIGTERM → SIGKILL
	Log          io.Writer     // progress lines
}

// Run measures every system Rounds times, interleaved (round 1: A, B, …; round 2: A, B, …),
// each time on a fresh server it stops afterwards. A failed measurement is recorded in its
// Sample and the run goes on; a cancelled ctx stops everything at once. Every process
// started is stopped before Run returns.
func Run(ctx context.Context, o Options) ([]Sample, error) {
	if o.Rounds < 1 || len(o.Systems) == 0 {
		return nil, fmt.Errorf("compare: need at least one round and one system")
	}
	withDefaults(&o.ReadyTimeout, &o.StopGrace, &o.Log)
	var samples []Sample
	for round := 1; round <= o.Rounds; round++ {
		for _, sys := range o.Systems {
			if err := ctx.Err(); err != nil {
				return samples, err
			}
			fmt.Fprintf(o.Log, "== round %d/%d: %s\n", round, o.Rounds, sys.Label)
			s := runOne(ctx, o, sys, round)
			if s.Error != "" {
				fmt.Fprintf(o.Log, "   FAILED: %s\n", s.Error)
			}
			samples = append(samples, s)
		}
	}
	return samples, ctx.Err()
}

// runOne starts sys fresh, measures it and stops it.
func runOne(ctx context.Context, o Options, sys System, round int) Sample {
	s := Sample{System: sys.Name, Round: round, Metrics: map[string]float64{}}
	if err := inFreshDir(filepath.Join(o.WorkDir, fmt.Sprintf("round%d-%s", round, sys.Name)), o.Keep, o.StopGrace, o.Log,
		func(dir string, g *group) error { return measure(ctx, o, sys, dir, g, s.Metrics) }); err != nil {
		s.Error = err.Error()
	}
	return s
}

// inFreshDir runs f in dir, emptied first, with a process group that is stopped when f
// returns (also on panic and cancellation). The directory, with the servers' data and logs, is
// removed after success unless keep, and kept and named in log after a failure.
func inFreshDir(dir string, keep bool, grace time.Duration, log io.Writer, f func(dir string, g *group) error) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	g := &group{}
	defer g.stop(grace)
	err := f(dir, g)
	g.stop(grace)
	if err != nil {
		fmt.Fprintf(log, "   logs kept in %s\n", dir)
	} else if !keep {
		_ = os.RemoveAll(dir)
	}
	return err
}

// withDefaults fills the bounds and the log a runner leaves unset.
func withDefaults(ready, grace *time.Duration, log *io.Writer) {
	if *ready == 0 {
		*ready = 2 * time.Minute
	}
	if *grace == 0 {
		*grace = 15 * time.Second
	}
	if *log == nil {
		*log = io.Discard
	}
}

func measure(ctx context.Context, o Options, sys System, dir string, g *group, m map[string]float64) error {
	measureLimits(ctx, o, dir, m)
	start := time.Now()
	bootstrap, err := sys.Start(ctx, dir, g)
	if err != nil {
		return err
	}
	ready, err := waitReady(ctx, bootstrap, g, start, o.ReadyTimeout)
	if err != nil {
		return fmt.Errorf("start: %w", err)
	}
	m[KeyColdStart] = ready.Seconds()
	fmt.Fprintf(o.Log, "   ready in %.2fs at %s\n", ready.Seconds(), bootstrap)

	if len(o.GoModes) > 0 {
		cfg := o.Bench
		cfg.Bootstrap = bootstrap
		cfg.ServerCPU = g.cpu
		_, err := bench.Run(ctx, cfg, o.GoModes, func(r bench.Result) {
			fmt.Fprintf(o.Log, "   go %s\n", r)
			addGoResult(m, r)
			addServerCPU(m, r)
		})
		if err != nil {
			return fmt.Errorf("go workload: %w (server: %v)", err, g.failed())
		}
		addShares(m)
	}
	if o.Python != "" {
		before := readCPU(g)
		py, err := runPython(ctx, o, bootstrap, filepath.Join(dir, "pyfluss.log"))
		if err != nil {
			return fmt.Errorf("pyfluss workload: %w (server: %v)", err, g.failed())
		}
		// The script runs append, scan and upsert of PyRows rows each, and is timed as a whole.
		if cpu, ok := before.since(readCPU(g)); ok && o.PyRows > 0 {
			m[KeyPyServerCPUPerMRows] = cpu.Seconds() / float64(3*o.PyRows) * 1e6
			fmt.Fprintf(o.Log, "   pyfluss: server CPU %.2fs\n", cpu.Seconds())
		}
		for k, v := range py {
			m["py."+k+".rows_per_sec"] = v
			fmt.Fprintf(o.Log, "   pyfluss %s %.0f rows/s\n", k, v)
		}
	}
	if err := g.failed(); err != nil {
		return err
	}
	if cpu, err := g.cpu(); err == nil {
		m[KeyRoundServerCPU] = cpu.Seconds()
	}
	rss, peak, err := g.memory()
	if err != nil {
		return fmt.Errorf("rss: %w", err)
	}
	m[KeyRSS], m[KeyPeakRSS] = float64(rss)/(1<<20), float64(peak)/(1<<20)
	fmt.Fprintf(o.Log, "   RSS %.0f MiB (peak %.0f MiB)\n", m[KeyRSS], m[KeyPeakRSS])
	if l, err := loadAverage(); err == nil {
		m[KeyLoad] = l
	}
	return nil
}

// addGoResult records a bench result as go.<mode>.<field> metrics.
func addGoResult(m map[string]float64, r bench.Result) {
	p := "go." + string(r.Mode) + "."
	m[p+"rows_per_sec"] = r.RowsPerSec
	m[p+"mb_per_sec"] = r.MBPerSec
	m[p+"qps"] = r.QPS
	m[p+"p50_ms"] = r.P50Ms
	m[p+"p99_ms"] = r.P99Ms
	if r.Truncated {
		m[p+"truncated"] = 1
	}
}

// runPython runs the pyfluss workload script, which prints one JSON object mapping workload
// names to rows/s on its last stdout line.
func runPython(ctx context.Context, o Options, bootstrap, logPath string) (map[string]float64, error) {
	args := append([]string{o.PyScript, "--bootstrap", bootstrap, "--rows", strconv.Itoa(o.PyRows)}, o.PyArgs...)
	cmd := exec.CommandContext(ctx, o.Python, args...)
	var out bytes.Buffer
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	cmd.Stdout, cmd.Stderr = &out, logf
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil {
		tail, _ := os.ReadFile(logPath)
		return nil, fmt.Errorf("%s: %w\n%s", strings.Join(cmd.Args, " "), err, lastLines(string(tail), 15))
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	var res map[string]float64
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &res); err != nil {
		return nil, fmt.Errorf("parse output %q: %w", lines[len(lines)-1], err)
	}
	return res, nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// loadAverage returns the 1-minute load average.
func loadAverage() (float64, error) {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0, err
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0, fmt.Errorf("empty /proc/loadavg")
	}
	return strconv.ParseFloat(f[0], 64)
}
