package remotelog

import (
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/stromdb/strom/server/cluster"
)

// metrics are the tiering counters. Names follow Fluss's MetricNames (remoteLogCopyBytes...,
// remoteLogSize); see docs/tiered-storage.md for how they appear in Prometheus.
type metrics struct {
	copied, copiedBytes, copyErrors atomic.Int64
	deleted, deleteErrors           atomic.Int64
	orphans, localDeleted, failures atomic.Int64

	mu   sync.Mutex
	size map[cluster.Bucket]int64 // remote log bytes per bucket
}

func newMetrics() *metrics { return &metrics{size: map[cluster.Bucket]int64{}} }

func (m *metrics) setBucket(b cluster.Bucket, man *Manifest) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if man == nil {
		delete(m.size, b)
		return
	}
	m.size[b] = man.Size()
}

var (
	descCopyBytes   = prometheus.NewDesc("fluss_tabletserver_remoteLogCopyBytes_total", "Bytes of log segments copied to remote storage (Fluss remoteLogCopyBytesPerSecond).", nil, nil)
	descCopyReqs    = prometheus.NewDesc("fluss_tabletserver_remoteLogCopyRequests_total", "Log segments copied to remote storage (Fluss remoteLogCopyRequestsPerSecond).", nil, nil)
	descCopyErrors  = prometheus.NewDesc("fluss_tabletserver_remoteLogCopyError_total", "Failed segment copies (Fluss remoteLogCopyErrorPerSecond).", nil, nil)
	descDeleteReqs  = prometheus.NewDesc("fluss_tabletserver_remoteLogDeleteRequests_total", "Remote segments deleted (Fluss remoteLogDeleteRequestsPerSecond).", nil, nil)
	descDeleteErrs  = prometheus.NewDesc("fluss_tabletserver_remoteLogDeleteError_total", "Failed remote segment deletions (Fluss remoteLogDeleteErrorPerSecond).", nil, nil)
	descRemoteSize  = prometheus.NewDesc("fluss_tabletserver_remoteLogSize", "Bytes of the remote log of the buckets this server hosts (Fluss remoteLogSize).", nil, nil)
	descFailures    = prometheus.NewDesc("strom_remote_log_tiering_failures_total", "Tiering passes of a bucket that failed (remote storage or metadata store errors).", nil, nil)
	descOrphans     = prometheus.NewDesc("strom_remote_log_orphans_removed_total", "Objects no committed manifest names, removed by the sweep.", nil, nil)
	descLocalDelete = prometheus.NewDesc("strom_remote_log_local_segments_deleted_total", "Local segments deleted after their copy was committed.", nil, nil)
	descFailing     = prometheus.NewDesc("strom_remote_log_tiering_failing", "1 while the last tiering pass of some bucket failed.", nil, nil)
)

// Describe implements prometheus.Collector.
func (m *Manager) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descCopyBytes, descCopyReqs, descCopyErrors, descDeleteReqs, descDeleteErrs,
		descRemoteSize, descFailures, descOrphans, descLocalDelete, descFailing} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (m *Manager) Collect(ch chan<- prometheus.Metric) {
	c := func(d *prometheus.Desc, v int64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v))
	}
	c(descCopyBytes, m.m.copiedBytes.Load())
	c(descCopyReqs, m.m.copied.Load())
	c(descCopyErrors, m.m.copyErrors.Load())
	c(descDeleteReqs, m.m.deleted.Load())
	c(descDeleteErrs, m.m.deleteErrors.Load())
	c(descFailures, m.m.failures.Load())
	c(descOrphans, m.m.orphans.Load())
	c(descLocalDelete, m.m.localDeleted.Load())
	m.m.mu.Lock()
	var size int64
	for _, v := range m.m.size {
		size += v
	}
	m.m.mu.Unlock()
	ch <- prometheus.MustNewConstMetric(descRemoteSize, prometheus.GaugeValue, float64(size))
	failing := 0.0
	if m.failing.Load() {
		failing = 1
	}
	ch <- prometheus.MustNewConstMetric(descFailing, prometheus.GaugeValue, failing)
}

// Failures returns the number of failed bucket passes so far (tests, operations).
func (m *Manager) Failures() int64 { return m.m.failures.Load() }
