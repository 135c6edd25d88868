package main

import (
	"context"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/stromdb/strom/server"
	"github.com/stromdb/strom/server/config"
)

// TestBenchCommand drives `strom bench ... all` through its flag parsing against an
// in-process server, so the command's wiring cannot rot. It asserts nothing about timings.
func TestBenchCommand(t *testing.T) {
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	cfg.CoordinatorListeners = []config.Listener{{Name: "FLUSS", Host: "127.0.0.1", Port: 0}}
	cfg.TabletListeners = []config.Listener{{Name: "FLUSS", Host: "127.0.0.1", Port: 0}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	node, err := server.Start(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatalf("start server: %v", err)
	}
	defer node.Close()
	addr := node.Addr("coordinator")

	args := []string{"-bootstrap", addr, "-rows", "250", "-batch", "50", "-columns", "4", "-buckets", "2",
		"-compression", "lz4_frame", "-projection", "0,1", "-lookups", "40", "-json",
		"-server-pid", strconv.Itoa(os.Getpid()), // the in-process server is this process
		"all"}
	if err := bench(args); err != nil {
		t.Fatalf("bench %s: %v", strings.Join(args, " "), err)
	}
	for _, bad := range [][]string{
		{"-bootstrap", addr},                                        // no mode
		{"-bootstrap", addr, "sideways"},                            // unknown mode
		{"-bootstrap", addr, "-compression", "gzip", "append"},      // unknown codec
		{"-bootstrap", addr, "-projection", "x", "scan"},            // bad projection
		{"-bootstrap", addr, "-append-rate", "-1", "tiering"},       // negative rate
		{"-bootstrap", addr, "tiering"},                             // the server has no data lake
		{"-bootstrap", addr, "-server-pid", "x", "append"},          // not a pid
		{"-bootstrap", addr, "-server-pid", "1073741824", "append"}, // no such process
	} {
		if err := bench(bad); err == nil {
			t.Errorf("bench %v: no error", bad)
		}
	}
}
