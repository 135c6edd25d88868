// Command strom-lake tiers Strom tables into Apache Iceberg. A lake-enabled `strom serve`
// (datalake.format=iceberg) starts it as a child process and talks to it over inherited
// sockets (package lakehost, protocol in lakeconf); it is not meant to be run by hand. It is a binary of its own so
// that strom neither links nor initializes Iceberg's libraries (docs/lake.md).
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/stromdb/strom/server/lake"
	"github.com/stromdb/strom/server/lakeconf"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "strom-lake:", err)
		os.Exit(1)
	}
}

func run() error {
	level := flag.String("log-level", "info", "log level: debug, info, warn, error")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "strom-lake is the data lake tiering process; `strom serve` starts it when datalake.format is set.")
		flag.PrintDefaults()
	}
	flag.Parse()
	// iceberg-go's package initialisation (substrait's extension catalogue) leaves ~32 MB of
	// garbage behind; hand it back to the OS rather than keep it resident for the process's life.
	debug.FreeOSMemory()
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(*level)); err != nil {
		return fmt.Errorf("--log-level: %w", err)
	}
	// JSON lines on stderr, which the server re-logs with its own logger (package lakehost).
	log := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: lv}))
	hostConn, err := inherited(lakeconf.HostFD)
	if err != nil {
		return err
	}
	tiererConn, err := inherited(lakeconf.TiererFD)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return lake.RunChild(ctx, hostConn, tiererConn, log)
}

// inherited is the connection on file descriptor fd, which strom serve passes.
func inherited(fd int) (net.Conn, error) {
	f := os.NewFile(uintptr(fd), fmt.Sprintf("fd%d", fd))
	if f == nil {
		return nil, fmt.Errorf("no file descriptor %d: strom-lake is started by `strom serve`", fd)
	}
	defer f.Close()
	c, err := net.FileConn(f)
	if err != nil {
		return nil, fmt.Errorf("file descriptor %d is not the server's socket (strom-lake is started by `strom serve`): %w", fd, err)
	}
	return c, nil
}
