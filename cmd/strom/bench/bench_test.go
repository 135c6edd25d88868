package bench

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stromdb/strom/internal/arrowlog"
	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/server/servertest"
)

// startServer runs an in-process single-node server on free ports and returns its
// coordinator address.
func startServer(t *testing.T) string { return servertest.Start(t) }

func startServerTB(t testing.TB) string { return servertest.Start(t) }

// fakeServerCPU is a Config.ServerCPU whose clock advances one second per reading, so a
// Result's ServerCPUSeconds is 1 exactly when its section read it once at each end.
func fakeServerCPU() func() (time.Duration, error) {
	var readings atomic.Int64
	return func() (time.Duration, error) { return time.Duration(readings.Add(1)) * time.Second, nil }
}

func smallConfig(addr string) Config {
	cfg := DefaultConfig()
	cfg.Bootstrap = addr
	cfg.Rows = 300
	cfg.BatchRows = 64
	cfg.Columns = 5
	cfg.StringBytes = 12
	cfg.Buckets = 3
	cfg.Concurrency = 2
	cfg.Lookups = 50
	cfg.MaxDuration = time.Minute
	return cfg
}

// TestRunModes runs every mode against a real server for a few hundred rows and checks the
// counts (never the timings).
func TestRunModes(t *testing.T) {
	addr := startServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	t.Run("log-rows", func(t *testing.T) {
		cfg := smallConfig(addr)
		cfg.Table = "log_rows"
		cfg.LogRows = 2*cfg.Rows + 7
		res, err := Run(ctx, cfg, []Mode{ModeScan}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(res) != 2 || res[0].Rows != int64(cfg.LogRows) || res[1].Rows != int64(cfg.LogRows) {
			t.Fatalf("with -log-rows %d (rows %d): %+v", cfg.LogRows, cfg.Rows, res)
		}
	})

	t.Run("log", func(t *testing.T) {
		for _, tc := range []struct {
			name       string
			comp       arrowlog.Compression
			projection []int
			conns      int
		}{
			{"none", arrowlog.CompressionNone, nil, 0},
			{"zstd-projected", arrowlog.CompressionZstd, []int{0, 3}, 1},
			{"lz4", arrowlog.CompressionLZ4Frame, nil, 0},
		} {
			t.Run(tc.name, func(t *testing.T) {
				cfg := smallConfig(addr)
				cfg.Table = "log_" + strings.ReplaceAll(tc.name, "-", "_")
				cfg.Compression, cfg.Projection, cfg.Conns = tc.comp, tc.projection, tc.conns
				cfg.ServerCPU = fakeServerCPU()
				var reported []Result
				res, err := Run(ctx, cfg, []Mode{ModeScan}, func(r Result) { reported = append(reported, r) })
				if err != nil {
					t.Fatal(err)
				}
				if len(res) != 2 || res[0].Mode != ModeAppend || res[1].Mode != ModeScan || len(reported) != 2 {
					t.Fatalf("results %+v, reported %d", res, len(reported))
				}
				app, scan := res[0], res[1]
				if app.ServerCPUSeconds != 1 || scan.ServerCPUSeconds != 1 {
					t.Errorf("server CPU of append %vs, scan %vs; want 1s each", app.ServerCPUSeconds, scan.ServerCPUSeconds)
				}
				if app.Rows != 300 || app.Requests != 5 || app.Truncated {
					t.Errorf("append: %d rows in %d requests (truncated %v), want 300 in 5", app.Rows, app.Requests, app.Truncated)
				}
				if scan.Rows != 300 || scan.Bytes == 0 || scan.Truncated {
					t.Errorf("scan: %d rows, %d bytes (truncated %v)", scan.Rows, scan.Bytes, scan.Truncated)
				}
				if tc.projection != nil && scan.RawBytes != 300*(8+12) {
					t.Errorf("projected scan raw bytes %d, want %d", scan.RawBytes, 300*(8+12))
				}
				if !strings.Contains(app.String(), "rows/s") || !strings.Contains(scan.String(), tc.comp.String()) {
					t.Errorf("summaries: %q / %q", app, scan)
				}
			})
		}
	})

	t.Run("kv", func(t *testing.T) {
		cfg := smallConfig(addr)
		cfg.LookupBatch = 3
		cfg.PartialColumns = 3
		cfg.ServerCPU = fakeServerCPU()
		res, err := Run(ctx, cfg, []Mode{ModeMixed, ModeLookup, ModePartialUpdate, ModeUpdate}, nil)
		if ferr.CodeOf(err) == ferr.UnsupportedVersion {
			t.Skipf("the server does not serve PUT_KV/LOOKUP yet: %v", err)
		}
		if err != nil {
			t.Fatal(err)
		}
		want := []Mode{ModeUpsert, ModeUpdate, ModePartialUpdate, ModeLookup, ModeMixed}
		if len(res) != len(want) {
			t.Fatalf("results %+v", res)
		}
		for i, r := range res {
			if r.Mode != want[i] {
				t.Fatalf("result %d is %s, want %s", i, r.Mode, want[i])
			}
			if r.Truncated || r.Misses != 0 {
				t.Errorf("%s: truncated %v, %d misses", r.Mode, r.Truncated, r.Misses)
			}
			if r.ServerCPUSeconds != 1 {
				t.Errorf("%s: server CPU %vs, want 1s (one reading right before and one right after the timed section)", r.Mode, r.ServerCPUSeconds)
			}
		}
		for _, r := range res[:3] {
			if r.Rows != 300 || r.Requests < 5 {
				t.Errorf("%s: %d rows in %d requests, want 300", r.Mode, r.Rows, r.Requests)
			}
		}
		if pu := res[2]; len(pu.TargetColumns) != 3 || pu.RawBytes != 300*(8+12+8) {
			t.Errorf("partial-update: target columns %v, raw bytes %d, want [0 1 2] and %d", pu.TargetColumns, pu.RawBytes, 300*(8+12+8))
		}
		lk := res[3]
		if lk.Rows < 150 || lk.Requests < 50 || lk.P50Ms <= 0 {
			t.Errorf("lookup: %d keys in %d requests, p50 %v", lk.Rows, lk.Requests, lk.P50Ms)
		}
		mx := res[4]
		if mx.Rows != 300 || mx.QPS <= 0 || mx.P50Ms <= 0 || mx.WriteP50Ms <= 0 || mx.Requests < 55 {
			t.Errorf("mixed: %d rows written, %d requests, lookup QPS %v p50 %v, write p50 %v", mx.Rows, mx.Requests, mx.QPS, mx.P50Ms, mx.WriteP50Ms)
		}
		if !strings.Contains(mx.String(), "lookup QPS") || !strings.Contains(res[2].String(), "target columns [0 1 2]") {
			t.Errorf("summaries: %q / %q", mx, res[2])
		}
	})

	t.Run("partial-update-needs-a-column-left", func(t *testing.T) {
		cfg := smallConfig(addr)
		cfg.Table = "partial_all"
		cfg.PartialColumns = cfg.Columns
		if _, err := Run(ctx, cfg, []Mode{ModePartialUpdate}, nil); err == nil || !strings.Contains(err.Error(), "partial-columns") {
			t.Errorf("partial update of every column: %v, want an error naming -partial-columns", err)
		}
	})

	t.Run("prefix-lookup", func(t *testing.T) {
		cfg := smallConfig(addr)
		cfg.Table = "prefix"
		cfg.Rows, cfg.PrefixFanout, cfg.LookupBatch = 295, 10, 4 // the last id has 5 rows
		res, err := Run(ctx, cfg, []Mode{ModePrefixLookup}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(res) != 1 || res[0].Mode != ModePrefixLookup {
			t.Fatalf("results %+v", res)
		}
		r := res[0]
		// 50 requests (more when a batch's ids span leaders) of 4 ids with 10 rows each (5
		// for id 29): every answer was checked row by row, so the count is bounded tightly.
		if r.Requests < 50 || r.Rows < 50*4*5 || r.Rows > r.Requests*4*10 || r.Bytes == 0 || r.PrefixFanout != 10 {
			t.Errorf("prefix-lookup: %d rows, %d bytes in %d requests (fanout %d)", r.Rows, r.Bytes, r.Requests, r.PrefixFanout)
		}
		if !strings.Contains(r.String(), "10 rows/prefix") {
			t.Errorf("summary %q", r)
		}
	})

	t.Run("small-producers", func(t *testing.T) {
		// Many small producers: batches of 10 rows from 64 connections, each with one request
		// in flight (-batch 10 -concurrency 64).
		cfg := smallConfig(addr)
		cfg.Table = "small_producers"
		cfg.Rows, cfg.BatchRows, cfg.Concurrency = 640, 10, 64
		res, err := Run(ctx, cfg, []Mode{ModeAppend, ModeUpsert}, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res {
			if r.Rows != 640 || r.Requests < 64 || r.Concurrency != 64 {
				t.Errorf("%s: %d rows in %d requests from %d workers, want 640 in >= 64 from 64", r.Mode, r.Rows, r.Requests, r.Concurrency)
			}
		}
	})

	t.Run("dropped", func(t *testing.T) {
		// The same names can be used again: the previous runs dropped their tables.
		cfg := smallConfig(addr)
		cfg.Table = "log_none"
		if _, err := Run(ctx, cfg, []Mode{ModeAppend}, nil); err != nil {
			t.Fatal(err)
		}
	})
}

func TestPlan(t *testing.T) {
	for _, tc := range []struct{ in, want []Mode }{
		{[]Mode{ModeScan}, []Mode{ModeAppend, ModeScan}},
		{[]Mode{ModeLookup, ModeAppend}, []Mode{ModeAppend, ModeUpsert, ModeLookup}},
		{[]Mode{ModeUpsert}, []Mode{ModeUpsert}},
		{[]Mode{ModeMixed}, []Mode{ModeUpsert, ModeMixed}},
		{[]Mode{ModePrefixLookup}, []Mode{ModePrefixLookup}},
		{[]Mode{ModeLookup, ModePartialUpdate, ModeUpdate}, []Mode{ModeUpsert, ModeUpdate, ModePartialUpdate, ModeLookup}},
		{AllModes, AllModes},
	} {
		got := Plan(tc.in)
		if len(got) != len(tc.want) {
			t.Fatalf("Plan(%v) = %v, want %v", tc.in, got, tc.want)
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Fatalf("Plan(%v) = %v, want %v", tc.in, got, tc.want)
			}
		}
	}
}

func TestValidate(t *testing.T) {
	bad := []func(*Config){
		func(c *Config) { c.Rows = 0 },
		func(c *Config) { c.Columns = 0 },
		func(c *Config) { c.LogRows = -1 },
		func(c *Config) { c.BatchRows = 0 },
		func(c *Config) { c.Buckets = 0 },
		func(c *Config) { c.Concurrency = 0 },
		func(c *Config) { c.Projection = []int{2, 1} },
		func(c *Config) { c.Projection = []int{10} },
		func(c *Config) { c.Database = "__bad" },
		func(c *Config) { c.PartialColumns = 1 },
		func(c *Config) { c.PrefixFanout = 0 },
	}
	for i, f := range bad {
		cfg := DefaultConfig()
		f(&cfg)
		if err := cfg.Validate(); err == nil {
			t.Errorf("case %d: no error", i)
		}
	}
	cfg := DefaultConfig()
	if err := cfg.Validate(); err != nil {
		t.Errorf("defaults: %v", err)
	}
}

func TestQuantile(t *testing.T) {
	lat := make([]time.Duration, 1000)
	for i := range lat {
		lat[i] = time.Duration(i+1) * time.Millisecond
	}
	for _, tc := range []struct {
		q    float64
		want float64
	}{{0.5, 500}, {0.99, 990}, {0.999, 999}, {0, 1}, {1, 1000}} {
		if got := quantileMs(lat, tc.q); got != tc.want {
			t.Errorf("quantile %v = %v, want %v", tc.q, got, tc.want)
		}
	}
}

// BenchmarkAppendScan runs append and scan of 200k rows per iteration against an in-process
// server, so that `go test -bench AppendScan -cpuprofile` profiles server and client together
// (the strom binary exposes no pprof). The rows/s it reports are not comparable with a
// separate-process run: client and server share the CPU and the GC.
func BenchmarkAppendScan(b *testing.B) {
	for _, comp := range []arrowlog.Compression{arrowlog.CompressionNone, arrowlog.CompressionZstd} {
		b.Run(comp.String(), func(b *testing.B) {
			addr := startServerTB(b)
			cfg := DefaultConfig()
			cfg.Bootstrap = addr
			cfg.Rows = 200_000
			cfg.Compression = comp
			var app, scan float64
			cfg.Table = "profile" // each Run drops its tables, so the name is free again
			for b.Loop() {
				res, err := Run(context.Background(), cfg, []Mode{ModeScan}, nil)
				if err != nil {
					b.Fatal(err)
				}
				app += res[0].RowsPerSec
				scan += res[1].RowsPerSec
			}
			b.ReportMetric(app/float64(b.N), "append-rows/s")
			b.ReportMetric(scan/float64(b.N), "scan-rows/s")
		})
	}
}

// BenchmarkUpsertLookup is BenchmarkAppendScan for the primary-key path: upsert of 100k rows
// and 20k single-key lookups per iteration.
func BenchmarkUpsertLookup(b *testing.B) {
	addr := startServerTB(b)
	cfg := DefaultConfig()
	cfg.Bootstrap = addr
	cfg.Rows = 100_000
	cfg.BatchRows = 1000
	cfg.Lookups = 20_000
	cfg.Table = "profile"
	var up, qps float64
	for b.Loop() {
		res, err := Run(context.Background(), cfg, []Mode{ModeLookup}, nil)
		if err != nil {
			b.Fatal(err)
		}
		up += res[0].RowsPerSec
		qps += res[1].QPS
	}
	b.ReportMetric(up/float64(b.N), "upsert-rows/s")
	b.ReportMetric(qps/float64(b.N), "lookup-qps")
}
