// Command strom is the Strom server and its tools.
//
//	strom serve [flags]    start a single-node server
//	strom bench [flags]    measure a running server
//	strom repair-log ...   accept the truncation of a bucket log that went offline
//	strom COMMAND ...      work with databases, tables and data (strom --help)
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
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
)

func main() {
	var err error
	switch {
	case len(os.Args) > 1 && os.Args[1] == "serve":
		err = serve(os.Args[2:])
	case len(os.Args) > 1 && os.Args[1] == "bench":
		err = bench(os.Args[2:])
	case len(os.Args) > 1 && os.Args[1] == "repair-log":
		err = repairLog(os.Args[2:])
	default:
		// Everything else is the command line for people (cmd/strom/cli): help, completion,
		// db, table, produce, tail, lookup, offsets, cluster.
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
		code := cli.Run(ctx, os.Args[1:], cli.StdStreams())
		stop()
		os.Exit(code)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "strom:", err)
		os.Exit(1)
	}
}

func serve(args []string) error {
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
	if err := fs.Parse(args); err != nil {
		return err
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		return fmt.Errorf("--log-level: %w", err)
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
			return fmt.Errorf("--set %q: want KEY=VALUE", kv)
		}
		if err := cfg.Set(k, v); err != nil {
			return err
		}
	}
	if *dataDir != "" {
		cfg.DataDir = *dataDir
	}
	if *httpListen != "" {
		if err := cfg.Set("http.listen", *httpListen); err != nil {
			return fmt.Errorf("--http-listen: %w", err)
		}
	}
	if *pprofOn {
		cfg.PprofEnabled = true
	}
	if *coordListen != "" {
		l, err := config.ParseHostPort(*coordListen)
		if err != nil {
			return fmt.Errorf("--coordinator-listen: %w", err)
		}
		l.Name = cfg.CoordinatorListeners[0].Name
		cfg.CoordinatorListeners = []config.Listener{l}
	}
	if *tabletListen != "" {
		l, err := config.ParseHostPort(*tabletListen)
		if err != nil {
			return fmt.Errorf("--tablet-listen: %w", err)
		}
		l.Name = cfg.CoordinatorListeners[0].Name
		cfg.TabletListeners = []config.Listener{l}
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
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
