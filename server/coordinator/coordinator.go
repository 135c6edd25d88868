// Package coordinator implements the coordinator role: the catalog (databases, tables,
// schemas, partitions and their ids, persisted in the metadata store) and the admin and
// metadata APIs over it and over the rest of the cluster.
//
// The package is a set of services, each a type that owns its state and its API table, and
// a thin Coordinator that builds them and installs their APIs (docs/architecture.md, "The
// coordinator's services"):
//
//	Catalog            catalog.go, catalog_cache.go, catalog_reload.go  databases, tables, schemas, DDL
//	partitionService   partitions.go, auto_partition.go                 manual and automatic partitions
//	metadataService    metadata.go                                      GET_METADATA, table info and schemas
//	producerOffsets    producer_offsets.go                              REGISTER/GET/DELETE_PRODUCER_OFFSETS
//	kvSnapshotService  kv_snapshots.go                                  KV snapshots and their leases
//	aclService         acls.go                                          CREATE/LIST/DROP_ACLS
//	membershipService  membership.go, membership_local.go               server tags and rebalance
//	clusterConfigs     cluster_configs.go                               dynamic cluster configs
//	lakeService        lake.go                                          GET_LAKE_SNAPSHOT
//	healthService      cluster_health.go                                GET_CLUSTER_HEALTH
//
// Every API is one file named after it (create_table.go, get_metadata.go, …) holding its
// handler and, in an init function, its entry in its service's API table (apis.go). A
// service sees the metadata store through the narrowest interface that covers its reads and
// writes (stores.go) and the control plane through election, placement or
// bucketStateReader (cluster.go); requests are authorised by the access value they share
// (access.go). A standby coordinator forwards admin APIs to the active one (forward.go).
package coordinator

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
	"github.com/stromdb/strom/server/auth"
	"github.com/stromdb/strom/server/cluster"
	"github.com/stromdb/strom/server/internalconn"
	"github.com/stromdb/strom/server/meta"
	"github.com/stromdb/strom/server/remote"
)

// Options configures a coordinator.
type Options struct {
	Defaults metadata.ClusterDefaults
	// MaxPartitionNum is max.partition.num: the most partitions a table holds (0: no limit).
	MaxPartitionNum int32
	// AutoPartitionInterval is auto-partition.check.interval.
	AutoPartitionInterval time.Duration
	// Now returns the current time; tests inject a clock.
	Now func() time.Time
	// Authorizer, when set (authorizer.enabled), authorises every request that does not
	// arrive on InternalListener (internal.listener.name), as a Fluss server does.
	Authorizer       *auth.Authorizer
	InternalListener string
	// InternalDial opens the connection a standby forwards admin requests over to the active
	// coordinator's internal listener, with this node's cluster credentials
	// (server/internalconn); nil dials in the clear.
	InternalDial internalconn.Func
	// StaticConfigs are the options the server started with, as DESCRIBE_CLUSTER_CONFIGS
	// reports them (INITIAL_SERVER_CONFIG).
	StaticConfigs map[string]string
	// ProducerOffsetsTTL is coordinator.producer-offsets.ttl (0: DefaultProducerOffsetsTTL).
	ProducerOffsetsTTL time.Duration
	// Cluster is the control plane of a multi-node cluster; nil on the single node
	// (cluster.go).
	Cluster Cluster
	// LakeTableOptions are added to the served options of every lake-enabled table
	// (`table.datalake.iceberg.*`, lake.Config.ReaderTableOptions), as Fluss's coordinator adds
	// the cluster's lake catalog options; nil without a data lake.
	LakeTableOptions map[string]string
	// Remote is remote.data.dir, whose scheme and client credentials
	// GET_FILESYSTEM_SECURITY_TOKEN answers; nil answers a file store's.
	Remote *remote.Storage
}

// Coordinator is the coordinator role: the composition of its services. It builds them,
// installs their APIs (apis.go), starts and stops their background work, and answers for
// the catalog to the rest of the node (cluster.Catalog, the control plane's Reload and
// Takeover, the metrics' reads).
type Coordinator struct {
	opts Options
	log  *slog.Logger

	catalog    *Catalog
	partitions *partitionService
	metadata   *metadataService
	producers  *producerOffsets
	kvSnaps    *kvSnapshotService
	acls       *aclService
	membership *membershipService
	configs    *clusterConfigs
	lake       *lakeService
	health     *healthService

	fwd standbyForwarder // forwards admin requests of a standby

	bgCtx    context.Context // ends at Close; background work runs under it
	bgCancel context.CancelFunc
	bgDone   chan struct{} // closed when background work has stopped; nil before Start
}

