package compare

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stromdb/strom/cmd/strom/bench"
)

func TestAddServerCPUPerUnitOfWork(t *testing.T) {
	m := map[string]float64{}
	addServerCPU(m, bench.Result{Mode: bench.ModeAppend, Rows: 200_000, ServerCPUSeconds: 1.5})
	addServerCPU(m, bench.Result{Mode: bench.ModeLookup, Rows: 20_000, Requests: 20_000, ServerCPUSeconds: 0.5})
	addServerCPU(m, bench.Result{Mode: bench.ModePrefixLookup, Rows: 20_000, Requests: 1000, LookupBatch: 2, ServerCPUSeconds: 0.1})
	addServerCPU(m, bench.Result{Mode: bench.ModeMixed, Rows: 100_000, Requests: 150, ServerCPUSeconds: 2})
	addServerCPU(m, bench.Result{Mode: bench.ModeUpdate, Rows: 100_000}) // not measured
	for key, want := range map[string]float64{
		"go.append.server_cpu_s":                       1.5,
		"go.append.server_cpu_s_per_1m_rows":           7.5,   // 1.5 s for 0.2 M rows
		"go.lookup.server_cpu_s_per_1k_lookups":        0.025, // 0.5 s for 20 k keys
		"go.prefix-lookup.server_cpu_s_per_1k_lookups": 0.05,  // 0.1 s for 2 k ids, not the 20 k rows returned
		"go.mixed.server_cpu_s_per_1m_rows":            20,    // per row written
	} {
		if got, ok := m[key]; !ok || math.Abs(got-want) > 1e-12 {
			t.Errorf("%s = %v (present %v), want %v", key, got, ok, want)
		}
	}
	for k := range m {
		if strings.HasPrefix(k, "go.update.") {
			t.Errorf("unmeasured update recorded %s", k)
		}
	}
	if _, ok := m["go.lookup.server_cpu_s_per_1m_rows"]; ok {
		t.Error("lookups also reported per million rows")
	}
}

func TestCPUReadingSince(t *testing.T) {
	a, b := cpuReading{at: 2 * time.Second}, cpuReading{at: 5 * time.Second}
	if d, ok := a.since(b); !ok || d != 3*time.Second {
		t.Errorf("since = %v, %v; want 3s", d, ok)
	}
	for _, tc := range [][2]cpuReading{
		{{err: errors.New("gone")}, b},
		{a, {err: errors.New("gone")}},
		{b, a}, // a counter that went backwards is another process
	} {
		if _, ok := tc[0].since(tc[1]); ok {
			t.Errorf("since(%v, %v) succeeded", tc[0], tc[1])
		}
	}
}

func TestGroupCPU(t *testing.T) {
	if _, err := (&group{}).cpu(); err == nil {
		t.Error("cpu of an empty group: no error")
	}
	dir := t.TempDir()
	// Two processes: the sum is read without error and never decreases while they run.
	busy, err := startProcess("busy", dir+"/busy.log", dir, []string{"sleep", "60"})
	if err != nil {
		t.Skipf("no sleep binary: %v", err)
	}
	idle, err := startProcess("idle", dir+"/idle.log", dir, []string{"sleep", "60"})
	if err != nil {
		t.Fatal(err)
	}
	g := &group{}
	g.add(busy)
	g.add(idle)
	defer g.stop(time.Second)
	first, err := g.cpu()
	if err != nil {
		t.Fatal(err)
	}
	second, err := g.cpu()
	if err != nil || second < first {
		t.Errorf("cpu readings %v then %v (%v)", first, second, err)
	}
	idle.stop(time.Second)
	if _, err := g.cpu(); err == nil {
		t.Error("cpu with a process gone: no error (its time would be missing from the sum)")
	}
}

func TestMarkdownLeadsWithServerCPU(t *testing.T) {
	samples := []Sample{
		{System: "fluss", Round: 1, Metrics: map[string]float64{"go.append.rows_per_sec": 2e6,
			"go.append.server_cpu_s_per_1m_rows": 9, "go.lookup.server_cpu_s_per_1k_lookups": 0.04, KeyRoundServerCPU: 120}},
		{System: "fluss", Round: 2, Metrics: map[string]float64{"go.append.rows_per_sec": 2e6,
			"go.append.server_cpu_s_per_1m_rows": 11, "go.lookup.server_cpu_s_per_1k_lookups": 0.05, KeyRoundServerCPU: 130}},
		{System: "strom", Round: 1, Metrics: map[string]float64{"go.append.rows_per_sec": 3e6,
			"go.append.server_cpu_s_per_1m_rows": 2.5, "go.lookup.server_cpu_s_per_1k_lookups": 0.0255, KeyRoundServerCPU: 40}},
		{System: "strom", Round: 2, Metrics: map[string]float64{"go.append.rows_per_sec": 3e6,
			"go.append.server_cpu_s_per_1m_rows": 3.5, "go.lookup.server_cpu_s_per_1k_lookups": 0.0245, KeyRoundServerCPU: 44}},
	}
	sum := Summarize("fluss", samples)
	lines := strings.Split(strings.TrimSpace(sum.Markdown(map[string]string{"fluss": "Fluss", "strom": "Strom"})), "\n")
	want := []string{
		"| workload | Fluss | Strom | ratio | goal |",
		"|---|---|---|---|---|",
		"| append: server CPU s per 1M rows | 10.0 (9.00–11.0) | 3.00 (2.50–3.50) | 0.30 | ≤ ⅓ ✓ |",
		"| lookup: server CPU s per 1k lookups | 0.0450 (0.0400–0.0500) | 0.0250 (0.0245–0.0255) | 0.56 | ≤ ⅓ **✗** |",
		"| server CPU s, whole round (start-up and every workload) | 125.00 (120.00–130.00) | 42.00 (40.00–44.00) | 0.34 |  |",
		"| append rows/s, Go client | 2.00 M | 3.00 M | 1.50× | ≥ 3× **✗** |",
	}
	if len(lines) != len(want) {
		t.Fatalf("table:\n%s\nwant %d lines", strings.Join(lines, "\n"), len(want))
	}
	for i := range want {
		if lines[i] != want[i] {
			t.Errorf("line %d:\n got %s\nwant %s", i, lines[i], want[i])
		}
	}
	h := sum.Headline["strom"]
	if len(h) != 3 || math.Abs(h["go.append.server_cpu_s_per_1m_rows"]-0.3) > 1e-12 || math.Abs(h[KeyRoundServerCPU]-42.0/125) > 1e-12 {
		t.Errorf("headline %v: want the three CPU ratios and nothing else", h)
	}
	if _, ok := sum.Headline["fluss"]; ok {
		t.Error("the baseline has a headline ratio to itself")
	}
}
