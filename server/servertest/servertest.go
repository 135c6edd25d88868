// Package servertest starts an in-process single-node Strom server for tests of packages that
// drive one over the wire (the bench, its clients).
package servertest

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/stromdb/strom/server"
	"github.com/stromdb/strom/server/config"
)

// Start runs a single-node server with its defaults on free loopback ports and a temporary
// data directory, stops it when tb ends, and returns its coordinator address.
func Start(tb testing.TB) string {
	tb.Helper()
	cfg := config.Default()
	cfg.DataDir = tb.TempDir()
	cfg.CoordinatorListeners = []config.Listener{{Name: "FLUSS", Host: "127.0.0.1", Port: 0}}
	cfg.TabletListeners = []config.Listener{{Name: "FLUSS", Host: "127.0.0.1", Port: 0}}
	ctx, cancel := context.WithCancel(context.Background())
	node, err := server.Start(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		cancel()
		tb.Fatalf("start server: %v", err)
	}
	tb.Cleanup(func() {
		if err := node.Close(); err != nil {
			tb.Errorf("close server: %v", err)
		}
		cancel()
	})
	return node.Addr("coordinator")
}