// apis returns every service's APIs, bound to it. A new service adds its table here.
func (c *Coordinator) apis() []boundAPI {
	var out []boundAPI
	out = append(out, catalogAPIs.bind(c.catalog)...)
	out = append(out, partitionAPIs.bind(c.partitions)...)
	out = append(out, metadataAPIs.bind(c.metadata)...)
	out = append(out, producerOffsetAPIs.bind(c.producers)...)
	out = append(out, kvSnapshotAPIs.bind(c.kvSnaps)...)
	out = append(out, aclAPIs.bind(c.acls)...)
	out = append(out, membershipAPIs.bind(c.membership)...)
	out = append(out, clusterConfigAPIs.bind(c.configs)...)
	out = append(out, lakeAPIs.bind(c.lake)...)
	out = append(out, healthAPIs.bind(c.health)...)
	return out
}

// Open loads the catalog from store, creating the default database on first start.
func Open(ctx context.Context, store meta.Store, topo *cluster.Topology, opts Options, log *slog.Logger) (*Coordinator, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	c := &Coordinator{opts: opts, log: log}
	c.bgCtx, c.bgCancel = context.WithCancel(context.Background())
	acc := access{authorizer: opts.Authorizer, internal: opts.InternalListener}
	r := roleOf(opts.Cluster)
	var (
		place  placement
		states bucketStateReader
	)
	if opts.Cluster != nil {
		place, states = opts.Cluster, opts.Cluster
	}

	var err error
	c.catalog, err = openCatalog(ctx, store, catalogOptions{defaults: opts.Defaults, now: opts.Now, cluster: opts.Cluster,
		access: acc, bgCtx: c.bgCtx}, log)
	if err != nil {
		return nil, err
	}
	c.partitions = &partitionService{catalog: c.catalog, cache: c.catalog.cache, store: store, place: place, role: r, access: acc,
		now: opts.Now, log: log, maxPartitionNum: opts.MaxPartitionNum, maxBucketNum: opts.Defaults.MaxBucketNum}
	c.catalog.afterCreate = c.partitions.autoPartition
	c.metadata = &metadataService{catalog: c.catalog, topo: topo, states: states, access: acc, lakeTableOptions: opts.LakeTableOptions, remote: opts.Remote}
	c.producers = &producerOffsets{store: store, tables: c.catalog, access: acc, now: opts.Now, ttl: opts.ProducerOffsetsTTL}
	c.kvSnaps = &kvSnapshotService{catalog: c.catalog, access: acc}
	c.acls = &aclService{access: acc}
	c.membership = newMembershipService(acc, opts.Cluster, &localMembership{topo: topo, catalog: c.catalog.cache})
	c.configs = &clusterConfigs{store: store, access: acc, log: log, static: opts.StaticConfigs}
	if err := c.configs.load(ctx); err != nil {
		return nil, err
	}
	c.lake = &lakeService{catalog: c.catalog, access: acc}
	c.health = &healthService{catalog: c.catalog.cache, access: acc, states: states}
	if live, ok := opts.Cluster.(liveness); ok {
		c.health.live = live
	}
	c.fwd = standbyForwarder{role: r, refresh: c.catalog.Reload, log: log, conns: forwardConns{dial: opts.InternalDial}}
	if fw, ok := opts.Cluster.(forwarder); ok {
		c.fwd.locate = fw
	}

	if len(c.catalog.DatabaseNames()) == 0 && !r.clustered() { // in a cluster the active coordinator does it (Takeover)
		if err := c.catalog.CreateDatabase(ctx, DefaultDatabase, nil, true); err != nil {
			return nil, fmt.Errorf("create default database: %w", err)
		}
	}
	return c, nil
}

// Start hands the coordinator its tablet server and, on the single node, makes it lead every
// bucket of every table and partition, so that all tables are usable once Start returns; then
// it starts the auto-partitioning.
func (c *Coordinator) Start(ctx context.Context, replicas cluster.ReplicaManager) error {
	if err := c.catalog.start(ctx, replicas); err != nil {
		return err
	}
	if c.opts.Cluster == nil {
		c.partitions.replicas = replicas
		c.health.leader, _ = replicas.(BucketLeader)
		c.partitions.RunAutoPartition(ctx)
	}
	// In a cluster the active coordinator runs the auto-partitioning (the loop skips a standby).
	c.bgDone = make(chan struct{})
	go func() {
		defer close(c.bgDone)
		c.partitions.runAutoPartitionLoop(c.bgCtx, c.opts.AutoPartitionInterval)
	}()
	return nil
}

// Close stops the coordinator's background work and waits for it to finish.
func (c *Coordinator) Close() {
	if c.bgCancel != nil {
		c.bgCancel()
	}
	if c.bgDone != nil {
		<-c.bgDone
	}
	c.fwd.conns.close()
}

// Reload re-reads the catalog on a node that is not the active coordinator (control.Catalog);
// the control plane calls it on every catalog change it sees in etcd.
func (c *Coordinator) Reload(ctx context.Context) error { return c.catalog.Reload(ctx) }

