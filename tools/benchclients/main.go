// Command benchclients measures the Go client (package fluss) against the Java client
// (fluss-client 0.9.1, tools/javabench) on the same server and workload (`make
// bench-clients`; see docs/benchmarks.md): interleaved rounds, a fresh single-node server
// per client run, each client a process of its own so that its CPU time is its own, and a
// Markdown table of medians with the Go ÷ Java ratios on stdout.
//
// `benchclients go-client -bootstrap HOST:PORT ...` is the Go-client process itself: the
// runner starts its own binary that way.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/stromdb/strom/cmd/strom/bench/compare"
	"github.com/stromdb/strom/cmd/strom/bench/goclient"
)

func main() {
	var err error
	if len(os.Args) > 1 && os.Args[1] == "go-client" {
		err = runGoClient(os.Args[2:])
	} else {
		err = run()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchclients:", err)
		os.Exit(1)
	}
}

// workload holds the flags both clients share, with the same names as tools/javabench's.
type workload struct {
	rows, columns, stringBytes, buckets, concurrency, lookups int
	batchSize                                                 int
	maxDuration                                               time.Duration
	modes                                                     string
}

func (w *workload) register(fs *flag.FlagSet) {
	fs.IntVar(&w.rows, "rows", 1_000_000, "rows appended and upserted (scan reads them back, lookups ask for them)")
	fs.IntVar(&w.columns, "columns", 10, "columns per row: BIGINT id, then STRING (odd) and BIGINT (even) columns")
	fs.IntVar(&w.stringBytes, "string-bytes", 16, "bytes per STRING column")
	fs.IntVar(&w.buckets, "buckets", 4, "buckets per table")
	fs.IntVar(&w.concurrency, "concurrency", 4, "lookups in flight")
	fs.IntVar(&w.lookups, "lookups", 50_000, "single-key lookups")
	fs.IntVar(&w.batchSize, "batch-bytes", 128<<10, "writer batch size in bytes (Go Config.WriterBatchSize, Java client.writer.batch-size): ~1,000 of these rows")
	fs.DurationVar(&w.maxDuration, "max-duration", time.Minute, "bound of each scan and lookup loop")
	fs.StringVar(&w.modes, "modes", "append,scan,upsert,lookup", "workloads, comma-separated")
}

// args renders w as command-line flags, in the syntax both client programs accept.
func (w *workload) args(dash string) []string {
	return []string{
		dash + "rows", strconv.Itoa(w.rows), dash + "columns", strconv.Itoa(w.columns),
		dash + "string-bytes", strconv.Itoa(w.stringBytes), dash + "buckets", strconv.Itoa(w.buckets),
		dash + "concurrency", strconv.Itoa(w.concurrency), dash + "lookups", strconv.Itoa(w.lookups),
		dash + "modes", w.modes,
	}
}

func runGoClient(args []string) error {
	fs := flag.NewFlagSet("go-client", flag.ContinueOnError)
	var w workload
	w.register(fs)
	bootstrap := fs.String("bootstrap", "127.0.0.1:9123", "coordinator HOST:PORT")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the whole run here")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	enc := json.NewEncoder(os.Stdout)
	return goclient.Run(ctx, goclient.Options{
		Bootstrap: *bootstrap, Rows: w.rows, Columns: w.columns, StringBytes: w.stringBytes,
		Buckets: w.buckets, Concurrency: w.concurrency, Lookups: w.lookups, BatchBytes: w.batchSize,
		Modes: strings.Split(w.modes, ","), MaxDuration: w.maxDuration, Database: "clientbench", Seed: 1,
	}, func(r goclient.Result) { _ = enc.Encode(r) })
}

