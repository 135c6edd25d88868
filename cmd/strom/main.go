// Command strom is the Strom server and its tools.
//
//	strom serve [flags]    start a server: a single node, or a node of a cluster
//	strom bench [flags]    measure a running server
//	strom repair-log ...   accept the truncation of a bucket log that went offline
//	strom COMMAND ...      work with databases, tables and data (strom --help)
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
	"time"

	"github.com/stromdb/strom/cmd/strom/cli"
	"github.com/stromdb/strom/internal/cmalloc"
	"github.com/stromdb/strom/server"
	"github.com/stromdb/strom/server/config"
	"github.com/stromdb/strom/server/rest"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], cli.StdStreams())
	stop()
	os.Exit(code)
}

// run is the whole command line: the server commands below and the data commands of
// cmd/strom/cli, with one help, one completion and one set of exit codes.
func run(ctx context.Context, args []string, streams cli.Streams) int {
	return cli.Run(ctx, args, streams,
		cli.Command{Name: "serve", Short: "start a Strom server: a single node, or a node of a cluster (docs/cluster.md)",
			Run: func(ctx context.Context, args []string, _, stderr io.Writer) error { return serve(ctx, args, stderr) }},
		cli.Command{Name: "bench", Short: "benchmark a running server (docs/benchmarks.md)",
			Run: func(ctx context.Context, args []string, _, stderr io.Writer) error {
				return benchOut(ctx, args, stderr)
			}},
		cli.Command{Name: "repair-log", Short: "accept the truncation of a bucket log that went offline (docs/durability.md)",
			Run: func(_ context.Context, args []string, _, stderr io.Writer) error { return repairLog(args, stderr) }},
	)
}

// parseFlags parses args into fs, printing usage and errors to out. Bad flags are usage
// errors (exit 2); -h is flag.ErrHelp (exit 0).
func parseFlags(fs *flag.FlagSet, args []string, out io.Writer) error {
	fs.SetOutput(out)
	err := fs.Parse(args)
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		return cli.Usage(err)
	}
	return err
}

// serve runs a node until ctx is done or the node fails.
func serve(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	dataDir := fs.String("data-dir", "", "directory for all data (default ./strom-data; config data.dir)")
	coordListen := fs.String("coordinator-listen", "", "coordinator HOST:PORT (default 127.0.0.1:9123; port 0 picks a free port)")
	tabletListen := fs.String("tablet-listen", "", "tablet server HOST:PORT (default: coordinator port + 1; port 0 picks a free port)")
	configFile := fs.String("config", "", "YAML file with Fluss server options (bind.listeners, data.dir, default.bucket.number, ...)")
	logLevel := fs.String("log-level", "info", "log level: debug, info, warn, error")
	httpListen := fs.String("http-listen", "", "HOST:PORT of the HTTP listener for /metrics, /healthz, /readyz (config http.listen; enables it)")
	pprofOn := fs.Bool("pprof", false, "serve /debug/pprof/ on the HTTP listener (config debug.pprof.enabled)")
	var sets multiFlag
	fs.Var(&sets, "set", "set a config option KEY=VALUE (repeatable)")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `Usage: strom serve [flags]

Starts a Strom node: a coordinator and a tablet server. Alone it is a single-node cluster;
with etcd.* options (--config) it forms or joins a cluster (docs/cluster.md). Options are
Fluss's server options (docs/configuration.md); flags override the --config file.

Flags:
`)
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args, out); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return cli.Usage(fmt.Errorf("serve takes no arguments, got %q", fs.Arg(0)))
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		return cli.Usage(fmt.Errorf("--log-level: %w", err))
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))

	cfg := config.Default()
	if *configFile != "" {
		if err := cfg.LoadFile(*configFile); err != nil {
			return err
		}
	}
	for _, kv := range sets {
		k, v, ok := cutEq(kv)
		if !ok {
			return cli.Usage(fmt.Errorf("--set %q: want KEY=VALUE", kv))
		}
		if err := cfg.Set(k, v); err != nil {
			return cli.Usage(fmt.Errorf("--set %s: %w", kv, err))
		}
	}
	if *dataDir != "" {
		cfg.DataDir = *dataDir
	}
	if *httpListen != "" {
		if err := cfg.Set("http.listen", *httpListen); err != nil {
			return cli.Usage(fmt.Errorf("--http-listen: %w", err))
		}
	}
	if *pprofOn {
		cfg.PprofEnabled = true
	}
	if *coordListen != "" {
		l, err := config.ParseHostPort(*coordListen)
		if err != nil {
			return cli.Usage(fmt.Errorf("--coordinator-listen: %w", err))
		}
		l.Name = cfg.CoordinatorListeners[0].Name
		cfg.CoordinatorListeners = []config.Listener{l}
	}
	if *tabletListen != "" {
		l, err := config.ParseHostPort(*tabletListen)
		if err != nil {
			return cli.Usage(fmt.Errorf("--tablet-listen: %w", err))
		}
		l.Name = cfg.CoordinatorListeners[0].Name
		cfg.TabletListeners = []config.Listener{l}
	}

	start := time.Now()
	// Importing internal/cmalloc set one malloc arena and a fixed mmap threshold when the
	// program was loaded (docs/configuration.md "Memory budget").
	if st := cmalloc.Current(); st == cmalloc.Refused {
		log.Warn("C allocator left at its defaults: glibc refused mallopt")
	}
	setGoMemoryLimit(cfg, log)
	node, err := server.Start(ctx, cfg, log)
	if err != nil {
		if errors.Is(err, server.ErrDataDirLocked) {
			return err
		}
		return fmt.Errorf("start: %w", err)
	}
	// The REST API and the console: a gateway client of this node's own Fluss listener.
	if err := rest.Mount(node, cfg, log); err != nil {
		node.Close()
		return fmt.Errorf("start: REST gateway: %w", err)
	}
	log.Info("strom is ready", "data_dir", cfg.DataDir, "coordinator", node.Addr("coordinator"), "tablet_server", node.Addr("tablet-server"), "startup", time.Since(start).Round(time.Millisecond))
	select {
	case <-ctx.Done():
		log.Info("shutting down")
	case <-node.Failed():
		// The node logged why and is shutting itself down; Close waits for it and returns it.
	}
	if err := node.Close(); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	log.Info("stopped")
	return nil
}

// setGoMemoryLimit sets the Go runtime's soft memory limit from server.go-memory-limit
// (docs/configuration.md "Memory budget"). A GOMEMLIMIT in the environment is left in force
// unless the option is set explicitly.
func setGoMemoryLimit(cfg config.Config, log *slog.Logger) {
	if _, set := cfg.Raw["server.go-memory-limit"]; !set && os.Getenv("GOMEMLIMIT") != "" {
		log.Info("Go memory limit from GOMEMLIMIT", "limit", os.Getenv("GOMEMLIMIT"))
		return
	}
	limit := cfg.GoMemoryLimitBytes()
	if limit == 0 {
		debug.SetMemoryLimit(math.MaxInt64)
		return
	}
	debug.SetMemoryLimit(limit)
	log.Debug("Go memory limit", "bytes", limit)
}

type multiFlag []string

func (m *multiFlag) String() string     { return fmt.Sprint(*m) }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

func cutEq(s string) (string, string, bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == '=' {
			return s[:i], s[i+1:], true
		}
	}
	return "", "", false
}
