package compare

import (
	"math"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		in   []float64
		want float64
	}{{[]float64{3, 1, 2}, 2}, {[]float64{4, 1, 3, 2}, 2.5}, {[]float64{7}, 7}} {
		in := append([]float64(nil), tc.in...)
		if got := Median(tc.in); got != tc.want {
			t.Errorf("Median(%v) = %v, want %v", tc.in, got, tc.want)
		}
		for i := range in {
			if in[i] != tc.in[i] {
				t.Errorf("Median reordered its input: %v", tc.in)
			}
		}
	}
	if !math.IsNaN(Median(nil)) {
		t.Error("Median(nil) is not NaN")
	}
}

// fakeSamples is three interleaved rounds of Fluss and Strom with known medians:
// append Fluss 2M, Strom 7M (ratio 3.5); lookup p99 Fluss 2 ms, Strom 0.4 ms (two rounds); RSS Fluss 600,
// Strom 120 (0.2); cold start Fluss 9 s, Strom 0.3 s. Strom's second round failed after
// measuring append only.
func fakeSamples() []Sample {
	return []Sample{
		{System: "fluss", Round: 1, Metrics: map[string]float64{"go.append.rows_per_sec": 2.1e6, "go.lookup.p99_ms": 2, KeyRSS: 600, KeyColdStart: 9}},
		{System: "strom", Round: 1, Metrics: map[string]float64{"go.append.rows_per_sec": 6e6, "go.lookup.p99_ms": 0.3, KeyRSS: 110, KeyColdStart: 0.3}},
		{System: "fluss", Round: 2, Metrics: map[string]float64{"go.append.rows_per_sec": 1.5e6, "go.lookup.p99_ms": 3, KeyRSS: 620, KeyColdStart: 10}},
		{System: "strom", Round: 2, Metrics: map[string]float64{"go.append.rows_per_sec": 7e6}, Error: "pyfluss workload: boom"},
		{System: "fluss", Round: 3, Metrics: map[string]float64{"go.append.rows_per_sec": 2e6, "go.lookup.p99_ms": 1, KeyRSS: 580, KeyColdStart: 8, "py.scan.rows_per_sec": 1e6}},
		{System: "strom", Round: 3, Metrics: map[string]float64{"go.append.rows_per_sec": 8e6, "go.lookup.p99_ms": 0.5, KeyRSS: 130, KeyColdStart: math.NaN()}},
	}
}

func TestSummarize(t *testing.T) {
	sum := Summarize("fluss", fakeSamples())
	if len(sum.Systems) != 2 || sum.Systems[0] != "fluss" || sum.Systems[1] != "strom" {
		t.Fatalf("systems %v", sum.Systems)
	}
	app := sum.Stats["strom"]["go.append.rows_per_sec"]
	if app.Median != 7e6 || app.Min != 6e6 || app.Max != 8e6 || app.N != 3 {
		t.Errorf("strom append %+v, want median 7M of 3 (the failed round's value counts)", app)
	}
	if cs := sum.Stats["strom"][KeyColdStart]; cs.N != 1 || cs.Median != 0.3 {
		t.Errorf("strom cold start %+v: NaN must be dropped", cs)
	}
	for _, tc := range []struct {
		key  string
		want float64
	}{{"go.append.rows_per_sec", 3.5}, {"go.lookup.p99_ms", 0.2}, {KeyRSS, 0.2}} {
		if got := sum.Ratios["strom"][tc.key]; math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("ratio %s = %v, want %v", tc.key, got, tc.want)
		}
	}
	if _, ok := sum.Ratios["fluss"]; ok {
		t.Error("the baseline has ratios to itself")
	}
	if _, ok := sum.Ratios["strom"]["py.scan.rows_per_sec"]; ok {
		t.Error("ratio for a metric Strom never measured")
	}
}

