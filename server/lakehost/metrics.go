package lakehost

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/server/lakeconf"
)

// metricsTimeout bounds one scrape of the child's metrics.
const metricsTimeout = 5 * time.Second

// Describe implements prometheus.Collector. The tiering's metrics are those the child reports
// (package lake's fluss_coordinator_lakeTiering_*), so the collector is an unchecked one.
func (h *Host) Describe(chan<- *prometheus.Desc) {}

// Collect implements prometheus.Collector: the child's metrics as it reports them, none while
// it is down.
func (h *Host) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), metricsTimeout)
	defer cancel()
	var reply lakeconf.MetricsReply
	if err := h.call(ctx, lakeconf.MethodMetrics, lakeconf.Nothing{}, &reply); err != nil {
		h.log.Debug("lake tiering metrics", "err", err)
		return
	}
	for _, data := range reply.Families {
		var mf dto.MetricFamily
		if err := proto.Unmarshal(data, &mf); err != nil {
			h.log.Warn("lake tiering metrics", "err", err)
			return
		}
		for _, m := range ConstMetrics(&mf) {
			ch <- m
		}
	}
}

// ConstMetrics turns a gathered gauge, counter or untyped metric family back into metrics.
func ConstMetrics(mf *dto.MetricFamily) []prometheus.Metric {
	var out []prometheus.Metric
	for _, m := range mf.GetMetric() {
		names := make([]string, 0, len(m.GetLabel()))
		values := make([]string, 0, len(m.GetLabel()))
		for _, l := range m.GetLabel() {
			names = append(names, l.GetName())
			values = append(values, l.GetValue())
		}
		desc := prometheus.NewDesc(mf.GetName(), mf.GetHelp(), names, nil)
		var (
			vt prometheus.ValueType
			v  float64
		)
		switch mf.GetType() {
		case dto.MetricType_GAUGE:
			vt, v = prometheus.GaugeValue, m.GetGauge().GetValue()
		case dto.MetricType_COUNTER:
			vt, v = prometheus.CounterValue, m.GetCounter().GetValue()
		case dto.MetricType_UNTYPED:
			vt, v = prometheus.UntypedValue, m.GetUntyped().GetValue()
		default:
			continue // the tiering reports no summaries or histograms
		}
		if cm, err := prometheus.NewConstMetric(desc, vt, v, values...); err == nil {
			out = append(out, cm)
		}
	}
	return out
}
