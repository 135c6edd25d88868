package bench

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/server"
	"github.com/stromdb/strom/server/config"
	"github.com/stromdb/strom/server/laketest"
)

// TestTieringMode runs the tiering mode against a server with the embedded Iceberg lake and
// checks the counts (never the timings): every appended row is seen in the lake.
func TestTieringMode(t *testing.T) {
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	cfg.CoordinatorListeners = []config.Listener{{Name: "FLUSS", Host: "127.0.0.1", Port: 0}}
	cfg.TabletListeners = []config.Listener{{Name: "FLUSS", Host: "127.0.0.1", Port: 0}}
	if err := cfg.Set("datalake.format", "iceberg"); err != nil {
		t.Fatal(err)
	}
	if err := cfg.Set("datalake.tiering.binary", laketest.Binary(t)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	node, err := server.Start(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer node.Close()

	bc := smallConfig(node.Addr("coordinator"))
	bc.LakeFreshness = "200ms"
	bc.AppendRate = 3000 // 300 rows over ~0.1 s: appends land in more than one lake round or not, either is fine
	res, err := Run(ctx, bc, []Mode{ModeTiering}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 1 {
		t.Fatalf("results %+v", res)
	}
	r := res[0]
	if r.Mode != ModeTiering || r.Rows != 300 || r.Requests != 5 || r.Truncated {
		t.Errorf("tiering: %s %d rows in %d requests (truncated %v), want 300 in 5", r.Mode, r.Rows, r.Requests, r.Truncated)
	}
	if r.LakeSnapshots < 1 || r.FreshnessMaxMs <= 0 || r.FreshnessP50Ms > r.FreshnessMaxMs || r.RowsPerSec <= 0 {
		t.Errorf("tiering result %+v", r)
	}
	if !strings.Contains(r.String(), "into Iceberg") {
		t.Errorf("summary %q", r)
	}
}

// Without a data lake on the server the mode fails with a hint, not a hang.
func TestTieringModeNeedsLake(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	bc := smallConfig(startServer(t))
	_, err := Run(ctx, bc, []Mode{ModeTiering}, nil)
	if ferr.CodeOf(err) != ferr.InvalidTableException || !strings.Contains(err.Error(), "datalake.format=iceberg") {
		t.Fatalf("error %v, want INVALID_TABLE_EXCEPTION with a hint", err)
	}
}

// tieringResult: freshness is measured from each acknowledgement to the first lake view
// holding its offsets; throughput ends at the last view.
func TestTieringResult(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	cfg := DefaultConfig()
	reqs := []prepared{{rows: 10}, {rows: 10}, {rows: 10}}
	acks := []ack{{bucket: 0, end: 10, at: at(10)}, {bucket: 1, end: 10, at: at(20)}, {bucket: 0, end: 20, at: at(30)}}
	views := []lakeView{
		{at: at(500), offsets: map[int32]int64{0: 10, 1: 0}},
		{at: at(1000), offsets: map[int32]int64{0: 20, 1: 10}},
	}
	r := tieringResult(&cfg, &tableInfo{}, reqs, acks, views, t0, at(40), false)
	if r.Rows != 30 || r.Seconds != 1 || r.RowsPerSec != 30 || r.LakeSnapshots != 2 {
		t.Errorf("rows %d in %.3fs = %.1f/s over %d snapshots, want 30 in 1s", r.Rows, r.Seconds, r.RowsPerSec, r.LakeSnapshots)
	}
	// Freshness: 490 ms, 980 ms, 970 ms.
	if r.FreshnessP50Ms != 970 || r.FreshnessMaxMs != 980 {
		t.Errorf("freshness p50 %v max %v, want 970 and 980", r.FreshnessP50Ms, r.FreshnessMaxMs)
	}
	if r.AppendRowsPerSec != 750 {
		t.Errorf("append rate %v, want 750 rows/s", r.AppendRowsPerSec)
	}
}
