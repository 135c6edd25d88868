package compare

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// Metric keys of a Sample. Go-client workloads are "go.<mode>.<field>", pyfluss ones
// "py.<workload>.rows_per_sec".
const (
	KeyColdStart = "cold_start_s"
	KeyRSS       = "rss_mib"
	KeyPeakRSS   = "peak_rss_mib"
	KeyLoad      = "load1" // 1-minute load average when the round ended (context, not compared)
)

// Sample is what one round measured on one system.
type Sample struct {
	System  string             `json:"system"`
	Round   int                `json:"round"`
	Metrics map[string]float64 `json:"metrics"`
	Error   string             `json:"error,omitempty"` // the round failed after measuring Metrics
}

// MetricDef is one row of the ratio table.
type MetricDef struct {
	Key          string
	Label        string
	Unit         string  // "rows" (rows/s), "qps", "ms", "MiB", "s"
	HigherBetter bool    // throughput; false for latency, memory, start time
	GoalRatio    float64 // Strom ÷ Fluss the issue asks for: ≥ for HigherBetter, ≤ otherwise; 0 = none
	GoalAbs      float64 // absolute bound on Strom's value (≤, lower-is-better metrics); 0 = none
	GoalMin      float64 // absolute floor on Strom's value (≥, higher-is-better metrics); 0 = none
}

// Rows is the ratio table: the servers' CPU per unit of work first (issue 26), then the
// table of issue 15 in its order. Rows without a sample on both sides are left out of the
// table.
var Rows = append(slices.Clone(cpuRows), []MetricDef{
	{Key: "go.append.rows_per_sec", Label: "append rows/s, Go client", Unit: "rows", HigherBetter: true, GoalRatio: 3},
	{Key: "go.scan.rows_per_sec", Label: "scan rows/s, Go client", Unit: "rows", HigherBetter: true, GoalRatio: 3},
	{Key: "go.append.mb_per_sec", Label: "append MB/s on the wire, Go client", Unit: "MB/s", HigherBetter: true},
	{Key: KeyAppendDiskShare, Label: "append MB/s ÷ the disk's sequential write with fdatasync", Unit: "share", HigherBetter: true, GoalMin: 0.6},
	{Key: "go.scan.mb_per_sec", Label: "scan MB/s on the wire, Go client", Unit: "MB/s", HigherBetter: true},
	{Key: KeyScanLoopbackShare, Label: "scan MB/s ÷ one loopback TCP stream", Unit: "share", HigherBetter: true, GoalMin: 0.6},
	{Key: "go.upsert.rows_per_sec", Label: "upsert rows/s (new keys), Go client", Unit: "rows", HigherBetter: true, GoalRatio: 3, GoalMin: 1e6},
	{Key: "go.update.rows_per_sec", Label: "update rows/s (existing keys), Go client", Unit: "rows", HigherBetter: true, GoalRatio: 3},
	{Key: "go.partial-update.rows_per_sec", Label: "partial update rows/s (2 of N columns), Go client", Unit: "rows", HigherBetter: true, GoalRatio: 3},
	{Key: "go.lookup.qps", Label: "lookup QPS (1 key), Go client", Unit: "qps", HigherBetter: true, GoalRatio: 3},
	{Key: "go.lookup.p99_ms", Label: "lookup p99 ms", Unit: "ms", GoalAbs: 0.5},
	{Key: "go.prefix-lookup.qps", Label: "prefix lookup QPS (1 id, 10 rows), Go client", Unit: "qps", HigherBetter: true, GoalRatio: 3},
	{Key: "go.mixed.rows_per_sec", Label: "mixed: update rows/s while looking up, Go client", Unit: "rows", HigherBetter: true, GoalRatio: 3},
	{Key: "go.mixed.qps", Label: "mixed: lookup QPS while updating, Go client", Unit: "qps", HigherBetter: true, GoalRatio: 3},
	{Key: "go.mixed.p99_ms", Label: "mixed: lookup p99 ms while updating", Unit: "ms"},
	{Key: "py.append.rows_per_sec", Label: "append rows/s, pyfluss", Unit: "rows", HigherBetter: true, GoalRatio: 3},
	{Key: "py.scan.rows_per_sec", Label: "scan rows/s, pyfluss", Unit: "rows", HigherBetter: true, GoalRatio: 3},
	{Key: "py.upsert.rows_per_sec", Label: "upsert rows/s, pyfluss", Unit: "rows", HigherBetter: true, GoalRatio: 3},
	{Key: KeyRSS, Label: "RSS after the workload (MiB)", Unit: "MiB", GoalRatio: 0.25},
	{Key: KeyPeakRSS, Label: "peak RSS (MiB)", Unit: "MiB"},
	{Key: KeyColdStart, Label: "cold start to ready (s)", Unit: "s", GoalAbs: 0.2},
}...)

