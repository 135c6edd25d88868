package remotelog

import (
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/stromdb/strom/server/cluster"
)

// metrics are the tiering counters, named as Fluss names them (MetricNames upstream) in the
// Prometheus scheme of server/metrics: the table's log group counts copies and deletions
// (remoteLogCopyBytesPerSecond -> fluss_tabletserver_table_log_remoteLogCopyBytes_total),
// each bucket's remoteLog group has numSegments, endOffset and size, and the server's
// physicalStorage group has remoteLogSize. Strom-only: failed passes, orphans swept, local
// segments deleted and whether tiering is failing now.
type metrics struct {
	orphans, localDeleted, failures atomic.Int64

	mu     sync.Mutex
	tables map[cluster.TablePath]*tableCounters
}

type tableCounters struct {
	copies, copyBytes, copyErrors, deletes, deleteErrors atomic.Int64
}

func newMetrics() *metrics { return &metrics{tables: map[cluster.TablePath]*tableCounters{}} }

func (m *metrics) table(p cluster.TablePath) *tableCounters {
	m.mu.Lock()
	defer m.mu.Unlock()
	tc := m.tables[p]
	if tc == nil {
		tc = &tableCounters{}
		m.tables[p] = tc
	}
	return tc
}

const (
	scope   = "fluss_tabletserver_"
	tableNS = scope + "table_log_"
	bucket  = scope + "table_bucket_remoteLog_"
)

var (
	tableLabels  = []string{"database", "table"}
	bucketLabels = []string{"database", "table", "partition", "bucket"}

	descCopyBytes    = prometheus.NewDesc(tableNS+"remoteLogCopyBytes_total", "Bytes of log segments copied to remote storage (Fluss remoteLogCopyBytesPerSecond).", tableLabels, nil)
	descCopyReqs     = prometheus.NewDesc(tableNS+"remoteLogCopyRequests_total", "Log segments copied to remote storage (Fluss remoteLogCopyRequestsPerSecond).", tableLabels, nil)
	descCopyErrors   = prometheus.NewDesc(tableNS+"remoteLogCopyError_total", "Failed segment copies (Fluss remoteLogCopyErrorPerSecond).", tableLabels, nil)
	descDeleteReqs   = prometheus.NewDesc(tableNS+"remoteLogDeleteRequests_total", "Remote segments deleted (Fluss remoteLogDeleteRequestsPerSecond).", tableLabels, nil)
	descDeleteErrs   = prometheus.NewDesc(tableNS+"remoteLogDeleteError_total", "Failed remote segment deletions (Fluss remoteLogDeleteErrorPerSecond).", tableLabels, nil)
	descBucketSegs   = prometheus.NewDesc(bucket+"numSegments", "Segments in the bucket's committed remote log.", bucketLabels, nil)
	descBucketEnd    = prometheus.NewDesc(bucket+"endOffset", "End offset (exclusive) of the bucket's committed remote log.", bucketLabels, nil)
	descBucketSize   = prometheus.NewDesc(bucket+"size", "Bytes of the bucket's committed remote log.", bucketLabels, nil)
	descRemoteSize   = prometheus.NewDesc(scope+"physicalStorage_remoteLogSize", "Bytes of the remote logs of the buckets this server hosts (Fluss remoteLogSize).", nil, nil)
	descFailures     = prometheus.NewDesc(scope+"remoteLogTieringFailures_total", "Tiering passes of a bucket that failed (remote storage or metadata store errors).", nil, nil)
	descOrphans      = prometheus.NewDesc(scope+"remoteLogOrphansRemoved_total", "Objects no committed manifest names, removed by the sweep.", nil, nil)
	descLocalDeleted = prometheus.NewDesc(scope+"remoteLogLocalSegmentsDeleted_total", "Local segments deleted after their copy was committed.", nil, nil)
	descFailing      = prometheus.NewDesc(scope+"remoteLogTieringFailing", "1 while remote log tiering fails (since the first failure after a success).", nil, nil)
)

// Describe implements prometheus.Collector.
func (m *Manager) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descCopyBytes, descCopyReqs, descCopyErrors, descDeleteReqs, descDeleteErrs,
		descBucketSegs, descBucketEnd, descBucketSize, descRemoteSize, descFailures, descOrphans, descLocalDeleted, descFailing} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (m *Manager) Collect(ch chan<- prometheus.Metric) {
	counter := func(d *prometheus.Desc, v int64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	m.m.mu.Lock()
	for p, tc := range m.m.tables {
		counter(descCopyBytes, tc.copyBytes.Load(), p.Database, p.Table)
		counter(descCopyReqs, tc.copies.Load(), p.Database, p.Table)
		counter(descCopyErrors, tc.copyErrors.Load(), p.Database, p.Table)
		counter(descDeleteReqs, tc.deletes.Load(), p.Database, p.Table)
		counter(descDeleteErrs, tc.deleteErrors.Load(), p.Database, p.Table)
	}
	m.m.mu.Unlock()
	var total int64
	m.mu.Lock()
	for b, st := range m.buckets {
		v := st.v.Load()
		if v == nil || v.man == nil {
			continue
		}
		labels := []string{v.path.Database, v.path.Table, v.part, strconv.Itoa(int(b.Bucket))}
		gauge(descBucketSegs, float64(len(v.man.Segments)), labels...)
		gauge(descBucketEnd, float64(v.man.EndOffset()), labels...)
		gauge(descBucketSize, float64(v.man.Size()), labels...)
		total += v.man.Size()
	}
	m.mu.Unlock()
	gauge(descRemoteSize, float64(total))
	counter(descFailures, m.m.failures.Load())
	counter(descOrphans, m.m.orphans.Load())
	counter(descLocalDeleted, m.m.localDeleted.Load())
	failing := 0.0
	if m.failing.Load() {
		failing = 1
	}
	gauge(descFailing, failing)
}

// Failures returns the number of failed bucket passes so far (tests, operations).
func (m *Manager) Failures() int64 { return m.m.failures.Load() }
