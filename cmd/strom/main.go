// Command strom is the Strom server and its tools.
//
//	strom serve [flags]    start a single-node server
//	strom bench [flags]    measure a running server
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/stromdb/strom/server"
	"github.com/stromdb/strom/server/config"
)

func main() {
	if len(os.Args) < 2 {
		usage()
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "serve":
		err = serve(os.Args[2:])
	case "bench":
		err = bench(os.Args[2:])
	case "help", "-h", "--help":
		usage()
		return
	default:
		fmt.Fprintf(os.Stderr, "strom: unknown command %q\n\n", os.Args[1])
		usage()
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "strom:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprint(os.Stderr, `Strom: streaming storage that speaks the Apache Fluss protocol.

Usage:
  strom serve [flags]   start a single-node server (coordinator and tablet server)
  strom bench [flags]   benchmark a running server

Run 'strom serve -h' or 'strom bench -h' for flags.
`)
}

func serve(args []string) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	dataDir := fs.String("data-dir", "", "directory for all data (default ./strom-data; config data.dir)")
	coordListen := fs.String("coordinator-listen", "", "coordinator HOST:PORT (default 127.0.0.1:9123; port 0 picks a free port)")
	tabletListen := fs.String("tablet-listen", "", "tablet server HOST:PORT (default: coordinator port + 1; port 0 picks a free port)")
	configFile := fs.String("config", "", "YAML file with Fluss server options (bind.listeners, data.dir, default.bucket.number, ...)")
	logLevel := fs.String("log-level", "info", "log level: debug, info, warn, error")
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
