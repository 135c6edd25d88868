package compare

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

// Client is a benchmark client measured as a process of its own, so that its CPU time
// (user+system from the kernel's rusage) is separate from the server's and the runner's.
// It prints one JSON object per workload on stdout (see ParseClientOutput).
type Client struct {
	Name  string // key in results ("go", "java", ...)
	Label string // column header
	// Argv returns the command line that runs the client's workloads against bootstrap.
	Argv func(bootstrap string) []string
	// NoRatio leaves out the subject ÷ this client column (for a reference such as the
	// wire-level `strom bench`, which sends pre-encoded requests and is no client to match).
	NoRatio bool
}

// ClientOptions configure RunClients.
type ClientOptions struct {
	Servers []System // each client is measured against each server
	Clients []Client
	Rounds  int
	WorkDir string // one directory per (round, server, client)
	Keep    bool   // keep data directories and logs of good runs

	ClientTimeout time.Duration // bound of one client process
	ReadyTimeout  time.Duration
	StopGrace     time.Duration
	Log           io.Writer
}

// ClientSample is what one client process measured against one fresh server.
type ClientSample struct {
	Server string `json:"server"`
	Sample        // System is the client's name
}

// Metric keys of a client process as a whole (workload metrics are "<mode>.<field>").
const (
	KeyProcessCPU    = "process.cpu_s"      // user+system time of the whole client process
	KeyProcessWall   = "process.wall_s"     // its wall-clock time, start-up included
	KeyProcessMaxRSS = "process.maxrss_mib" // its peak resident memory
)

// RunClients measures every client against every server Rounds times, each run on a fresh
// server stopped afterwards. The clients' order rotates by round so that none always runs
// first (on a shared machine, the first run of a round tends to see a different load). A
// failed run is recorded in its sample and the benchmark goes on; a cancelled ctx stops it.
func RunClients(ctx context.Context, o ClientOptions) ([]ClientSample, error) {
	if o.Rounds < 1 || len(o.Servers) == 0 || len(o.Clients) == 0 {
		return nil, fmt.Errorf("compare: need a round, a server and a client")
	}
	withDefaults(&o.ReadyTimeout, &o.StopGrace, &o.Log)
	if o.ClientTimeout == 0 {
		o.ClientTimeout = 15 * time.Minute
	}
	var samples []ClientSample
	for round := 1; round <= o.Rounds; round++ {
		for _, srv := range o.Servers {
			for i := range o.Clients {
				cl := o.Clients[(i+round-1)%len(o.Clients)]
				if err := ctx.Err(); err != nil {
					return samples, err
				}
				fmt.Fprintf(o.Log, "== round %d/%d: %s on %s\n", round, o.Rounds, cl.Label, srv.Label)
				s := runClientOnce(ctx, o, srv, cl, round)
				if s.Error != "" {
					fmt.Fprintf(o.Log, "   FAILED: %s\n", s.Error)
				}
				samples = append(samples, s)
			}
		}
	}
	return samples, ctx.Err()
}

func runClientOnce(ctx context.Context, o ClientOptions, srv System, cl Client, round int) ClientSample {
	s := ClientSample{Server: srv.Name, Sample: Sample{System: cl.Name, Round: round, Metrics: map[string]float64{}}}
	if err := inFreshDir(filepath.Join(o.WorkDir, fmt.Sprintf("round%d-%s-%s", round, srv.Name, cl.Name)), o.Keep, o.StopGrace, o.Log,
		func(dir string, g *group) error { return measureClient(ctx, o, srv, cl, dir, g, s.Metrics) }); err != nil {
		s.Error = err.Error()
	}
	return s
}

