package metrics

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/cockroachdb/pebble"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/stromdb/strom/proto/flusspb"
	"github.com/stromdb/strom/server/cluster"
	"github.com/stromdb/strom/server/meta"
	"github.com/stromdb/strom/server/tablet"
)

// Catalog is what the collectors read from the coordinator's catalog.
type Catalog interface {
	DatabaseNames() []string
	TableNames(db string) ([]string, error)
	TableByPath(p cluster.TablePath) (*cluster.TableInfo, bool)
	PartitionByID(id int64) (*cluster.PartitionInfo, bool)
	Partitions(tableID int64) []*cluster.PartitionInfo
	// ClusterHealth is the coordinator's answer to GET_CLUSTER_HEALTH; /readyz and the bucket
	// gauges derive from it so that they always agree with what clients are told.
	ClusterHealth() *flusspb.GetClusterHealthResponse
}

// Tablet is what the collectors read from the tablet server.
type Tablet interface {
	Replicas() []*tablet.Replica
	PebbleMetrics() *pebble.Metrics
}

// MetaStore is the metadata store, probed for health with a read.
type MetaStore interface {
	Get(ctx context.Context, key string) ([]byte, error)
}

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, labels, nil)
}

var bucketLabels = []string{"database", "table", "partition", "bucket"}

// tabletCollector reads per-bucket log and KV state and Pebble's metrics on every scrape.
type tabletCollector struct {
	tablet  Tablet
	catalog Catalog

	leaderCount, replicaCount, writerIDs, logSize, kvSize          *prometheus.Desc
	segments, startOffset, endOffset, highWatermark                *prometheus.Desc
	bucketLogSize, bucketKvSize, bucketWriters                     *prometheus.Desc
	flushes, compactions, compactDebt, compactRunning, compactTime *prometheus.Desc
	memtable, levelFiles, levelBytes, diskUsage, readAmp           *prometheus.Desc
	cacheSize, cacheHits, cacheMisses                              *prometheus.Desc
}

func newTabletCollector(t Tablet, c Catalog) *tabletCollector {
	const s = "fluss_tabletserver_"
	const b = s + "table_bucket_"
	const p = s + "pebble_"
	return &tabletCollector{
		tablet: t, catalog: c,
		leaderCount:    desc(s+"leaderCount", "Buckets this tablet server leads."),
		replicaCount:   desc(s+"replicaCount", "Bucket replicas on this tablet server."),
		writerIDs:      desc(s+"writerIdCount", "Idempotent writer ids with state kept, over all buckets."),
		logSize:        desc(s+"logicalStorage_logSize", "Bytes of log segments of all buckets."),
		kvSize:         desc(s+"logicalStorage_kvSize", "Estimated bytes on disk of the primary-key state of all buckets."),
		segments:       desc(b+"log_numSegments", "Log segments of the bucket.", bucketLabels...),
		startOffset:    desc(b+"log_startOffset", "First offset still in the bucket's log.", bucketLabels...),
		endOffset:      desc(b+"log_endOffset", "Log end offset: the offset the next record gets.", bucketLabels...),
		highWatermark:  desc(b+"log_highWatermark", "High watermark: records below it are readable.", bucketLabels...),
		bucketWriters:  desc(b+"log_writerIdCount", "Idempotent writer ids with state kept in the bucket.", bucketLabels...),
		bucketLogSize:  desc(b+"logicalStorage_logSize", "Bytes of the bucket's log segments.", bucketLabels...),
		bucketKvSize:   desc(b+"logicalStorage_kvSize", "Estimated bytes on disk of the bucket's primary-key state.", bucketLabels...),
		flushes:        desc(p+"flushes_total", "Pebble memtable flushes."),
		compactions:    desc(p+"compactions_total", "Pebble compactions."),
		compactDebt:    desc(p+"compactionDebt_bytes", "Estimated bytes Pebble must compact to reach a stable LSM shape."),
		compactRunning: desc(p+"compactionsInProgress", "Pebble compactions running."),
		compactTime:    desc(p+"compactionTime_seconds_total", "Cumulative time spent in Pebble compactions."),
		memtable:       desc(p+"memtableSize_bytes", "Bytes allocated by Pebble memtables."),
		levelFiles:     desc(p+"levelFiles", "Sstables per LSM level.", "level"),
		levelBytes:     desc(p+"levelSize_bytes", "Bytes of sstables per LSM level.", "level"),
		diskUsage:      desc(p+"diskUsage_bytes", "Bytes on disk of the Pebble store (sstables, WAL, manifests)."),
		readAmp:        desc(p+"readAmplification", "Pebble read amplification: sstables a point read may consult."),
		cacheSize:      desc(p+"blockCacheSize_bytes", "Bytes in Pebble's block cache."),
		cacheHits:      desc(p+"blockCacheHits_total", "Pebble block cache hits."),
		cacheMisses:    desc(p+"blockCacheMisses_total", "Pebble block cache misses."),
	}
}

