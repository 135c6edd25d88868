package compare

import (
	"context"
	"strings"
	"testing"
	"time"
)

func TestMetJudgesEveryGoalOfARow(t *testing.T) {
	upsert := MetricDef{Unit: "rows", HigherBetter: true, GoalRatio: 3, GoalMin: 1e6}
	for _, tc := range []struct {
		median, ratio float64
		hasRatio      bool
		met, has      bool
	}{
		{2e6, 3.5, true, true, true},  // both goals
		{2e6, 2.0, true, false, true}, // fast enough, not 3× the baseline
		{5e5, 4.0, true, false, true}, // 3× the baseline, under the floor
		{2e6, 0, false, true, true},   // no baseline: the floor alone is judged
		{5e5, 0, false, false, true},  // no baseline, under the floor
	} {
		met, has := upsert.Met(Stat{Median: tc.median}, tc.ratio, tc.hasRatio)
		if met != tc.met || has != tc.has {
			t.Errorf("Met(%v, ratio %v/%v) = %v,%v; want %v,%v", tc.median, tc.ratio, tc.hasRatio, met, has, tc.met, tc.has)
		}
	}
	if met, has := (MetricDef{HigherBetter: true}).Met(Stat{Median: 1}, 9, true); met || has {
		t.Errorf("a row without goals judged %v,%v", met, has)
	}
	if g := upsert.goal(); g != "≥ 3×, ≥ 1.00 M rows/s" {
		t.Errorf("goal() = %q", g)
	}
}

func TestSharesAndLimitsLine(t *testing.T) {
	m := map[string]float64{"go.append.mb_per_sec": 300, KeyDiskMBps: 1000, "go.scan.mb_per_sec": 900, KeyLoopbackMBps: 0}
	addShares(m)
	if m[KeyAppendDiskShare] != 0.3 {
		t.Errorf("append share %v, want 0.3", m[KeyAppendDiskShare])
	}
	if _, ok := m[KeyScanLoopbackShare]; ok {
		t.Error("a share was derived from an unmeasured limit")
	}
	samples := []Sample{
		{System: "fluss", Round: 1, Metrics: map[string]float64{KeyDiskMBps: 900, KeyAppendDiskShare: 0.2}},
		{System: "strom", Round: 1, Metrics: map[string]float64{KeyDiskMBps: 1100, KeyAppendDiskShare: 0.7}},
	}
	md := Summarize("fluss", samples).Markdown(nil)
	if !strings.Contains(md, "| append MB/s ÷ the disk's sequential write with fdatasync | 20 % | 70 % | 3.50× | ≥ 60 % ✓ |") {
		t.Errorf("share row missing:\n%s", md)
	}
	if !strings.Contains(md, "Machine limits, disk sequential write with fdatasync (MB/s, measured before each server started): fluss 900, strom 1100.") {
		t.Errorf("limits line missing:\n%s", md)
	}
}

func TestLimitProbesMeasureSomething(t *testing.T) {
	ctx := context.Background()
	d, err := DiskWriteMBps(ctx, t.TempDir(), 8<<20)
	if err != nil || d <= 0 {
		t.Fatalf("disk: %v MB/s, %v", d, err)
	}
	l, err := loopbackMBps(ctx, 64<<20, 5*time.Second)
	if err != nil || l <= 0 {
		t.Fatalf("loopback: %v MB/s, %v", l, err)
	}
}
