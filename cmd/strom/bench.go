package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"time"

	benchpkg "github.com/stromdb/strom/cmd/strom/bench"
	"github.com/stromdb/strom/cmd/strom/cli"
	"github.com/stromdb/strom/cmd/strom/progress"
	"github.com/stromdb/strom/internal/arrowlog"
)

// bench runs `strom bench [flags] MODE...` against a running server until it is done or
// interrupted.
func bench(args []string) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	return benchOut(ctx, args, os.Stderr)
}

// benchOut is bench with ctx and the writer for its usage and flag errors.
func benchOut(ctx context.Context, args []string, out io.Writer) error {
	cfg := benchpkg.DefaultConfig()
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `Usage: strom bench [flags] MODE...

Modes (run in this order; scan implies append, the others after upsert imply upsert):
  append          PRODUCE_LOG rows to a log table: rows/s, MB/s
  scan            FETCH_LOG the log table from the earliest offset: rows/s, MB/s
  upsert          PUT_KV new keys to a primary-key table: rows/s
  update          PUT_KV new values for every upserted key: rows/s
  partial-update  PUT_KV the first -partial-columns columns of every upserted key: rows/s
  lookup          LOOKUP random existing keys: QPS, latency p50/p99/p99.9
  mixed           updates and lookups interleaved on the same connections:
                  written rows/s, lookup QPS and latency, write latency
  prefix-lookup   load a table keyed (id, seq) with -prefix-fanout rows per id, then
                  PREFIX_LOOKUP random ids: QPS, rows/s, latency
  tiering         PRODUCE_LOG to a lake-enabled log table (server with datalake.format=iceberg)
                  and poll GET_LAKE_SNAPSHOT: rows/s into Iceberg, freshness p50/p99/max
  all             all of them but tiering

Flags:
`)
		fs.PrintDefaults()
	}
	fs.StringVar(&cfg.Bootstrap, "bootstrap", cfg.Bootstrap, "coordinator HOST:PORT")
	fs.StringVar(&cfg.Username, "user", "", "SASL/PLAIN user name (empty: no authentication)")
	fs.StringVar(&cfg.Password, "password", "", "SASL/PLAIN password")
	fs.StringVar(&cfg.Database, "database", cfg.Database, "database (created if missing, dropped at the end if created)")
	fs.StringVar(&cfg.Table, "table", cfg.Table, "table base name: NAME_log and NAME_kv are created and dropped at the end")
	fs.BoolVar(&cfg.Keep, "keep", false, "keep the tables (and database) after the run")
	fs.IntVar(&cfg.Rows, "rows", cfg.Rows, "rows to append / upsert")
	fs.IntVar(&cfg.LogRows, "log-rows", 0, "rows of the log-table workloads (append, scan) when not -rows")
	fs.IntVar(&cfg.Columns, "columns", cfg.Columns, "columns per row, including the BIGINT key column")
	fs.IntVar(&cfg.StringBytes, "string-bytes", cfg.StringBytes, "bytes per STRING column (odd columns are STRING); 0 = all BIGINT")
	fs.IntVar(&cfg.BatchRows, "batch", cfg.BatchRows, "rows per batch (one batch per request)")
	fs.IntVar(&cfg.Buckets, "buckets", cfg.Buckets, "buckets of the tables")
	fs.IntVar(&cfg.Concurrency, "concurrency", cfg.Concurrency, "requests in flight")
	fs.IntVar(&cfg.Conns, "conns", cfg.Conns, "connections per tablet server shared by the workers (0 = one per in-flight request)")
	compression := fs.String("compression", "NONE", "Arrow compression of the log batches: NONE, LZ4_FRAME, ZSTD")
	fs.IntVar(&cfg.ZstdLevel, "zstd-level", cfg.ZstdLevel, "ZSTD level")
	projection := fs.String("projection", "", "scan: comma-separated column indexes to fetch (default all)")
	fs.IntVar(&cfg.FetchBytes, "fetch-bytes", cfg.FetchBytes, "scan: max_fetch_bytes per bucket and request")
	fs.IntVar(&cfg.Lookups, "lookups", cfg.Lookups, "lookup: number of LOOKUP requests")
	fs.IntVar(&cfg.LookupBatch, "lookup-batch", cfg.LookupBatch, "lookup: keys per LOOKUP request")
	fs.IntVar(&cfg.PartialColumns, "partial-columns", cfg.PartialColumns, "partial-update: columns written, counted from the key column")
	fs.IntVar(&cfg.PrefixFanout, "prefix-fanout", cfg.PrefixFanout, "prefix-lookup: rows per id (primary key (id, seq), bucket key id)")
	fs.StringVar(&cfg.LakeFreshness, "lake-freshness", cfg.LakeFreshness, "tiering: table.datalake.freshness of the lake table")
	fs.DurationVar(&cfg.LakePoll, "lake-poll", cfg.LakePoll, "tiering: GET_LAKE_SNAPSHOT poll interval (freshness is measured to this resolution)")
	fs.IntVar(&cfg.AppendRate, "append-rate", 0, "tiering: pace the appends to this many rows/s (0: as fast as they go)")
	acks := fs.Int("acks", int(cfg.Acks), "acks of PRODUCE_LOG / PUT_KV (-1, 0, 1)")
	fs.DurationVar(&cfg.MaxDuration, "max-duration", cfg.MaxDuration, "upper bound of each timed section")
	fs.Uint64Var(&cfg.Seed, "seed", cfg.Seed, "data generator seed")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of this bench process (the client side) to FILE")
	serverPids := fs.String("server-pid", "", "comma-separated pids of the server's processes on this machine: each result then carries their CPU time over its timed section (server_cpu_s), read from /proc")
	asJSON := fs.Bool("json", false, "print one JSON object per mode instead of the summary line")
	progressMode := fs.String("progress", "auto", "progress bar on stderr while each mode runs: auto (when stderr is a terminal), always, never")
	if err := parseFlags(fs, args, out); err != nil {
		return err
	}
	var err error
	if cfg.Compression, err = arrowlog.ParseCompression(strings.ToUpper(*compression)); err != nil {
		return cli.Usage(fmt.Errorf("-compression: %w", err))
	}
	cfg.Acks = int32(*acks)
	if *projection != "" {
		for _, f := range strings.Split(*projection, ",") {
			i, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil {
				return cli.Usage(fmt.Errorf("-projection %q: %w", *projection, err))
			}
			cfg.Projection = append(cfg.Projection, i)
		}
	}
	if *serverPids != "" {
		var pids []int
		for _, f := range strings.Split(*serverPids, ",") {
			pid, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || pid <= 0 {
				return cli.Usage(fmt.Errorf("-server-pid %q: want positive pids separated by commas", *serverPids))
			}
			pids = append(pids, pid)
		}
		if _, err := benchpkg.ProcCPU(pids...); err != nil {
			return cli.Usage(fmt.Errorf("-server-pid: %w", err))
		}
		cfg.ServerCPU = func() (time.Duration, error) { return benchpkg.ProcCPU(pids...) }
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return cli.Usage(fmt.Errorf("bench: no mode given"))
	}
	var modes []benchpkg.Mode
	for _, a := range fs.Args() {
		if a == "all" {
			modes = append(modes, benchpkg.ModesForAll()...)
			continue
		}
		m, err := benchpkg.ParseMode(a)
		if err != nil {
			return cli.Usage(err)
		}
		modes = append(modes, m)
	}
	streams := cli.StdStreams()
	switch *progressMode {
	case "always", "auto":
		if *progressMode == "always" || streams.ErrIsTerminal {
			cfg.Progress = func(label string, total int64) *progress.Bar {
				return progress.Start(os.Stderr, progress.Options{Label: label, TotalRows: total, Terminal: streams.ErrIsTerminal})
			}
		}
	case "never":
	default:
		return cli.Usage(fmt.Errorf("-progress %q: want auto, always or never", *progressMode))
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return fmt.Errorf("-cpuprofile: %w", err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return fmt.Errorf("-cpuprofile: %w", err)
		}
		defer pprof.StopCPUProfile()
	}
	enc := json.NewEncoder(os.Stdout)
	_, err = benchpkg.Run(ctx, cfg, modes, func(r benchpkg.Result) {
		if *asJSON {
			_ = enc.Encode(r)
		} else {
			fmt.Println(r)
		}
	})
	return err
}