func (c *tabletCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.leaderCount, c.replicaCount, c.writerIDs, c.logSize, c.kvSize,
		c.segments, c.startOffset, c.endOffset, c.highWatermark, c.bucketWriters, c.bucketLogSize, c.bucketKvSize,
		c.flushes, c.compactions, c.compactDebt, c.compactRunning, c.compactTime, c.memtable, c.levelFiles,
		c.levelBytes, c.diskUsage, c.readAmp, c.cacheSize, c.cacheHits, c.cacheMisses} {
		ch <- d
	}
}

func (c *tabletCollector) Collect(ch chan<- prometheus.Metric) {
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
	}
	replicas := c.tablet.Replicas()
	var writers int
	var logBytes int64
	var kvBytes uint64
	for _, r := range replicas {
		labels := c.bucketLabels(r)
		st := r.Log.Stats()
		writers += st.Writers
		logBytes += st.Bytes
		gauge(c.segments, float64(st.Segments), labels...)
		gauge(c.startOffset, float64(r.Log.LogStartOffset()), labels...)
		gauge(c.endOffset, float64(r.Log.LogEndOffset()), labels...)
		gauge(c.highWatermark, float64(r.Log.HighWatermark()), labels...)
		gauge(c.bucketWriters, float64(st.Writers), labels...)
		gauge(c.bucketLogSize, float64(st.Bytes), labels...)
		if r.KV != nil {
			// A bucket dropped during the scrape has no size: report nothing rather than 0.
			if n, err := r.KV.DiskUsage(); err == nil {
				kvBytes += n
				gauge(c.bucketKvSize, float64(n), labels...)
			}
		}
	}
	leaders := 0
	for _, r := range replicas {
		if r.IsLeader() {
			leaders++
		}
	}
	gauge(c.leaderCount, float64(leaders))
	gauge(c.replicaCount, float64(len(replicas)))
	gauge(c.writerIDs, float64(writers))
	gauge(c.logSize, float64(logBytes))
	gauge(c.kvSize, float64(kvBytes))

	m := c.tablet.PebbleMetrics()
	counter(c.flushes, float64(m.Flush.Count))
	counter(c.compactions, float64(m.Compact.Count))
	gauge(c.compactDebt, float64(m.Compact.EstimatedDebt))
	gauge(c.compactRunning, float64(m.Compact.NumInProgress))
	counter(c.compactTime, m.Compact.Duration.Seconds())
	gauge(c.memtable, float64(m.MemTable.Size))
	for i, l := range m.Levels {
		gauge(c.levelFiles, float64(l.NumFiles), strconv.Itoa(i))
		gauge(c.levelBytes, float64(l.Size), strconv.Itoa(i))
	}
	gauge(c.diskUsage, float64(m.DiskSpaceUsage()))
	gauge(c.readAmp, float64(m.ReadAmp()))
	gauge(c.cacheSize, float64(m.BlockCache.Size))
	counter(c.cacheHits, float64(m.BlockCache.Hits))
	counter(c.cacheMisses, float64(m.BlockCache.Misses))
}

// bucketLabels returns Fluss's bucket variables: database, table, partition name ("" for
// non-partitioned tables) and bucket number.
func (c *tabletCollector) bucketLabels(r *tablet.Replica) []string {
	partition := ""
	if r.Bucket.PartitionID != cluster.NoPartition {
		if p, ok := c.catalog.PartitionByID(r.Bucket.PartitionID); ok {
			partition = p.Name
		} else {
			partition = strconv.FormatInt(r.Bucket.PartitionID, 10)
		}
	}
	return []string{r.Table.Path.Database, r.Table.Path.Table, partition, strconv.Itoa(int(r.Bucket.Bucket))}
}

