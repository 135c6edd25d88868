package coordinator

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"sync"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/server/cluster"
)

// catalogCache is the in-memory copy of the catalog: the only read path of every lookup.
// Databases, tables, schemas and partitions live together because a reload replaces them
// together. A *TableInfo or *PartitionInfo handed out is never changed: a change publishes a
// new one.
type catalogCache struct {
	mu         sync.RWMutex // guards the maps below
	databases  map[string]*Database
	tables     map[cluster.TablePath]*cluster.TableInfo
	tablesByID map[int64]*cluster.TableInfo
	schemas    map[int64]map[int32]schemaVersion
	partitions map[int64]map[string]*cluster.PartitionInfo // by table id, then name
	partByID   map[int64]*cluster.PartitionInfo
}

type schemaVersion struct {
	schema metadata.Schema
	json   []byte
}

func newCatalogCache() *catalogCache {
	return &catalogCache{
		databases:  map[string]*Database{},
		tables:     map[cluster.TablePath]*cluster.TableInfo{},
		tablesByID: map[int64]*cluster.TableInfo{},
		schemas:    map[int64]map[int32]schemaVersion{},
		partitions: map[int64]map[string]*cluster.PartitionInfo{},
		partByID:   map[int64]*cluster.PartitionInfo{},
	}
}

// loadCatalog reads the whole catalog from store into a new cache.
func loadCatalog(ctx context.Context, store recordLister) (*catalogCache, error) {
	c := newCatalogCache()
	kvs, err := store.List(ctx, "databases/")
	if err != nil {
		return nil, err
	}
	for _, kv := range kvs {
		name := strings.TrimPrefix(kv.Key, "databases/")
		var rec databaseRecord
		if err := json.Unmarshal(kv.Value, &rec); err != nil {
			return nil, fmt.Errorf("database %s: corrupt record: %w", name, err)
		}
		desc, err := metadata.ParseDatabaseDescriptor(rec.Descriptor)
		if err != nil {
			return nil, fmt.Errorf("database %s: %w", name, err)
		}
		c.databases[name] = &Database{Name: name, Descriptor: desc, JSON: rec.Descriptor, CreatedMs: rec.CreatedMs, ModifiedMs: rec.ModifiedMs}
	}
	kvs, err = store.List(ctx, "tables/")
	if err != nil {
		return nil, err
	}
	for _, kv := range kvs {
		parts := strings.SplitN(strings.TrimPrefix(kv.Key, "tables/"), "/", 2)
		if len(parts) != 2 {
			return nil, fmt.Errorf("unexpected metadata key %q", kv.Key)
		}
		path := cluster.TablePath{Database: parts[0], Table: parts[1]}
		var rec tableRecord
		if err := json.Unmarshal(kv.Value, &rec); err != nil {
			return nil, fmt.Errorf("table %s: corrupt record: %w", path, err)
		}
		desc, err := metadata.ParseTableDescriptor(rec.Descriptor)
		if err != nil {
			return nil, fmt.Errorf("table %s: %w", path, err)
		}
		t := &cluster.TableInfo{Path: path, ID: rec.ID, SchemaID: rec.SchemaID, Descriptor: desc, DescriptorJSON: rec.Descriptor, CreatedMs: rec.CreatedMs, ModifiedMs: rec.ModifiedMs}
		c.tables[path] = t
		c.tablesByID[t.ID] = t
		if err := c.loadSchemas(ctx, store, t.ID); err != nil {
			return nil, fmt.Errorf("table %s: %w", path, err)
		}
		if err := c.loadPartitions(ctx, store, t.ID); err != nil {
			return nil, fmt.Errorf("table %s: %w", path, err)
		}
	}
	return c, nil
}

func (c *catalogCache) loadSchemas(ctx context.Context, store recordLister, tableID int64) error {
	kvs, err := store.List(ctx, schemasPrefix(tableID))
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

func (c *catalogCache) loadPartitions(ctx context.Context, store recordLister, tableID int64) error {
	kvs, err := store.List(ctx, partitionsPrefix(tableID))
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

// --- reads ---

func (c *catalogCache) tableByID(id int64) (*cluster.TableInfo, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	t, ok := c.tablesByID[id]
	return t, ok
}

func (c *catalogCache) tableByPath(p cluster.TablePath) (*cluster.TableInfo, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	t, ok := c.tables[p]
	return t, ok
}

func (c *catalogCache) schemaVersion(tableID int64, schemaID int32) (schemaVersion, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	s, ok := c.schemas[tableID][schemaID]
	return s, ok
}

func (c *catalogCache) partitionByID(id int64) (*cluster.PartitionInfo, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	p, ok := c.partByID[id]
	return p, ok
}

func (c *catalogCache) partitionByName(tableID int64, name string) (*cluster.PartitionInfo, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	p, ok := c.partitions[tableID][name]
	return p, ok
}

func (c *catalogCache) partitionsOf(tableID int64) []*cluster.PartitionInfo {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]*cluster.PartitionInfo, 0, len(c.partitions[tableID]))
	for _, p := range c.partitions[tableID] {
		out = append(out, p)
	}
	return out
}

