package lake

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Fluss's lake tiering metrics (coordinator scope, infixes lakeTiering and lakeTiering_table;
// MetricNames.LAKE_TIERING_*), plus pendingRecords: log records not yet tiered.
var (
	tableLabels         = []string{"database", "table"}
	descPendingTables   = prometheus.NewDesc("fluss_coordinator_lakeTiering_pendingTablesCount", "Lake tables whose tiering round is due but not running.", nil, nil)
	descRunningTables   = prometheus.NewDesc("fluss_coordinator_lakeTiering_runningTablesCount", "Lake tables being tiered now.", nil, nil)
	descTierLag         = prometheus.NewDesc("fluss_coordinator_lakeTiering_table_tierLag", "Milliseconds since the table's last successful tiering round (since it was first seen before the first).", tableLabels, nil)
	descTieredTimestamp = prometheus.NewDesc("fluss_coordinator_lakeTiering_table_tieredTimestamp", "Epoch milliseconds of the last successful tiering round (when first seen before the first).", tableLabels, nil)
	descTierDuration    = prometheus.NewDesc("fluss_coordinator_lakeTiering_table_tierDuration", "Milliseconds the last tiering round took.", tableLabels, nil)
	descFailures        = prometheus.NewDesc("fluss_coordinator_lakeTiering_table_failuresTotal", "Failed tiering rounds.", tableLabels, nil)
	descFileSize        = prometheus.NewDesc("fluss_coordinator_lakeTiering_table_fileSize", "Total size in bytes of the Iceberg table's data files after the last commit; -1 before the first.", tableLabels, nil)
	descRecordCount     = prometheus.NewDesc("fluss_coordinator_lakeTiering_table_recordCount", "Total records of the Iceberg table after the last commit; -1 before the first.", tableLabels, nil)
	descPendingTime     = prometheus.NewDesc("fluss_coordinator_lakeTiering_table_pendingTime", "Milliseconds the table has been due for a round without one running; 0 otherwise.", tableLabels, nil)
	descFreshness       = prometheus.NewDesc("fluss_coordinator_lakeTiering_table_freshness", "The table's table.datalake.freshness in milliseconds.", tableLabels, nil)
	descPendingRecords  = prometheus.NewDesc("fluss_coordinator_lakeTiering_table_pendingRecords", "Log records behind the tiered offsets after the last commit (Strom).", tableLabels, nil)
)

// Describe implements prometheus.Collector.
func (t *Tierer) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descPendingTables, descRunningTables, descTierLag, descTieredTimestamp, descTierDuration,
		descFailures, descFileSize, descRecordCount, descPendingTime, descFreshness, descPendingRecords} {
		ch <- d
	}
}

// Collect implements prometheus.Collector: the progress of every table the tiering has seen
// that is still lake-enabled.
func (t *Tierer) Collect(ch chan<- prometheus.Metric) {
	now := t.opts.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	var pending, running float64
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	for id, st := range t.tables {
		info, ok := t.opts.Catalog.TableByID(id)
		if !ok || !info.Descriptor.Properties.DataLakeEnabled() || st.path.Table == "" {
			continue
		}
		l := []string{st.path.Database, st.path.Table}
		tiered := st.tiered
		if tiered.IsZero() {
			tiered = st.seen
		}
		var pendingFor time.Duration
		switch {
		case st.running:
			running++
		case !st.pendingSince.IsZero():
			pending++
			pendingFor = now.Sub(st.pendingSince)
		}
		gauge(descTierLag, float64(now.Sub(tiered).Milliseconds()), l...)
		gauge(descTieredTimestamp, float64(tiered.UnixMilli()), l...)
		gauge(descTierDuration, float64(st.duration.Milliseconds()), l...)
		ch <- prometheus.MustNewConstMetric(descFailures, prometheus.CounterValue, float64(st.failures), l...)
		gauge(descFileSize, float64(st.fileBytes), l...)
		gauge(descRecordCount, float64(st.records), l...)
		gauge(descPendingTime, float64(pendingFor.Milliseconds()), l...)
		gauge(descFreshness, float64(st.freshness.Milliseconds()), l...)
		gauge(descPendingRecords, float64(st.pending), l...)
	}
	gauge(descPendingTables, pending)
	gauge(descRunningTables, running)
}