// coordinatorCollector reports the catalog's counts and the metadata store's health.
type coordinatorCollector struct {
	catalog Catalog
	tablet  Tablet
	meta    MetaStore
	cluster Membership // nil on the single node

	activeCoordinators, tabletServers, tables, buckets, partitions, offline, health *prometheus.Desc
	etcdUp, etcdProbe                                                               *prometheus.Desc
}

func newCoordinatorCollector(c Catalog, t Tablet, m MetaStore, cl Membership) *coordinatorCollector {
	const s = "fluss_coordinator_"
	return &coordinatorCollector{
		catalog: c, tablet: t, meta: m, cluster: cl,
		activeCoordinators: desc(s+"activeCoordinatorCount", "1 on the active coordinator, 0 on a standby: summed over the cluster's nodes, the active coordinators (1)."),
		tabletServers:      desc(s+"activeTabletServerCount", "Live (registered) tablet servers of the cluster, as this node's control plane sees them."),
		tables:             desc(s+"tableCount", "Tables in the cluster."),
		buckets:            desc(s+"bucketCount", "Buckets in the cluster, over all tables and partitions."),
		partitions:         desc(s+"partitionCount", "Partitions in the cluster."),
		offline:            desc(s+"offlineBucketCount", "Buckets of existing tables that no tablet server has open (leader replicas minus active ones in GET_CLUSTER_HEALTH)."),
		health:             desc(s+"clusterHealthStatus", "GET_CLUSTER_HEALTH status: 0 green, 1 yellow, 2 red."),
		etcdUp:             desc(s+"etcd_up", "1 if the metadata store (etcd) answered a read within 1s at scrape time, else 0."),
		etcdProbe:          desc(s+"etcd_probeTime_seconds", "Time the metadata store took to answer the scrape-time read."),
	}
}

func (c *coordinatorCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.activeCoordinators, c.tabletServers, c.tables, c.buckets, c.partitions, c.offline, c.health, c.etcdUp, c.etcdProbe} {
		ch <- d
	}
}

func (c *coordinatorCollector) Collect(ch chan<- prometheus.Metric) {
	gauge := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v)
	}
	inv := takeInventory(c.catalog)
	h := c.catalog.ClusterHealth()
	active, servers := 1.0, 1.0
	if c.cluster != nil {
		active, servers = 0, float64(len(c.cluster.LiveServers()))
		if c.cluster.Active() {
			active = 1
		}
	}
	gauge(c.activeCoordinators, active)
	gauge(c.tabletServers, servers)
	gauge(c.tables, float64(inv.tables))
	gauge(c.buckets, float64(h.GetNumLeaderReplicas()))
	gauge(c.partitions, float64(inv.partitions))
	gauge(c.offline, float64(h.GetNumLeaderReplicas()-h.GetActiveLeaderReplicas()))
	gauge(c.health, float64(h.GetStatus()))
	d, err := probeMeta(context.Background(), c.meta)
	up := 0.0
	if err == nil {
		up = 1
	}
	gauge(c.etcdUp, up)
	gauge(c.etcdProbe, d.Seconds())
}

// probeMeta reads one key from the metadata store, bounded by a second.
func probeMeta(ctx context.Context, m MetaStore) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	start := time.Now()
	_, err := m.Get(ctx, "health/probe")
	if errors.Is(err, meta.ErrNotFound) {
		err = nil // the store answered
	}
	return time.Since(start), err
}

// inventory counts the catalog's tables and partitions.
type inventory struct {
	tables, partitions int
}

func takeInventory(c Catalog) inventory {
	var inv inventory
	for _, db := range c.DatabaseNames() {
		names, err := c.TableNames(db)
		if err != nil {
			continue // dropped meanwhile
		}
		for _, name := range names {
			ti, ok := c.TableByPath(cluster.TablePath{Database: db, Table: name})
			if !ok {
				continue
			}
			inv.tables++
			if ti.Partitioned() {
				inv.partitions += len(c.Partitions(ti.ID))
			}
		}
	}
	return inv
}
