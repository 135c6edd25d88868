// Package coordinator implements the coordinator role: databases, tables, partitions and
// their ids, persisted in the metadata store, and the admin and metadata APIs over them.
//
// Invariants: every DDL operation holds ddlMu for its whole duration and writes the store
// before it publishes the change in memory, so a reader never sees state that a restart
// would lose. The in-memory maps are the only read path; they are rebuilt from the store on
// start.
package coordinator

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/server/auth"
	"github.com/stromdb/strom/server/cluster"
	"github.com/stromdb/strom/server/meta"
	"github.com/stromdb/strom/server/remote"
)

// DefaultDatabase is created on first start, as a Java coordinator does.
const DefaultDatabase = "fluss"

// Options configures a coordinator.
type Options struct {
	Defaults metadata.ClusterDefaults
	// MaxPartitionNum is max.partition.num: the most partitions the cluster holds (0: no limit).
	MaxPartitionNum int32
	// AutoPartitionInterval is auto-partition.check.interval.
	AutoPartitionInterval time.Duration
	// Now returns the current time; tests inject a clock.
	Now func() time.Time
	// Authorizer, when set (authorizer.enabled), authorises every request that does not
	// arrive on InternalListener (internal.listener.name), as a Fluss server does.
	Authorizer       *auth.Authorizer
	InternalListener string
	// StaticConfigs are the options the server started with, as DESCRIBE_CLUSTER_CONFIGS
	// reports them (INITIAL_SERVER_CONFIG).
	StaticConfigs map[string]string
	// ProducerOffsetsTTL is coordinator.producer-offsets.ttl (0: DefaultProducerOffsetsTTL).
	ProducerOffsetsTTL time.Duration
	// Cluster is the control plane of a multi-node cluster; nil on the single node
	// (cluster_mode.go).
	Cluster Cluster
	// LakeTableOptions are added to the served options of every lake-enabled table
	// (`table.datalake.iceberg.*`, lake.Config.ReaderTableOptions), as Fluss's coordinator adds
	// the cluster's lake catalog options; nil without a data lake.
	LakeTableOptions map[string]string
	// Remote is remote.data.dir, whose scheme and client credentials
	// GET_FILESYSTEM_SECURITY_TOKEN answers; nil answers a file store's.
	Remote *remote.Storage
}

// Database is a registered database.
type Database struct {
	Name       string
	Descriptor metadata.DatabaseDescriptor
	JSON       []byte // database_json as served
	CreatedMs  int64
	ModifiedMs int64
}

// Coordinator owns the catalog.
type Coordinator struct {
	store    meta.Store
	log      *slog.Logger
	opts     Options
	topo     *cluster.Topology
	replicas cluster.ReplicaManager
	lake     atomic.Pointer[LakeSnapshots] // nil: no data lake configured (see lake.go)

	ddlMu sync.Mutex // serialises DDL

	bgCtx    context.Context // ends at Close; background work runs under it
	bgCancel context.CancelFunc
	bgDone   chan struct{} // closed when background work has stopped; nil before Start

	mu         sync.RWMutex // guards the maps below
	databases  map[string]*Database
	tables     map[cluster.TablePath]*cluster.TableInfo
	tablesByID map[int64]*cluster.TableInfo
	schemas    map[int64]map[int32]schemaVersion
	partitions map[int64]map[string]*cluster.PartitionInfo // by table id, then name
	partByID   map[int64]*cluster.PartitionInfo
	// dynamicConfigs are the persisted ALTER_CLUSTER_CONFIGS values.
	dynamicConfigs map[string]string

	producerMu sync.Mutex // serialises producer-offsets check-and-set

	fwd forwardConns // to the active coordinator, on a standby

	// kvSnapshots is nil without a snapshot store (kv_snapshots.go).
	kvSnapshots atomic.Pointer[KvSnapshots]

	// updater is the local tablet server in a cluster, told of altered tables (on the
	// single node c.replicas is).
	updater TableUpdater

	reloadMu  sync.Mutex // serialises catalog reloads of a node that is not the active coordinator
	reloadGen uint64     // completed reloads, guarded by reloadMu

	// local runs the membership APIs on the single node (membership.go).
	localOnce sync.Once
	local     *localMembership
}

type schemaVersion struct {
	schema metadata.Schema
	json   []byte
}

// Store records. Field names are part of the on-disk format.
type databaseRecord struct {
	Descriptor json.RawMessage `json:"descriptor"`
	CreatedMs  int64           `json:"created_ms"`
	ModifiedMs int64           `json:"modified_ms"`
}

