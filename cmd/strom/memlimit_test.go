package main

import (
	"io"
	"log/slog"
	"math"
	"runtime/debug"
	"testing"

	"github.com/stromdb/strom/server/config"
)

// TestSetGoMemoryLimit checks that serve's Go memory limit follows server.go-memory-limit,
// and that a GOMEMLIMIT in the environment stays in force unless the option is set.
func TestSetGoMemoryLimit(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(before) })
	log := slog.New(slog.NewTextHandler(io.Discard, nil))

	t.Setenv("GOMEMLIMIT", "")
	cfg := config.Default()
	debug.SetMemoryLimit(50 << 20)
	setGoMemoryLimit(cfg, log)
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Fatalf("default: limit %d, want none", got)
	}
	if err := cfg.Set("server.go-memory-limit", "auto"); err != nil {
		t.Fatal(err)
	}
	setGoMemoryLimit(cfg, log)
	if got := debug.SetMemoryLimit(-1); got != cfg.GoMemoryLimitBytes() || got != 96<<20 {
		t.Fatalf("auto: limit %d, want %d", got, 96<<20)
	}
	if err := cfg.Set("server.go-memory-limit", "0"); err != nil {
		t.Fatal(err)
	}
	setGoMemoryLimit(cfg, log)
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Fatalf("0: limit %d, want none", got)
	}

	debug.SetMemoryLimit(200 << 20) // as the runtime would have read it from GOMEMLIMIT
	t.Setenv("GOMEMLIMIT", "200MiB")
	setGoMemoryLimit(config.Default(), log)
	if got := debug.SetMemoryLimit(-1); got != 200<<20 {
		t.Fatalf("GOMEMLIMIT without the option: limit %d, want the environment's", got)
	}
	cfg = config.Default()
	if err := cfg.Set("server.go-memory-limit", "64mb"); err != nil {
		t.Fatal(err)
	}
	setGoMemoryLimit(cfg, log)
	if got := debug.SetMemoryLimit(-1); got != 64<<20 {
		t.Fatalf("option over GOMEMLIMIT: limit %d, want 64 MiB", got)
	}
}