func (c *catalogCache) database(name string) (*Database, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	d, ok := c.databases[name]
	return d, ok
}

func (c *catalogCache) databaseNames() []string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]string, 0, len(c.databases))
	for n := range c.databases {
		out = append(out, n)
	}
	return out
}

func (c *catalogCache) tableNames(db string) ([]string, error) {
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

// tablesWhere returns the tables keep accepts (every table when keep is nil).
func (c *catalogCache) tablesWhere(keep func(*cluster.TableInfo) bool) []*cluster.TableInfo {
	c.mu.RLock()
	defer c.mu.RUnlock()
	var out []*cluster.TableInfo
	for _, t := range c.tablesByID {
		if keep == nil || keep(t) {
			out = append(out, t)
		}
	}
	return out
}

// buckets returns every bucket of every table and partition.
func (c *catalogCache) buckets() []cluster.Bucket {
	c.mu.RLock()
	defer c.mu.RUnlock()
	var out []cluster.Bucket
	for _, t := range c.tablesByID {
		pids := []int64{cluster.NoPartition}
		if t.Partitioned() {
			pids = pids[:0]
			for _, p := range c.partitions[t.ID] {
				pids = append(pids, p.ID)
			}
		}
		for _, pid := range pids {
			for b := int32(0); b < t.NumBuckets(); b++ {
				out = append(out, cluster.Bucket{TableID: t.ID, PartitionID: pid, Bucket: b})
			}
		}
	}
	return out
}

// --- writes: each publishes a change already stored ---

func (c *catalogCache) putDatabase(d *Database) {
	c.mu.Lock()
	c.databases[d.Name] = d
	c.mu.Unlock()
}

// dropDatabase removes a database and the given tables of it.
func (c *catalogCache) dropDatabase(name string, tables []*cluster.TableInfo) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.databases, name)
	for _, t := range tables {
		c.forgetTableLocked(t)
	}
}

// putTable publishes a new or altered table and, when sv is set, its schema version
// schemaID.
func (c *catalogCache) putTable(t *cluster.TableInfo, sv *schemaVersion) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tables[t.Path] = t
	c.tablesByID[t.ID] = t
	if sv != nil {
		versions := maps.Clone(c.schemas[t.ID])
		if versions == nil {
			versions = map[int32]schemaVersion{}
		}
		versions[t.SchemaID] = *sv
		c.schemas[t.ID] = versions
	}
}

func (c *catalogCache) dropTable(t *cluster.TableInfo) {
	c.mu.Lock()
	c.forgetTableLocked(t)
	c.mu.Unlock()
}

func (c *catalogCache) forgetTableLocked(t *cluster.TableInfo) {
	delete(c.tables, t.Path)
	delete(c.tablesByID, t.ID)
	delete(c.schemas, t.ID)
	for _, p := range c.partitions[t.ID] {
		delete(c.partByID, p.ID)
	}
	delete(c.partitions, t.ID)
}

func (c *catalogCache) addPartition(p *cluster.PartitionInfo) {
	c.mu.Lock()
	c.addPartitionLocked(p)
	c.mu.Unlock()
}

func (c *catalogCache) addPartitionLocked(p *cluster.PartitionInfo) {
	if c.partitions[p.TableID] == nil {
		c.partitions[p.TableID] = map[string]*cluster.PartitionInfo{}
	}
	c.partitions[p.TableID][p.Name] = p
	c.partByID[p.ID] = p
}

func (c *catalogCache) dropPartition(p *cluster.PartitionInfo) {
	c.mu.Lock()
	delete(c.partitions[p.TableID], p.Name)
	delete(c.partByID, p.ID)
	c.mu.Unlock()
}

// replace takes over fresh's maps, unless stillWanted (called under the lock) says no. The
// *TableInfo of unchanged tables is kept, so pointer comparisons (autoPartition's "replaced
// meanwhile") and the tablet server's cached pointers stay valid. It returns the tables that
// changed (altered, not created), and whether it replaced anything.
func (c *catalogCache) replace(fresh *catalogCache, stillWanted func() bool) ([]*cluster.TableInfo, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !stillWanted() {
		return nil, false
	}
	var altered []*cluster.TableInfo
	for id, t := range fresh.tablesByID {
		old, ok := c.tablesByID[id]
		switch {
		case ok && old.Path == t.Path && old.SchemaID == t.SchemaID && old.ModifiedMs == t.ModifiedMs:
			fresh.tablesByID[id] = old
			fresh.tables[t.Path] = old
		case ok:
			altered = append(altered, t)
		}
	}
	c.databases, c.tables, c.tablesByID, c.schemas = fresh.databases, fresh.tables, fresh.tablesByID, fresh.schemas
	c.partitions, c.partByID = fresh.partitions, fresh.partByID
	return altered, true
}