func TestMarkdown(t *testing.T) {
	md := Summarize("fluss", fakeSamples()).Markdown(map[string]string{"fluss": "Fluss", "strom": "Strom"})
	lines := strings.Split(strings.TrimSpace(md), "\n")
	want := []string{
		"| workload | Fluss | Strom | ratio | goal |",
		"|---|---|---|---|---|",
		"| append rows/s, Go client | 2.00 M (1.50 M–2.10 M) | 7.00 M (6.00 M–8.00 M) | 3.50× | ≥ 3× ✓ |",
		"| lookup p99 ms | 2.00 (1.00–3.00) | 0.40 (0.30–0.50) | 0.20 | < 0.5 ms ✓ |",
		"| RSS after the workload (MiB) | 600 (580–620) | 120 (110–130) | 0.20 | ≤ 0.25 ✓ |",
		"| cold start to ready (s) | 9.00 (8.00–10.00) | 0.30 | 0.03 | < 0.2 s **✗** |",
	}
	if len(lines) != len(want) {
		t.Fatalf("table:\n%s\nwant %d lines", md, len(want))
	}
	for i := range want {
		if lines[i] != want[i] {
			t.Errorf("line %d:\n got %s\nwant %s", i, lines[i], want[i])
		}
	}
}

func TestMarkdownSecondColumnAndMissingGoal(t *testing.T) {
	samples := []Sample{
		{System: "fluss", Round: 1, Metrics: map[string]float64{"go.scan.rows_per_sec": 4e6, KeyPeakRSS: 700}},
		{System: "strom", Round: 1, Metrics: map[string]float64{"go.scan.rows_per_sec": 8e6, KeyPeakRSS: 100}},
		{System: "strom-1s", Round: 1, Metrics: map[string]float64{"go.scan.rows_per_sec": 1.6e7}},
	}
	md := Summarize("fluss", samples).Markdown(nil)
	for _, want := range []string{
		"| workload | fluss | strom | ratio | strom-1s | ratio | goal |",
		"| scan rows/s, Go client | 4.00 M | 8.00 M | 2.00× | 16.00 M | 4.00× | ≥ 3× **✗** |", // judged on the first column
		"| peak RSS (MiB) | 700 | 100 | 0.14 | – | – |  |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("table lacks %q:\n%s", want, md)
		}
	}
}

func TestProcMemoryAndGroup(t *testing.T) {
	rss, hwm, err := procMemory(os.Getpid())
	if err != nil || rss <= 0 || hwm < rss {
		t.Fatalf("procMemory(self) = %d, %d, %v", rss, hwm, err)
	}
	if _, err := parseKB("12 MB"); err == nil {
		t.Error("parseKB accepted MB")
	}
	// A group stops its processes, and a process that exits is reported as failed.
	dir := t.TempDir()
	sleeper, err := startProcess("sleeper", dir+"/sleep.log", dir, []string{"sleep", "60"})
	if err != nil {
		t.Skipf("no sleep binary: %v", err)
	}
	g := &group{}
	g.add(sleeper)
	if err := g.failed(); err != nil {
		t.Fatalf("running group reported failed: %v", err)
	}
	if _, _, err := g.memory(); err != nil {
		t.Errorf("memory of a running process: %v", err)
	}
	quitter, err := startProcess("quitter", dir+"/quit.log", dir, []string{"sh", "-c", "echo bye; exit 3"})
	if err != nil {
		t.Fatal(err)
	}
	g.add(quitter)
	<-quitter.done
	if err := g.failed(); err == nil || !strings.Contains(err.Error(), "quitter") || !strings.Contains(err.Error(), "bye") {
		t.Errorf("failed() = %v, want quitter's exit with its log", err)
	}
	start := time.Now()
	g.stop(10 * time.Second)
	if !sleeper.exited() || time.Since(start) > 5*time.Second {
		t.Errorf("stop: exited %v after %s", sleeper.exited(), time.Since(start))
	}
	g.stop(time.Second) // twice is fine
	if err := exec.Command("kill", "-0", itoa(sleeper.pid())).Run(); err == nil {
		t.Error("sleeper still alive")
	}
}

func TestFreePorts(t *testing.T) {
	ports, err := freePorts(3)
	if err != nil {
		t.Fatal(err)
	}
	if len(ports) != 3 || ports[0] == ports[1] || ports[1] == ports[2] || ports[0] == ports[2] {
		t.Errorf("ports %v", ports)
	}
}

func itoa(i int) string { return strconv.Itoa(i) }