// Stat is the median and range of one metric over the rounds of one system.
type Stat struct {
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
	N      int     `json:"n"`
}

// Summary holds the statistics of every metric per system and the Strom ÷ Fluss ratios.
type Summary struct {
	Baseline string                        `json:"baseline"` // the system ratios divide by
	Systems  []string                      `json:"systems"`  // in first-seen order
	Stats    map[string]map[string]Stat    `json:"stats"`    // system → metric key → stat
	Ratios   map[string]map[string]float64 `json:"ratios"`   // system → metric key → median ÷ baseline median
	// Headline is the subset of Ratios that leads the table: each system's server CPU per
	// unit of work ÷ the baseline's (below 1: cheaper), per metric key of the CPU rows.
	Headline map[string]map[string]float64 `json:"headline"`
}

// Median returns the median of xs (the mean of the middle two for an even count); NaN for none.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// Summarize computes per-system medians over samples and each system's ratio to baseline.
// Failed samples still contribute the metrics they measured.
func Summarize(baseline string, samples []Sample) Summary {
	sum := Summary{Baseline: baseline, Stats: map[string]map[string]Stat{}, Ratios: map[string]map[string]float64{},
		Headline: map[string]map[string]float64{}}
	values := map[string]map[string][]float64{}
	for _, s := range samples {
		if values[s.System] == nil {
			values[s.System] = map[string][]float64{}
			sum.Systems = append(sum.Systems, s.System)
		}
		for k, v := range s.Metrics {
			if !math.IsNaN(v) && !math.IsInf(v, 0) {
				values[s.System][k] = append(values[s.System][k], v)
			}
		}
	}
	for sys, byKey := range values {
		sum.Stats[sys] = map[string]Stat{}
		for k, xs := range byKey {
			sum.Stats[sys][k] = Stat{Median: Median(xs), Min: slices.Min(xs), Max: slices.Max(xs), N: len(xs)}
		}
	}
	base := sum.Stats[baseline]
	for _, sys := range sum.Systems {
		if sys == baseline {
			continue
		}
		sum.Ratios[sys] = map[string]float64{}
		for k, st := range sum.Stats[sys] {
			if b, ok := base[k]; ok && b.Median != 0 {
				sum.Ratios[sys][k] = st.Median / b.Median
			}
		}
		for _, d := range cpuRows {
			if r, ok := sum.Ratios[sys][d.Key]; ok {
				if sum.Headline[sys] == nil {
					sum.Headline[sys] = map[string]float64{}
				}
				sum.Headline[sys][d.Key] = r
			}
		}
	}
	return sum
}

// Met reports whether a system's median meets every goal of the row, and whether the row has
// one. A ratio goal without a ratio (no baseline sample) is not judged.
func (d MetricDef) Met(st Stat, ratio float64, hasRatio bool) (met, hasGoal bool) {
	met = true
	if d.GoalAbs > 0 {
		met, hasGoal = met && st.Median <= d.GoalAbs, true
	}
	if d.GoalMin > 0 {
		met, hasGoal = met && st.Median >= d.GoalMin, true
	}
	if d.GoalRatio > 0 && hasRatio {
		if d.HigherBetter {
			met = met && ratio >= d.GoalRatio
		} else {
			met = met && ratio <= d.GoalRatio
		}
		hasGoal = true
	}
	return met && hasGoal, hasGoal
}

func (d MetricDef) goal() string {
	var parts []string
	if d.GoalRatio > 0 && d.HigherBetter {
		parts = append(parts, fmt.Sprintf("≥ %s×", trimFloat(d.GoalRatio)))
	} else if d.GoalRatio > 0 {
		parts = append(parts, fmt.Sprintf("≤ %s", ratioText(d.GoalRatio)))
	}
	if d.GoalAbs > 0 {
		parts = append(parts, fmt.Sprintf("< %s %s", trimFloat(d.GoalAbs), d.Unit))
	}
	if d.GoalMin > 0 {
		parts = append(parts, "≥ "+formatValue(d.GoalMin, d.Unit)+map[bool]string{true: " rows/s", false: ""}[d.Unit == "rows"])
	}
	return strings.Join(parts, ", ")
}

