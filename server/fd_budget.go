package server

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/stromdb/strom/internal/fdbudget"
	"github.com/stromdb/strom/internal/options"
	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/server/logstore"
)

// The node's file-descriptor budget (docs/operations.md, "File descriptors"): the soft
// RLIMIT_NOFILE raised to the hard limit, storage's reservation kept out of reach of clients,
// and the connection limit of every listener (Fluss and Kafka) capped by what is left.

// fdWatchInterval is how often the open descriptors are counted against the limit.
const fdWatchInterval = 10 * time.Second

// fdWarnShare of the limit in use makes the watcher WARN: storage is eating into its margin.
const fdWarnShare = 0.9

// applyFDBudget raises the descriptor limit and caps cfg.MaxConnections by the budget. An
// explicit netty.server.max-connections above the budget is lowered with a WARN.
func (n *Node) applyFDBudget() error {
	before, after, err := fdbudget.Raise()
	if err != nil {
		n.log.Warn("cannot raise the file-descriptor limit; budgeting the current one", "err", err)
	} else if after > before {
		n.log.Info("raised the file-descriptor limit", "from", before, "to", after)
	}
	limit, err := fdbudget.Limit()
	if err != nil {
		return err
	}
	reserved, err := options.FDReserved.Get(n.cfg.Raw)
	if err != nil {
		return err
	}
	n.fds = fdbudget.Plan(limit, reserved)
	if n.cfg.MaxConnections > n.fds.Connections {
		if options.MaxConnections.IsSet(n.cfg.Raw) {
			n.log.Warn("netty.server.max-connections is above what the file-descriptor limit leaves for clients; lowered",
				"configured", n.cfg.MaxConnections, "limit", n.fds.Connections, "RLIMIT_NOFILE", limit, "reserved", n.fds.Reserved)
		}
		n.cfg.MaxConnections = n.fds.Connections
	}
	// Half of storage's reservation goes to log segment files, which are opened on demand
	// and closed least recently used first (docs/cluster.md, "Scale"); the other half is
	// for etcd, Pebble, replication links and the lake child.
	segFiles := max(64, n.fds.Reserved/2)
	logstore.SetOpenSegmentFiles(segFiles)
	n.log.Info("file-descriptor budget", "RLIMIT_NOFILE", limit, "reserved", n.fds.Reserved, "open_segment_files", segFiles, "max_connections", n.cfg.MaxConnections)
	return nil
}

// nodeLimits returns the connection and in-flight budgets shared by every listener.
func (n *Node) nodeLimits() *wire.Limits {
	if n.limits == nil {
		c := &n.cfg
		n.limits = wire.NewLimits(wire.LimitsConfig{
			MaxConnections: c.MaxConnections, MaxConnInflightRequests: c.MaxConnInflightRequests,
			MaxConnInflightBytes: c.MaxConnInflightBytes, MaxInflightRequests: c.MaxInflightRequests,
			MaxInflightBytes: c.MaxInflightBytes, MaxRequestEntries: c.MaxRequestEntries,
		})
	}
	return n.limits
}

// watchFDs counts the open descriptors every fdWatchInterval and WARNs (once per crossing)
// when they pass fdWarnShare of the limit.
func (n *Node) watchFDs(ctx context.Context) {
	t := time.NewTicker(fdWatchInterval)
	defer t.Stop()
	warned := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		open, err := fdbudget.Open()
		if err != nil {
			return // no /proc: nothing to watch
		}
		high := open >= int(float64(n.fds.Limit)*fdWarnShare)
		if high && !warned {
			n.log.Warn("file descriptors nearly exhausted", "open", open, "RLIMIT_NOFILE", n.fds.Limit,
				"reserved", n.fds.Reserved, "connections", n.nodeLimits().Connections(), "max_connections", n.nodeLimits().MaxConnections())
		}
		warned = high
	}
}

// fdCollector exports the budget and its use as metrics.
type fdCollector struct{ n *Node }

var (
	fdOpenDesc     = prometheus.NewDesc("strom_fd_open", "File descriptors open in the process (every owner).", nil, nil)
	fdLimitDesc    = prometheus.NewDesc("strom_fd_limit", "Soft RLIMIT_NOFILE after raising it to the hard limit.", nil, nil)
	fdReservedDesc = prometheus.NewDesc("strom_fd_reserved", "File descriptors kept for storage, etcd, replication and the lake child.", nil, nil)
	connMaxDesc    = prometheus.NewDesc("strom_connections_max", "Client connection limit over all listeners (Fluss and Kafka).", nil, nil)
	connOpenDesc   = prometheus.NewDesc("strom_connections_open", "Client connections open over all listeners (Fluss and Kafka).", nil, nil)
	connRefDesc    = prometheus.NewDesc("strom_connections_refused_total", "Connections closed at accept because the connection limit was reached.", nil, nil)
)

func (c fdCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{fdOpenDesc, fdLimitDesc, fdReservedDesc, connMaxDesc, connOpenDesc, connRefDesc} {
		ch <- d
	}
}

func (c fdCollector) Collect(ch chan<- prometheus.Metric) {
	if open, err := fdbudget.Open(); err == nil {
		ch <- prometheus.MustNewConstMetric(fdOpenDesc, prometheus.GaugeValue, float64(open))
	}
	ch <- prometheus.MustNewConstMetric(fdLimitDesc, prometheus.GaugeValue, float64(c.n.fds.Limit))
	ch <- prometheus.MustNewConstMetric(fdReservedDesc, prometheus.GaugeValue, float64(c.n.fds.Reserved))
	l := c.n.nodeLimits()
	ch <- prometheus.MustNewConstMetric(connMaxDesc, prometheus.GaugeValue, float64(l.MaxConnections()))
	ch <- prometheus.MustNewConstMetric(connOpenDesc, prometheus.GaugeValue, float64(l.Connections()))
	ch <- prometheus.MustNewConstMetric(connRefDesc, prometheus.CounterValue, float64(l.RefusedConnections()))
}
