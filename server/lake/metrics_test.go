package lake

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metricValue returns the value of the named metric (the first series), or false.
func metricValue(t *testing.T, reg *prometheus.Registry, name string) (float64, bool) {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name || len(mf.Metric) == 0 {
			continue
		}
		m := mf.Metric[0]
		if m.Gauge != nil {
			return m.Gauge.GetValue(), true
		}
		return m.Counter.GetValue(), true
	}
	return 0, false
}

// The running tiering loop reports Fluss's lakeTiering_table metrics.
func TestTieringLoopReportsMetrics(t *testing.T) {
	h := newHarness(t, 1)
	tr := h.tierer()
	tr.opts.Tick = 10 * time.Millisecond
	reg := prometheus.NewRegistry()
	reg.MustRegister(tr)
	h.write(0, 5)
	tr.Start(fakeSource(h.buckets))
	deadline := time.Now().Add(10 * time.Second)
	for {
		if v, ok := metricValue(t, reg, "fluss_coordinator_lakeTiering_table_recordCount"); ok && v == 5 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("recordCount never reached 5")
		}
		time.Sleep(20 * time.Millisecond)
	}
	for name, want := range map[string]float64{
		"fluss_coordinator_lakeTiering_table_freshness":      1000,
		"fluss_coordinator_lakeTiering_table_failuresTotal":  0,
		"fluss_coordinator_lakeTiering_table_pendingRecords": 0,
	} {
		if v, ok := metricValue(t, reg, name); !ok || v != want {
			t.Errorf("%s = %v (%v), want %v", name, v, ok, want)
		}
	}
	if v, ok := metricValue(t, reg, "fluss_coordinator_lakeTiering_table_fileSize"); !ok || v <= 0 {
		t.Errorf("fileSize = %v", v)
	}
	h.checkExactly(h.scan(tr), 5)
}