// Markdown renders the ratio table: one row per metric both the baseline and at least one
// other system measured; per system its median with the min–max over the rounds, and for
// every non-baseline system the ratio to the baseline and whether the goal is met (judged
// on the first non-baseline system, the default configuration).
func (s Summary) Markdown(labels map[string]string) string {
	label := func(sys string) string {
		if l, ok := labels[sys]; ok {
			return l
		}
		return sys
	}
	others := slices.DeleteFunc(slices.Clone(s.Systems), func(x string) bool { return x == s.Baseline })
	var b strings.Builder
	b.WriteString("| workload | " + label(s.Baseline))
	for _, o := range others {
		b.WriteString(" | " + label(o) + " | ratio")
	}
	b.WriteString(" | goal |\n|---|---")
	for range others {
		b.WriteString("|---|---")
	}
	b.WriteString("|---|\n")
	for _, d := range Rows {
		base, ok := s.Stats[s.Baseline][d.Key]
		if !ok {
			continue
		}
		present := false
		for _, o := range others {
			if _, ok := s.Stats[o][d.Key]; ok {
				present = true
			}
		}
		if !present {
			continue
		}
		fmt.Fprintf(&b, "| %s | %s", d.Label, formatStat(base, d.Unit))
		verdict := ""
		for i, o := range others {
			st, ok := s.Stats[o][d.Key]
			if !ok {
				b.WriteString(" | – | –")
				continue
			}
			r, hasR := s.Ratios[o][d.Key]
			fmt.Fprintf(&b, " | %s | %s", formatStat(st, d.Unit), formatRatio(r, hasR, d.HigherBetter))
			if i == 0 {
				if met, has := d.Met(st, r, hasR); has {
					verdict = d.goal() + map[bool]string{true: " ✓", false: " **✗**"}[met]
				}
			}
		}
		fmt.Fprintf(&b, " | %s |\n", verdict)
	}
	b.WriteString(s.limitsLine(label))
	return b.String()
}

// limitsLine says what the machine gave in the rounds (KeyDiskMBps, KeyLoopbackMBps), per
// system since each was measured right before that system started; empty when not measured.
func (s Summary) limitsLine(label func(string) string) string {
	var parts []string
	for _, lim := range []struct{ key, what string }{{KeyDiskMBps, "disk sequential write with fdatasync"}, {KeyLoopbackMBps, "one loopback TCP stream"}} {
		var per []string
		for _, sys := range s.Systems {
			if st, ok := s.Stats[sys][lim.key]; ok {
				per = append(per, label(sys)+" "+formatStat(st, "MB/s"))
			}
		}
		if len(per) > 0 {
			parts = append(parts, lim.what+" (MB/s, measured before each server started): "+strings.Join(per, ", "))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "\nMachine limits, " + strings.Join(parts, "; and ") + ".\n"
}

func formatRatio(r float64, ok, higherBetter bool) string {
	if !ok {
		return "–"
	}
	if higherBetter {
		return fmt.Sprintf("%.2f×", r)
	}
	return fmt.Sprintf("%.2f", r)
}

// formatStat prints "median (min–max)" in the unit's style, the range only when it differs.
func formatStat(st Stat, unit string) string {
	f := func(v float64) string { return formatValue(v, unit) }
	if st.N < 2 || f(st.Min) == f(st.Max) {
		return f(st.Median)
	}
	return fmt.Sprintf("%s (%s–%s)", f(st.Median), f(st.Min), f(st.Max))
}

func formatValue(v float64, unit string) string {
	switch unit {
	case "rows", "qps":
		switch {
		case v >= 1e6:
			return fmt.Sprintf("%.2f M", v/1e6)
		case v >= 1e3:
			return fmt.Sprintf("%.1f k", v/1e3)
		}
		return fmt.Sprintf("%.0f", v)
	case "ms":
		return fmt.Sprintf("%.2f", v)
	case "us":
		return fmt.Sprintf("%.1f", v)
	case "MiB":
		return fmt.Sprintf("%.0f", v)
	case "s":
		return fmt.Sprintf("%.2f", v)
	case "MB/s":
		return fmt.Sprintf("%.0f", v)
	case "share":
		return fmt.Sprintf("%.0f %%", 100*v)
	case "cpu": // CPU seconds per unit of work: three significant digits, never an exponent
		if v <= 0 {
			return "0"
		}
		return fmt.Sprintf("%.*f", max(0, 2-int(math.Floor(math.Log10(v)))), v)
	}
	return trimFloat(v)
}

// ratioText prints a goal ratio, a third as "⅓" rather than "0.333".
func ratioText(v float64) string {
	if math.Abs(v-1.0/3) < 1e-9 {
		return "⅓"
	}
	return trimFloat(v)
}

func trimFloat(v float64) string {
	return strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.3f", v), "0"), ".")
}