type tableRecord struct {
	ID         int64           `json:"id"`
	SchemaID   int32           `json:"schema_id"`
	Descriptor json.RawMessage `json:"descriptor"`
	CreatedMs  int64           `json:"created_ms"`
	ModifiedMs int64           `json:"modified_ms"`
}

type partitionRecord struct {
	ID     int64    `json:"id"`
	Values []string `json:"values"`
}

func databaseKey(db string) string             { return "databases/" + db }
func tableKey(p cluster.TablePath) string      { return "tables/" + p.Database + "/" + p.Table }
func tablesPrefix(db string) string            { return "tables/" + db + "/" }
func schemaKey(tableID int64, id int32) string { return fmt.Sprintf("schemas/%d/%d", tableID, id) }
func schemasPrefix(tableID int64) string       { return fmt.Sprintf("schemas/%d/", tableID) }
func partitionKey(tableID int64, name string) string {
	return fmt.Sprintf("partitions/%d/%s", tableID, name)
}
func partitionsPrefix(tableID int64) string { return fmt.Sprintf("partitions/%d/", tableID) }

// Open loads the catalog from store, creating the default database on first start.
func Open(ctx context.Context, store meta.Store, topo *cluster.Topology, opts Options, log *slog.Logger) (*Coordinator, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	c := &Coordinator{
		store: store, log: log, opts: opts, topo: topo,
		databases:  map[string]*Database{},
		tables:     map[cluster.TablePath]*cluster.TableInfo{},
		tablesByID: map[int64]*cluster.TableInfo{},
		schemas:    map[int64]map[int32]schemaVersion{},
		partitions: map[int64]map[string]*cluster.PartitionInfo{},
		partByID:   map[int64]*cluster.PartitionInfo{},
	}
	c.bgCtx, c.bgCancel = context.WithCancel(context.Background())
	if err := c.load(ctx); err != nil {
		return nil, err
	}
	if err := c.loadClusterConfigs(ctx); err != nil {
		return nil, err
	}
	if len(c.databases) == 0 && !c.clustered() { // in a cluster the active coordinator does it (Takeover)
		if err := c.CreateDatabase(ctx, DefaultDatabase, nil, true); err != nil {
			return nil, fmt.Errorf("create default database: %w", err)
		}
	}
	return c, nil
}

// Start hands the coordinator its tablet server and makes it lead every bucket of every
// table and partition, so that all tables are usable once Start returns.
func (c *Coordinator) Start(ctx context.Context, replicas cluster.ReplicaManager) error {
	c.replicas = replicas
	if c.clustered() {
		// Tablet servers open their buckets from the states in etcd; the active coordinator
		// runs the auto-partitioning. Altered tables still reach the local tablet server.
		c.updater, _ = replicas.(TableUpdater)
		c.replicas = nil
		c.startAutoPartitionLoop()
		return nil
	}
	c.mu.RLock()
	tables := make([]*cluster.TableInfo, 0, len(c.tablesByID))
	for _, t := range c.tablesByID {
		tables = append(tables, t)
	}
	c.mu.RUnlock()
	for _, t := range tables {
		if !t.Partitioned() {
			if err := replicas.BecomeLeader(ctx, t, nil); err != nil {
				return fmt.Errorf("open %s: %w", t.Path, err)
			}
			continue
		}
		for _, p := range c.Partitions(t.ID) {
			if err := replicas.BecomeLeader(ctx, t, p); err != nil {
				return fmt.Errorf("open %s partition %s: %w", t.Path, p.Name, err)
			}
		}
	}
	c.RunAutoPartition(ctx)
	c.startAutoPartitionLoop()
	return nil
}

func (c *Coordinator) startAutoPartitionLoop() {
	c.bgDone = make(chan struct{})
	go func() {
		defer close(c.bgDone)
		c.runAutoPartitionLoop(c.bgCtx, c.opts.AutoPartitionInterval)
	}()
}