// Takeover prepares a newly active coordinator (control.Catalog): its catalog is re-read (a
// standby's cache may trail etcd by a watch event), the default database created on a fresh
// cluster, and due auto-partitions created.
func (c *Coordinator) Takeover(ctx context.Context) error {
	if err := c.catalog.takeover(ctx); err != nil {
		return err
	}
	go c.partitions.RunAutoPartition(c.bgCtx)
	return nil
}

// SetKvSnapshots connects the KV snapshot APIs to the snapshot store. Without it every bucket
// answers "no snapshot" and leases hold nothing.
func (c *Coordinator) SetKvSnapshots(s KvSnapshots) { c.kvSnaps.connect(s) }

// SetLakeSnapshots connects GET_LAKE_SNAPSHOT to the data lake. Without it the coordinator
// answers as a Fluss cluster without a data lake does.
func (c *Coordinator) SetLakeSnapshots(l LakeSnapshots) { c.lake.connect(l) }

// ClusterHealth is the answer to GET_CLUSTER_HEALTH.
func (c *Coordinator) ClusterHealth() *flusspb.GetClusterHealthResponse {
	return c.health.clusterHealth()
}

// --- the catalog, as the rest of the node reads it ---

// TableByID implements cluster.Catalog.
func (c *Coordinator) TableByID(id int64) (*cluster.TableInfo, bool) { return c.catalog.TableByID(id) }

// TableByPath implements cluster.Catalog.
func (c *Coordinator) TableByPath(p cluster.TablePath) (*cluster.TableInfo, bool) {
	return c.catalog.TableByPath(p)
}

// Schema implements cluster.Catalog.
func (c *Coordinator) Schema(tableID int64, schemaID int32) (metadata.Schema, bool) {
	return c.catalog.Schema(tableID, schemaID)
}

// PartitionByID implements cluster.Catalog.
func (c *Coordinator) PartitionByID(id int64) (*cluster.PartitionInfo, bool) {
	return c.catalog.PartitionByID(id)
}

// PartitionByName implements cluster.Catalog.
func (c *Coordinator) PartitionByName(tableID int64, name string) (*cluster.PartitionInfo, bool) {
	return c.catalog.PartitionByName(tableID, name)
}

// Partitions implements cluster.Catalog.
func (c *Coordinator) Partitions(tableID int64) []*cluster.PartitionInfo {
	return c.catalog.Partitions(tableID)
}

// DatabaseNames returns the names of all databases.
func (c *Coordinator) DatabaseNames() []string { return c.catalog.DatabaseNames() }

// TableNames returns the tables of a database, or DATABASE_NOT_EXIST.
func (c *Coordinator) TableNames(db string) ([]string, error) { return c.catalog.TableNames(db) }

// The DDL methods below serve the Kafka listener, which has authorised the request. On a
// standby they are forwarded to the active coordinator as CREATE_DATABASE, CREATE_TABLE and
// DROP_TABLE, as the Fluss listener's admin requests are (forward.go), so that any node's
// Kafka listener serves CreateTopics and DeleteTopics.

// CreateDatabase registers a database (the catalog's CreateDatabase).
func (c *Coordinator) CreateDatabase(ctx context.Context, name string, descJSON []byte, ignoreIfExists bool) error {
	req := &flusspb.CreateDatabaseRequest{DatabaseName: proto.String(name), IgnoreIfExists: proto.Bool(ignoreIfExists), DatabaseJson: descJSON}
	return c.fwd.run(ctx, wire.CreateDatabase, req, func(ctx context.Context) error {
		return c.catalog.CreateDatabase(ctx, name, descJSON, ignoreIfExists)
	})
}

// CreateTable registers a table (the catalog's CreateTable): the Kafka listener's CreateTopics.
func (c *Coordinator) CreateTable(ctx context.Context, path cluster.TablePath, descJSON []byte, ignoreIfExists bool) error {
	req := &flusspb.CreateTableRequest{TablePath: pbTablePath(path), TableJson: descJSON, IgnoreIfExists: proto.Bool(ignoreIfExists)}
	return c.fwd.run(ctx, wire.CreateTable, req, func(ctx context.Context) error {
		return c.catalog.CreateTable(ctx, path, descJSON, ignoreIfExists)
	})
}

// DropTable drops a table (the catalog's DropTable): the Kafka listener's DeleteTopics.
func (c *Coordinator) DropTable(ctx context.Context, path cluster.TablePath, ignoreIfNotExists bool) error {
	req := &flusspb.DropTableRequest{TablePath: pbTablePath(path), IgnoreIfNotExists: proto.Bool(ignoreIfNotExists)}
	return c.fwd.run(ctx, wire.DropTable, req, func(ctx context.Context) error {
		return c.catalog.DropTable(ctx, path, ignoreIfNotExists)
	})
}
