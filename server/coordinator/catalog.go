package coordinator

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/proto/flusspb"
	"github.com/stromdb/strom/server/cluster"
	"github.com/stromdb/strom/server/meta"
)

// DefaultDatabase is created on first start, as a Java coordinator does.
const DefaultDatabase = "fluss"

// Database is a registered database.
type Database struct {
	Name       string
	Descriptor metadata.DatabaseDescriptor
	JSON       []byte // database_json as served
	CreatedMs  int64
	ModifiedMs int64
}

// Catalog is the catalog and DDL service: databases, tables and their schema versions, and
// the in-memory copy of them that every lookup reads (catalogCache; partitions are in that
// copy too, but the partition service writes them). It serves CREATE/DROP/ALTER_DATABASE
// and CREATE/DROP/ALTER_TABLE, one file each; the read-only APIs over it are the metadata
// service's.
//
// Invariants: every DDL operation holds the DDL lock (lockDDL) for its whole duration and
// writes the store before it publishes the change in memory, so a reader never sees state
// that a restart would lose. On a node that is not the active coordinator the copy follows
// the store (catalog_reload.go).
type Catalog struct {
	store    catalogStore
	log      *slog.Logger
	defaults metadata.ClusterDefaults
	now      func() time.Time
	role     role
	place    placement // nil on the single node
	access   access
	cache    *catalogCache

	ddlMu sync.Mutex // serialises DDL, with the partition service's

	// replicas is the single node's tablet server, which opens and drops buckets in
	// process; nil in a cluster (the control plane does it) and before Start.
	replicas cluster.ReplicaManager
	// updater is told of altered tables: the local tablet server.
	updater TableUpdater
	// afterCreate runs after a partitioned table is created, outside the DDL lock: the
	// partition service pre-creates its auto-partitions.
	afterCreate func(ctx context.Context, t *cluster.TableInfo)

	bgCtx     context.Context // bounds the reloads lookups start; ends at Close
	reloadMu  sync.Mutex      // serialises catalog reloads of a node that is not the active coordinator
	reloadGen uint64          // completed reloads, guarded by reloadMu
}

var catalogAPIs apiTable[*Catalog]

// catalogOptions configures a Catalog.
type catalogOptions struct {
	defaults metadata.ClusterDefaults
	now      func() time.Time
	cluster  Cluster // nil on the single node
	access   access
	bgCtx    context.Context
}