func (c *Coordinator) load(ctx context.Context) error {
	kvs, err := c.store.List(ctx, "databases/")
	if err != nil {
		return err
	}
	for _, kv := range kvs {
		name := strings.TrimPrefix(kv.Key, "databases/")
		var rec databaseRecord
		if err := json.Unmarshal(kv.Value, &rec); err != nil {
			return fmt.Errorf("database %s: corrupt record: %w", name, err)
		}
		desc, err := metadata.ParseDatabaseDescriptor(rec.Descriptor)
		if err != nil {
			return fmt.Errorf("database %s: %w", name, err)
		}
		c.databases[name] = &Database{Name: name, Descriptor: desc, JSON: rec.Descriptor, CreatedMs: rec.CreatedMs, ModifiedMs: rec.ModifiedMs}
	}
	kvs, err = c.store.List(ctx, "tables/")
	if err != nil {
		return err
	}
	for _, kv := range kvs {
		parts := strings.SplitN(strings.TrimPrefix(kv.Key, "tables/"), "/", 2)
		if len(parts) != 2 {
			return fmt.Errorf("unexpected metadata key %q", kv.Key)
		}
		path := cluster.TablePath{Database: parts[0], Table: parts[1]}
		var rec tableRecord
		if err := json.Unmarshal(kv.Value, &rec); err != nil {
			return fmt.Errorf("table %s: corrupt record: %w", path, err)
		}
		desc, err := metadata.ParseTableDescriptor(rec.Descriptor)
		if err != nil {
			return fmt.Errorf("table %s: %w", path, err)
		}
		t := &cluster.TableInfo{Path: path, ID: rec.ID, SchemaID: rec.SchemaID, Descriptor: desc, DescriptorJSON: rec.Descriptor, CreatedMs: rec.CreatedMs, ModifiedMs: rec.ModifiedMs}
		c.tables[path] = t
		c.tablesByID[t.ID] = t
		if err := c.loadSchemas(ctx, t.ID); err != nil {
			return fmt.Errorf("table %s: %w", path, err)
		}
		if err := c.loadPartitions(ctx, t.ID); err != nil {
			return fmt.Errorf("table %s: %w", path, err)
		}
	}
	return nil
}

func (c *Coordinator) loadSchemas(ctx context.Context, tableID int64) error {
	kvs, err := c.store.List(ctx, schemasPrefix(tableID))
	if err != nil {
		return err
	}
	m := map[int32]schemaVersion{}
	for _, kv := range kvs {
		id, err := strconv.ParseInt(strings.TrimPrefix(kv.Key, schemasPrefix(tableID)), 10, 32)
		if err != nil {
			return fmt.Errorf("schema key %q: %w", kv.Key, err)
		}
		s, err := metadata.ParseSchema(kv.Value)
		if err != nil {
			return fmt.Errorf("schema %d: %w", id, err)
		}
		m[int32(id)] = schemaVersion{schema: s, json: kv.Value}
	}
	c.schemas[tableID] = m
	return nil
}

func (c *Coordinator) loadPartitions(ctx context.Context, tableID int64) error {
	kvs, err := c.store.List(ctx, partitionsPrefix(tableID))
	if err != nil {
		return err
	}
	for _, kv := range kvs {
		var rec partitionRecord
		if err := json.Unmarshal(kv.Value, &rec); err != nil {
			return fmt.Errorf("partition %q: %w", kv.Key, err)
		}
		c.addPartitionLocked(&cluster.PartitionInfo{TableID: tableID, ID: rec.ID, Name: strings.TrimPrefix(kv.Key, partitionsPrefix(tableID)), Values: rec.Values})
	}
	return nil
}

func (c *Coordinator) addPartitionLocked(p *cluster.PartitionInfo) {
	if c.partitions[p.TableID] == nil {
		c.partitions[p.TableID] = map[string]*cluster.PartitionInfo{}
	}
	c.partitions[p.TableID][p.Name] = p
	c.partByID[p.ID] = p
}

func (c *Coordinator) nowMs() int64 { return c.opts.Now().UnixMilli() }

// --- cluster.Catalog ---

// tableByIDCached looks a table up in memory.
func (c *Coordinator) tableByIDCached(id int64) (*cluster.TableInfo, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	t, ok := c.tablesByID[id]
	return t, ok
}

// tableByPathCached looks a table up in memory.
func (c *Coordinator) tableByPathCached(p cluster.TablePath) (*cluster.TableInfo, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	t, ok := c.tables[p]
	return t, ok
}

// Schema implements cluster.Catalog.
//
// On a node that is not the active coordinator a miss re-reads the catalog once: a client
// that added a column through the active coordinator writes batches of the new schema id
// to leaders on other nodes at once, before their catalog watch may have brought it.
func (c *Coordinator) Schema(tableID int64, schemaID int32) (metadata.Schema, bool) {
	s, ok := c.schemaVersion(tableID, schemaID)
	return s.schema, ok
}

func (c *Coordinator) schemaJSON(tableID int64, schemaID int32) ([]byte, bool) {
	s, ok := c.schemaVersion(tableID, schemaID)
	return s.json, ok
}

func (c *Coordinator) schemaVersion(tableID int64, schemaID int32) (schemaVersion, bool) {
	if s, ok := c.schemaVersionCached(tableID, schemaID); ok || !c.reloadOnMiss() {
		return s, ok
	}
	return c.schemaVersionCached(tableID, schemaID)
}