func measureClient(ctx context.Context, o ClientOptions, srv System, cl Client, dir string, g *group, m map[string]float64) error {
	start := time.Now()
	bootstrap, err := srv.Start(ctx, dir, g)
	if err != nil {
		return err
	}
	if _, err := waitReady(ctx, bootstrap, g, start, o.ReadyTimeout); err != nil {
		return fmt.Errorf("start: %w", err)
	}
	cctx, cancel := context.WithTimeout(ctx, o.ClientTimeout)
	defer cancel()
	argv := cl.Argv(bootstrap)
	cmd := exec.CommandContext(cctx, argv[0], argv[1:]...)
	logPath := filepath.Join(dir, cl.Name+"-client.log")
	logf, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer logf.Close()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = io.MultiWriter(&out, logf), logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	cmd.WaitDelay = 5 * time.Second
	t0 := time.Now()
	runErr := cmd.Run()
	wall := time.Since(t0)
	printed := out.String()
	// What the client printed before failing still counts, as in Run.
	res, parseErr := ParseClientOutput(strings.NewReader(printed))
	for k, v := range res {
		m[k] = v
	}
	for _, line := range strings.Split(strings.TrimSpace(printed), "\n") {
		if strings.HasPrefix(line, "{") {
			fmt.Fprintf(o.Log, "   %s\n", line)
		}
	}
	if runErr != nil {
		tail, _ := os.ReadFile(logPath)
		return fmt.Errorf("%s client: %w (server: %v)\n%s", cl.Name, runErr, g.failed(), lastLines(string(tail), 15))
	}
	if parseErr != nil {
		return fmt.Errorf("%s client output: %w", cl.Name, parseErr)
	}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		m[KeyProcessCPU] = time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
		m[KeyProcessMaxRSS] = float64(ru.Maxrss) / 1024 // kilobytes on Linux
	}
	m[KeyProcessWall] = wall.Seconds()
	fmt.Fprintf(o.Log, "   process: %.1f s CPU in %.1f s, peak RSS %.0f MiB\n", m[KeyProcessCPU], m[KeyProcessWall], m[KeyProcessMaxRSS])
	return g.failed()
}

// clientLine is the part of a client's JSON line the comparison uses. tools/javabench,
// package goclient and `strom bench -json` all print these names.
type clientLine struct {
	Mode       string   `json:"mode"`
	Rows       *float64 `json:"rows"`
	RowsPerSec *float64 `json:"rows_per_sec"`
	CPUSeconds *float64 `json:"cpu_s"`
	QPS        *float64 `json:"qps"`
	P50Ms      *float64 `json:"p50_ms"`
	P99Ms      *float64 `json:"p99_ms"`
	Truncated  bool     `json:"truncated"`
}

// ParseClientOutput reads a client's stdout: one JSON object per workload, other lines
// (a JVM's or a library's chatter) ignored. It returns "<mode>.<field>" metrics for the
// fields present: rows_per_sec, cpu_s, qps, p50_ms, p99_ms, and "<mode>.truncated" = 1 when
// the workload was cut short. A line that starts like JSON but does not parse, or has no
// mode, is an error; so is a mode reported twice. With both cpu_s and rows (lookups for the
// lookup workload) it adds "<mode>.cpu_us_per_row", the client's CPU per unit of work, which
// stays comparable when a workload was cut short.
func ParseClientOutput(r io.Reader) (map[string]float64, error) {
	m := map[string]float64{}
	seen := map[string]bool{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if !strings.HasPrefix(line, "{") {
			continue
		}
		var l clientLine
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			return m, fmt.Errorf("line %d: %w", n, err)
		}
		if l.Mode == "" {
			return m, fmt.Errorf("line %d: no mode", n)
		}
		if seen[l.Mode] {
			return m, fmt.Errorf("line %d: mode %q reported twice", n, l.Mode)
		}
		seen[l.Mode] = true
		for field, v := range map[string]*float64{"rows_per_sec": l.RowsPerSec, "cpu_s": l.CPUSeconds, "qps": l.QPS, "p50_ms": l.P50Ms, "p99_ms": l.P99Ms} {
			if v != nil {
				m[l.Mode+"."+field] = *v
			}
		}
		if l.CPUSeconds != nil && l.Rows != nil && *l.Rows > 0 {
			m[l.Mode+".cpu_us_per_row"] = *l.CPUSeconds / *l.Rows * 1e6
		}
		if l.Truncated {
			m[l.Mode+".truncated"] = 1
		}
	}
	return m, sc.Err()
}