func run() error {
	var w workload
	w.register(flag.CommandLine)
	var (
		stromBin    = flag.String("strom", "bin/strom", "strom binary (the server)")
		java        = flag.String("java", "java", "java binary (17+)")
		javaDir     = flag.String("javabench", "tools/javabench/target", "directory with tools/javabench's classes/ and classpath.txt (built by `make bench-clients`)")
		javaFlags   = flag.String("java-flags", "", "extra JVM flags of the Java client, space-separated")
		javaLinger  = flag.String("java-lookup-batch-timeout", "1ms", "also run the Java client with this client.lookup.batch-timeout (its default, 100ms, holds every lookup batch that long when fewer than lookup.max-batch-size lookups are queued); empty: skip")
		wire        = flag.Bool("wire", true, "also run `strom bench` (pre-encoded wire-level requests: the server's ceiling for these shapes)")
		rounds      = flag.Int("rounds", 3, "interleaved rounds")
		flussJars   = flag.String("fluss-jars", "", "also measure every client against Apache Fluss from these jars (see `make fetch-fluss`)")
		stromFlags  = flag.String("strom-flags", "", "extra flags of `strom serve`, space-separated")
		workDir     = flag.String("work-dir", "", "where servers keep their data and logs (default: a new temp dir)")
		keep        = flag.Bool("keep", false, "keep data directories and logs of good runs")
		outJSON     = flag.String("json", "", "write samples and summaries as JSON here (default WORK-DIR/results.json)")
		outMD       = flag.String("md", "", "also write the Markdown report here")
		javaTimeout = flag.Duration("client-timeout", 15*time.Minute, "bound of one client process")
	)
	flag.Parse()

	self, err := os.Executable()
	if err != nil {
		return err
	}
	binary, err := filepath.Abs(*stromBin)
	if err != nil {
		return err
	}
	jdir, err := filepath.Abs(*javaDir)
	if err != nil {
		return err
	}
	cp, err := os.ReadFile(filepath.Join(jdir, "classpath.txt"))
	if err != nil {
		return fmt.Errorf("java client not built (run `make bench-clients`): %w", err)
	}
	classpath := filepath.Join(jdir, "classes") + string(os.PathListSeparator) + strings.TrimSpace(string(cp))
	if *workDir == "" {
		if *workDir, err = os.MkdirTemp("", "strom-bench-clients-"); err != nil {
			return err
		}
	}
	if *outJSON == "" {
		*outJSON = filepath.Join(*workDir, "results.json")
	}
	maxSeconds := strconv.FormatFloat(w.maxDuration.Seconds(), 'f', -1, 64)
	javaArgv := func(extra ...string) func(string) []string {
		return func(bootstrap string) []string {
			argv := []string{*java, "--add-opens=java.base/java.nio=ALL-UNNAMED"}
			argv = append(argv, strings.Fields(*javaFlags)...)
			argv = append(argv, "-cp", classpath, "dev.strom.javabench.Main", "--bootstrap", bootstrap,
				"--batch-size", strconv.Itoa(w.batchSize)+"b", "--max-seconds", maxSeconds)
			argv = append(argv, w.args("--")...)
			return append(argv, extra...)
		}
	}
	clients := []compare.Client{
		{Name: "go", Label: "Go client", Argv: func(bootstrap string) []string {
			return append([]string{self, "go-client", "-bootstrap", bootstrap,
				"-batch-bytes", strconv.Itoa(w.batchSize), "-max-duration", w.maxDuration.String()}, w.args("-")...)
		}},
		{Name: "java", Label: "Java client", Argv: javaArgv()},
	}
	if *javaLinger != "" {
		clients = append(clients, compare.Client{Name: "java-linger", Label: "Java, lookup.batch-timeout=" + *javaLinger,
			Argv: javaArgv("--lookup-batch-timeout", *javaLinger, "--modes", "upsert,lookup")})
	}
	if *wire {
		clients = append(clients, compare.Client{Name: "wire", Label: "strom bench (wire level)", NoRatio: true, Argv: func(bootstrap string) []string {
			return []string{binary, "bench", "-json", "-progress", "never", "-bootstrap", bootstrap,
				"-rows", strconv.Itoa(w.rows), "-columns", strconv.Itoa(w.columns), "-string-bytes", strconv.Itoa(w.stringBytes),
				"-batch", "1000", "-buckets", strconv.Itoa(w.buckets), "-concurrency", strconv.Itoa(w.concurrency),
				"-lookups", strconv.Itoa(w.lookups),
				// strom bench bounds every section, its upsert included (the clients bound only
				// scans and lookups): a cut upsert would leave its lookups without keys.
				"-max-duration", max(w.maxDuration, 2*time.Minute).String(),
				"append", "scan", "upsert", "lookup"}
		}})
	}
	servers := []compare.System{compare.StromSystem("strom", "Strom", binary, strings.Fields(*stromFlags)...)}
	if *flussJars != "" {
		jars, err := filepath.Abs(*flussJars)
		if err != nil {
			return err
		}
		servers = append(servers, compare.FlussSystem("fluss", "Fluss 0.9.1", compare.FlussJVM{Java: *java, JarDir: jars}))
	}

	// The commit the binaries were built from: taken now, not after a run of many minutes.
	commit := "unknown"
	if out, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output(); err == nil {
		commit = strings.TrimSpace(string(out))
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	started := time.Now()
	fmt.Fprintf(os.Stderr, "benchclients: %d rounds, %d servers × %d clients, work dir %s\n", *rounds, len(servers), len(clients), *workDir)
	samples, runErr := compare.RunClients(ctx, compare.ClientOptions{
		Servers: servers, Clients: clients, Rounds: *rounds, WorkDir: *workDir, Keep: *keep,
		ClientTimeout: *javaTimeout, Log: os.Stderr,
	})

	load, _ := os.ReadFile("/proc/loadavg")
	var md strings.Builder
	fmt.Fprintf(&md, "Measured %s at commit %s (%d CPUs, load average at the end: %s); %d interleaved rounds, "+
		"a fresh server per client run, medians (min–max). %d rows × %d columns (%d STRING of %d bytes), %d buckets, "+
		"writer batches of %d bytes, %d single-key lookups with %d in flight.\n",
		started.UTC().Format("2006-01-02"), commit, runtime.NumCPU(), strings.Join(strings.Fields(string(load))[:3], " "),
		*rounds, w.rows, w.columns, w.columns/2, w.stringBytes, w.buckets, w.batchSize, w.lookups, w.concurrency)
	srvNames, sums := compare.ClientSummaries(samples)
	labels := map[string]string{}
	for _, s := range servers {
		labels[s.Name] = s.Label
	}
	for _, srv := range srvNames {
		fmt.Fprintf(&md, "\nServer: %s\n\n%s", labels[srv], compare.ClientMarkdown(sums[srv], clients))
	}
	for _, f := range compare.ClientFailures(samples) {
		fmt.Fprintf(&md, "\n%s\n", f)
	}
	fmt.Print(md.String())
	var errs []error
	if *outMD != "" {
		errs = append(errs, os.WriteFile(*outMD, []byte(md.String()), 0o644))
	}
	b, err := json.MarshalIndent(struct {
		Commit    string                     `json:"commit"`
		Samples   []compare.ClientSample     `json:"samples"`
		Summaries map[string]compare.Summary `json:"summaries"`
	}{commit, samples, sums}, "", "  ")
	errs = append(errs, err)
	if err == nil {
		errs = append(errs, os.WriteFile(*outJSON, b, 0o644))
	}
	fmt.Fprintf(os.Stderr, "benchclients: results in %s (%s)\n", *outJSON, time.Since(started).Round(time.Second))
	return errors.Join(append(errs, runErr)...)
}