func (c *Coordinator) schemaVersionCached(tableID int64, schemaID int32) (schemaVersion, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	s, ok := c.schemas[tableID][schemaID]
	return s, ok
}

// partitionByIDCached looks a partition up in memory.
func (c *Coordinator) partitionByIDCached(id int64) (*cluster.PartitionInfo, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	p, ok := c.partByID[id]
	return p, ok
}

// partitionByNameCached looks a partition up in memory.
func (c *Coordinator) partitionByNameCached(tableID int64, name string) (*cluster.PartitionInfo, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	p, ok := c.partitions[tableID][name]
	return p, ok
}

// Partitions implements cluster.Catalog.
func (c *Coordinator) Partitions(tableID int64) []*cluster.PartitionInfo {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]*cluster.PartitionInfo, 0, len(c.partitions[tableID]))
	for _, p := range c.partitions[tableID] {
		out = append(out, p)
	}
	return out
}

// databaseCached looks a database up in memory.
func (c *Coordinator) databaseCached(name string) (*Database, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	d, ok := c.databases[name]
	return d, ok
}

// DatabaseNames returns the names of all databases.
func (c *Coordinator) DatabaseNames() []string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]string, 0, len(c.databases))
	for n := range c.databases {
		out = append(out, n)
	}
	return out
}

// TableNames returns the tables of a database, or DATABASE_NOT_EXIST.
func (c *Coordinator) TableNames(db string) ([]string, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if _, ok := c.databases[db]; !ok {
		return nil, ferr.New(ferr.DatabaseNotExist, "Database %s does not exist.", db)
	}
	var out []string
	for p := range c.tables {
		if p.Database == db {
			out = append(out, p.Table)
		}
	}
	return out, nil
}

func (c *Coordinator) tablesOf(db string) []*cluster.TableInfo {
	c.mu.RLock()
	defer c.mu.RUnlock()
	var out []*cluster.TableInfo
	for p, t := range c.tables {
		if p.Database == db {
			out = append(out, t)
		}
	}
	return out
}

// Close stops the coordinator's background work and waits for it to finish.
func (c *Coordinator) Close() {
	if c.bgCancel != nil {
		c.bgCancel()
	}
	if c.bgDone != nil {
		<-c.bgDone
	}
	c.fwd.close()
}

// TableByID implements cluster.Catalog. On a node that is not the active coordinator a miss
// re-reads the catalog once, so a table or partition just created through another node is
// found (the watch that also brings it may lag by a few milliseconds).
func (c *Coordinator) TableByID(id int64) (*cluster.TableInfo, bool) {
	if v, ok := c.tableByIDCached(id); ok || !c.reloadOnMiss() {
		return v, ok
	}
	return c.tableByIDCached(id)
}

// TableByPath implements cluster.Catalog. On a node that is not the active coordinator a miss
// re-reads the catalog once, so a table or partition just created through another node is
// found (the watch that also brings it may lag by a few milliseconds).
func (c *Coordinator) TableByPath(p cluster.TablePath) (*cluster.TableInfo, bool) {
	if v, ok := c.tableByPathCached(p); ok || !c.reloadOnMiss() {
		return v, ok
	}
	return c.tableByPathCached(p)
}

// PartitionByID implements cluster.Catalog. On a node that is not the active coordinator a miss
// re-reads the catalog once, so a table or partition just created through another node is
// found (the watch that also brings it may lag by a few milliseconds).
func (c *Coordinator) PartitionByID(id int64) (*cluster.PartitionInfo, bool) {
	if v, ok := c.partitionByIDCached(id); ok || !c.reloadOnMiss() {
		return v, ok
	}
	return c.partitionByIDCached(id)
}

// PartitionByName implements cluster.Catalog. On a node that is not the active coordinator a miss
// re-reads the catalog once, so a table or partition just created through another node is
// found (the watch that also brings it may lag by a few milliseconds).
func (c *Coordinator) PartitionByName(tableID int64, name string) (*cluster.PartitionInfo, bool) {
	if v, ok := c.partitionByNameCached(tableID, name); ok || !c.reloadOnMiss() {
		return v, ok
	}
	return c.partitionByNameCached(tableID, name)
}

// Database implements cluster.Catalog. On a node that is not the active coordinator a miss
// re-reads the catalog once, so a table or partition just created through another node is
// found (the watch that also brings it may lag by a few milliseconds).
func (c *Coordinator) Database(name string) (*Database, bool) {
	if v, ok := c.databaseCached(name); ok || !c.reloadOnMiss() {
		return v, ok
	}
	return c.databaseCached(name)
}