// ClientRows are the rows of the client table, in order.
var ClientRows = []MetricDef{
	{Key: "append.rows_per_sec", Label: "append rows/s", Unit: "rows", HigherBetter: true},
	{Key: "append.cpu_us_per_row", Label: "append: client CPU µs per row", Unit: "us"},
	{Key: "scan.rows_per_sec", Label: "scan rows/s", Unit: "rows", HigherBetter: true},
	{Key: "scan.cpu_us_per_row", Label: "scan: client CPU µs per row", Unit: "us"},
	{Key: "upsert.rows_per_sec", Label: "upsert rows/s (new keys)", Unit: "rows", HigherBetter: true},
	{Key: "upsert.cpu_us_per_row", Label: "upsert: client CPU µs per row", Unit: "us"},
	{Key: "lookup.qps", Label: "lookup QPS (1 key, 4 in flight)", Unit: "qps", HigherBetter: true},
	{Key: "lookup.p50_ms", Label: "lookup p50 ms", Unit: "ms"},
	{Key: "lookup.p99_ms", Label: "lookup p99 ms", Unit: "ms"},
	{Key: "lookup.cpu_us_per_row", Label: "lookup: client CPU µs per lookup", Unit: "us"},
	{Key: KeyProcessCPU, Label: "client process CPU s (all workloads, start-up included)", Unit: "s"},
	{Key: KeyProcessWall, Label: "client process wall s", Unit: "s"},
	{Key: KeyProcessMaxRSS, Label: "client peak RSS MiB", Unit: "MiB"},
}

// ClientSummaries groups samples by server and summarizes each group per client (medians
// over rounds; Summary.Ratios are left empty, ClientMarkdown computes its own).
func ClientSummaries(samples []ClientSample) (servers []string, sums map[string]Summary) {
	by := map[string][]Sample{}
	for _, s := range samples {
		if _, ok := by[s.Server]; !ok {
			servers = append(servers, s.Server)
		}
		by[s.Server] = append(by[s.Server], s.Sample)
	}
	sums = map[string]Summary{}
	for srv, ss := range by {
		sums[srv] = Summarize("", ss)
	}
	return servers, sums
}

// ClientMarkdown renders one server's client table: a column per client (median over the
// rounds, min–max when they differ) and, for every client after the first (the subject,
// the Go client), the ratio subject ÷ that client. For throughput a ratio above 1 means the
// subject is faster; for CPU time, latency and memory a ratio below 1 means it uses less.
// Rows no client measured are left out; a workload cut short by its time bound is marked
// with "(cut short)".
func ClientMarkdown(sum Summary, clients []Client) string {
	var present []Client
	for _, c := range clients {
		if _, ok := sum.Stats[c.Name]; ok {
			present = append(present, c)
		}
	}
	if len(present) == 0 {
		return ""
	}
	subject := present[0]
	var ratioTo []Client
	for _, c := range present[1:] {
		if !c.NoRatio {
			ratioTo = append(ratioTo, c)
		}
	}
	var b strings.Builder
	b.WriteString("| workload")
	for _, c := range present {
		b.WriteString(" | " + c.Label)
	}
	for _, c := range ratioTo {
		fmt.Fprintf(&b, " | %s ÷ %s", subject.Label, c.Label)
	}
	b.WriteString(" |\n|---")
	for range len(present) + len(ratioTo) {
		b.WriteString("|---")
	}
	b.WriteString("|\n")
	for _, d := range ClientRows {
		any := false
		for _, c := range present {
			if _, ok := sum.Stats[c.Name][d.Key]; ok {
				any = true
			}
		}
		if !any {
			continue
		}
		b.WriteString("| " + d.Label)
		mode, _, _ := strings.Cut(d.Key, ".")
		for _, c := range present {
			st, ok := sum.Stats[c.Name][d.Key]
			if !ok {
				b.WriteString(" | –")
				continue
			}
			cell := formatStat(st, d.Unit)
			if _, cut := sum.Stats[c.Name][mode+".truncated"]; cut && d.Key != mode+".cpu_us_per_row" {
				cell += " (cut short)"
			}
			b.WriteString(" | " + cell)
		}
		base, hasBase := sum.Stats[subject.Name][d.Key]
		for _, c := range ratioTo {
			st, ok := sum.Stats[c.Name][d.Key]
			if !hasBase || !ok || st.Median == 0 || math.IsNaN(base.Median) {
				b.WriteString(" | –")
				continue
			}
			fmt.Fprintf(&b, " | %s", formatRatio(base.Median/st.Median, true, d.HigherBetter))
		}
		b.WriteString(" |\n")
	}
	return b.String()
}

// ClientFailures lists the failed runs, one line each, for the report under the table.
func ClientFailures(samples []ClientSample) []string {
	var out []string
	for _, s := range samples {
		if s.Error != "" {
			l, _, _ := strings.Cut(s.Error, "\n")
			out = append(out, fmt.Sprintf("round %d, %s client on %s failed: %s", s.Round, s.System, s.Server, l))
		}
	}
	return slices.Clip(out)
}