// openCatalog loads the catalog from store.
func openCatalog(ctx context.Context, store catalogStore, opts catalogOptions, log *slog.Logger) (*Catalog, error) {
	cache, err := loadCatalog(ctx, store)
	if err != nil {
		return nil, err
	}
	c := &Catalog{store: store, log: log, defaults: opts.defaults, now: opts.now, role: roleOf(opts.cluster),
		access: opts.access, cache: cache, bgCtx: opts.bgCtx}
	if opts.cluster != nil {
		c.place = opts.cluster
	}
	return c, nil
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

// sequencesPrefix holds the counters of the table's auto-increment columns, which the tablet
// servers advance (meta.EtcdStore.AddID, name autoinc/<table>/<column>; server/tablet
// sequences.go).
func sequencesPrefix(tableID int64) string { return fmt.Sprintf("seq/autoinc/%d/", tableID) }

// tableRecordOps deletes every record of a dropped table kept beside its table record: its
// schema versions, partitions and auto-increment counters.
func tableRecordOps(tableID int64) []meta.Op {
	return []meta.Op{meta.DeletePrefix(schemasPrefix(tableID)), meta.DeletePrefix(partitionsPrefix(tableID)),
		meta.DeletePrefix(sequencesPrefix(tableID))}
}

// lockDDL takes the DDL lock and returns its release.
func (c *Catalog) lockDDL() func() {
	c.ddlMu.Lock()
	return c.ddlMu.Unlock
}

// start hands the catalog its tablet server; on the single node it makes it lead every
// bucket of every table and partition, so that all tables are usable once start returns.
func (c *Catalog) start(ctx context.Context, replicas cluster.ReplicaManager) error {
	if c.role.clustered() {
		// Tablet servers open their buckets from the states in etcd. Altered tables still
		// reach the local tablet server.
		c.updater, _ = replicas.(TableUpdater)
		return nil
	}
	c.replicas = replicas
	c.updater, _ = replicas.(TableUpdater)
	for _, t := range c.cache.tablesWhere(nil) {
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
	return nil
}

// --- lookups (cluster.Catalog) ---
//
// On a node that is not the active coordinator a miss re-reads the catalog once, so a table
// or partition just created through another node is found (the watch that also brings it
// may lag by a few milliseconds).

// TableByID implements cluster.Catalog.
func (c *Catalog) TableByID(id int64) (*cluster.TableInfo, bool) {
	if v, ok := c.cache.tableByID(id); ok || !c.reloadOnMiss() {
		return v, ok
	}
	return c.cache.tableByID(id)
}

// TableByPath implements cluster.Catalog.
func (c *Catalog) TableByPath(p cluster.TablePath) (*cluster.TableInfo, bool) {
	if v, ok := c.cache.tableByPath(p); ok || !c.reloadOnMiss() {
		return v, ok
	}
	return c.cache.tableByPath(p)
}

// PartitionByID implements cluster.Catalog.
func (c *Catalog) PartitionByID(id int64) (*cluster.PartitionInfo, bool) {
	if v, ok := c.cache.partitionByID(id); ok || !c.reloadOnMiss() {
		return v, ok
	}
	return c.cache.partitionByID(id)
}

// PartitionByName implements cluster.Catalog.
func (c *Catalog) PartitionByName(tableID int64, name string) (*cluster.PartitionInfo, bool) {
	if v, ok := c.cache.partitionByName(tableID, name); ok || !c.reloadOnMiss() {
		return v, ok
	}
	return c.cache.partitionByName(tableID, name)
}

// Partitions implements cluster.Catalog.
func (c *Catalog) Partitions(tableID int64) []*cluster.PartitionInfo {
	return c.cache.partitionsOf(tableID)
}

// Database returns a database.
func (c *Catalog) Database(name string) (*Database, bool) {
	if v, ok := c.cache.database(name); ok || !c.reloadOnMiss() {
		return v, ok
	}
	return c.cache.database(name)
}

// Schema implements cluster.Catalog. A client that added a column through the active
// coordinator writes batches of the new schema id to leaders on other nodes at once, before
// their catalog watch may have brought it: hence the reload on a miss.
func (c *Catalog) Schema(tableID int64, schemaID int32) (metadata.Schema, bool) {
	s, ok := c.schemaVersion(tableID, schemaID)
	return s.schema, ok
}

func (c *Catalog) schemaVersion(tableID int64, schemaID int32) (schemaVersion, bool) {
	if s, ok := c.cache.schemaVersion(tableID, schemaID); ok || !c.reloadOnMiss() {
		return s, ok
	}
	return c.cache.schemaVersion(tableID, schemaID)
}

// DatabaseNames returns the names of all databases.
func (c *Catalog) DatabaseNames() []string { return c.cache.databaseNames() }

// TableNames returns the tables of a database, or DATABASE_NOT_EXIST.
func (c *Catalog) TableNames(db string) ([]string, error) { return c.cache.tableNames(db) }

// table returns the table a request names, TABLE_NOT_EXIST when there is none; on a standby
// it first catches up with the table's record (catchUpTable).
func (c *Catalog) table(p *flusspb.PbTablePath) (*cluster.TableInfo, error) {
	path := tablePathOf(p)
	c.catchUpTable(path)
	t, ok := c.TableByPath(path)
	if !ok {
		return nil, ferr.New(ferr.TableNotExist, "Table %s does not exist.", path)
	}
	return t, nil
}

// TableUpdater is implemented by replica managers that apply an altered table (new options,
// new schema version) to the buckets they already lead.
type TableUpdater interface {
	UpdateTable(ctx context.Context, t *cluster.TableInfo) error
}
