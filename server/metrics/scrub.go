package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/stromdb/strom/server/tablet"
)

// scrubSource is a tablet server with a scrubber (tablet.Server); a Tablet without one
// exports no scrubber metrics.
type scrubSource interface {
	ScrubStats() tablet.ScrubStats
}

// scrubCollector exports the scrubber's counters (docs/durability.md, "The scrubber").
type scrubCollector struct {
	src                           scrubSource
	bytes, corrupt, repairs, cuts *prometheus.Desc
}

func newScrubCollector(t Tablet) prometheus.Collector {
	src, _ := t.(scrubSource)
	const s = "fluss_tabletserver_"
	return &scrubCollector{src: src,
		bytes:   desc(s+"scrubBytes_total", "Bytes of sealed log segments the scrubber re-read and checked."),
		corrupt: desc(s+"scrubCorruptReplicas_total", "Replicas the scrubber found corrupt (bytes that went bad after their first check)."),
		repairs: desc(s+"scrubRepairedReplicas_total", "Corrupt follower replicas rebuilt from their leader."),
		cuts:    desc(s+"scrubCutReplicas_total", "Of the repaired replicas, corrupt logs cut at their last good batch and fetched on from there, not copied whole."),
	}
}

func (c *scrubCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.bytes
	ch <- c.corrupt
	ch <- c.repairs
	ch <- c.cuts
}

func (c *scrubCollector) Collect(ch chan<- prometheus.Metric) {
	if c.src == nil {
		return
	}
	st := c.src.ScrubStats()
	ch <- prometheus.MustNewConstMetric(c.bytes, prometheus.CounterValue, float64(st.Bytes))
	ch <- prometheus.MustNewConstMetric(c.corrupt, prometheus.CounterValue, float64(st.Corrupt))
	ch <- prometheus.MustNewConstMetric(c.repairs, prometheus.CounterValue, float64(st.Repaired))
	ch <- prometheus.MustNewConstMetric(c.cuts, prometheus.CounterValue, float64(st.Cut))
}
