package coordinator

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/server/cluster"
	"github.com/stromdb/strom/server/meta"
)

// CreateDatabase registers a database. descJSON may be nil for an empty descriptor.
func (c *Coordinator) CreateDatabase(ctx context.Context, name string, descJSON []byte, ignoreIfExists bool) error {
	if err := metadata.ValidateDatabaseName(name); err != nil {
		return err
	}
	var desc metadata.DatabaseDescriptor
	if len(descJSON) > 0 {
		d, err := metadata.ParseDatabaseDescriptor(descJSON)
		if err != nil {
			return ferr.New(ferr.InvalidDatabaseException, "invalid database descriptor: %v", err)
		}
		desc = d
	}
	c.ddlMu.Lock()
	defer c.ddlMu.Unlock()
	if _, ok := c.Database(name); ok {
		if ignoreIfExists {
			return nil
		}
		return ferr.New(ferr.DatabaseAlreadyExist, "Database %s already exists.", name)
	}
	now := c.nowMs()
	stored := desc.JSON()
	rec, _ := json.Marshal(databaseRecord{Descriptor: stored, CreatedMs: now, ModifiedMs: now})
	ok, err := c.store.Txn(ctx, []meta.Cond{{Key: databaseKey(name)}}, []meta.Op{meta.Put(databaseKey(name), rec)})
	if err != nil {
		return fmt.Errorf("create database %s: %w", name, err)
	}
	if !ok {
		return ferr.New(ferr.DatabaseAlreadyExist, "Database %s already exists.", name)
	}
	c.mu.Lock()
	c.databases[name] = &Database{Name: name, Descriptor: desc, JSON: stored, CreatedMs: now, ModifiedMs: now}
	c.mu.Unlock()
	c.log.Info("created database", "database", name)
	return nil
}

// DropDatabase removes a database; with cascade its tables go too.
func (c *Coordinator) DropDatabase(ctx context.Context, name string, ignoreIfNotExists, cascade bool) error {
	c.ddlMu.Lock()
	defer c.ddlMu.Unlock()
	if _, ok := c.Database(name); !ok {
		if ignoreIfNotExists {
			return nil
		}
		return ferr.New(ferr.DatabaseNotExist, "Database %s does not exist.", name)
	}
	tables := c.tablesOf(name)
	if len(tables) > 0 && !cascade {
		return ferr.New(ferr.DatabaseNotEmpty, "Database %s is not empty.", name)
	}
	ops := []meta.Op{meta.Delete(databaseKey(name)), meta.DeletePrefix(tablesPrefix(name))}
	for _, t := range tables {
		ops = append(ops, meta.DeletePrefix(schemasPrefix(t.ID)), meta.DeletePrefix(partitionsPrefix(t.ID)))
		if c.clustered() {
			ops = append(ops, c.opts.Cluster.DropOps(t.ID, cluster.NoPartition)...)
		}
	}
	if _, err := c.store.Txn(ctx, nil, ops); err != nil {
		return fmt.Errorf("drop database %s: %w", name, err)
	}
	c.mu.Lock()
	delete(c.databases, name)
	for _, t := range tables {
		c.forgetTableLocked(t)
	}
	c.mu.Unlock()
	for _, t := range tables {
		c.stopTable(ctx, t)
	}
	c.log.Info("dropped database", "database", name, "tables", len(tables))
	return nil
}

func (c *Coordinator) forgetTableLocked(t *cluster.TableInfo) {
	delete(c.tables, t.Path)
	delete(c.tablesByID, t.ID)
	delete(c.schemas, t.ID)
	for _, p := range c.partitions[t.ID] {
		delete(c.partByID, p.ID)
	}
	delete(c.partitions, t.ID)
}

// stopTable deletes a dropped table's data. Failures are logged: the catalog no longer
// references the table, so its data is unreachable either way.
func (c *Coordinator) stopTable(ctx context.Context, t *cluster.TableInfo) {
	if c.clustered() {
		c.opts.Cluster.Dropped(ctx, t.ID, cluster.NoPartition)
	}
	if c.replicas == nil {
		return
	}
	if err := c.replicas.StopReplicas(ctx, t.ID, cluster.NoPartition); err != nil {
		c.log.Warn("cannot delete data of dropped table", "table", t.Path, "id", t.ID, "err", err)
	}
}

// CreateTable validates a table descriptor, applies the cluster defaults, registers the table
// and opens its buckets (or pre-creates the partitions of an auto-partitioned table). The
// table is writable when CreateTable returns.
func (c *Coordinator) CreateTable(ctx context.Context, path cluster.TablePath, descJSON []byte, ignoreIfExists bool) error {
	if err := c.createTable(ctx, path, descJSON, ignoreIfExists); err != nil {
		return err
	}
	if t, ok := c.TableByPath(path); ok && t.Partitioned() {
		c.autoPartition(ctx, t) // takes ddlMu itself
	}
	return nil
}

func (c *Coordinator) createTable(ctx context.Context, path cluster.TablePath, descJSON []byte, ignoreIfExists bool) error {
	if err := metadata.ValidateDatabaseName(path.Database); err != nil {
		return err
	}
	if err := metadata.ValidateTableName(path.Table); err != nil {
		return err
	}
	desc, err := metadata.ParseTableDescriptor(descJSON)
	if err != nil {
		return asInvalidTable(err)
	}
	desc, err = metadata.PrepareCreateTable(&desc, c.opts.Defaults)
	if err != nil {
		return asInvalidTable(err)
	}
	c.ddlMu.Lock()
	defer c.ddlMu.Unlock()
	if _, ok := c.TableByPath(path); ok {
		if ignoreIfExists {
			return nil
		}
		return ferr.New(ferr.TableAlreadyExist, "Table %s already exists.", path)
	}
	if _, ok := c.Database(path.Database); !ok {
		return ferr.New(ferr.DatabaseNotExist, "Database %s does not exist.", path.Database)
	}
	id, err := c.store.NextID(ctx, "table")
	if err != nil {
		return fmt.Errorf("allocate table id: %w", err)
	}
	const firstSchemaID = 1
	now := c.nowMs()
	stored := desc.JSON()
	schemaJSON := metadata.SchemaJSON(desc.Schema)
	rec, _ := json.Marshal(tableRecord{ID: id, SchemaID: firstSchemaID, Descriptor: stored, CreatedMs: now, ModifiedMs: now})
	t := &cluster.TableInfo{Path: path, ID: id, SchemaID: firstSchemaID, Descriptor: desc, DescriptorJSON: stored, CreatedMs: now, ModifiedMs: now}
	ops := []meta.Op{meta.Put(schemaKey(id, firstSchemaID), schemaJSON), meta.Put(tableKey(path), rec)}
	var states map[cluster.Bucket]cluster.BucketState
	if c.clustered() && !t.Partitioned() {
		// The bucket states go in the creating transaction: a coordinator killed mid-way
		// leaves either the table with all its states or nothing.
		var assign []meta.Op
		if assign, states, err = c.opts.Cluster.Assign(t, cluster.NoPartition); err != nil {
			return err
		}
		ops = append(ops, assign...)
	} else if c.clustered() && t.Descriptor.ReplicationFactor() > 0 {
		// A partitioned table's buckets are placed per partition; check the factor now so
		// the table is not created only for its partitions to fail.
		if _, _, err := c.opts.Cluster.Assign(&cluster.TableInfo{ID: id, Descriptor: metadata.TableDescriptor{Properties: desc.Properties}}, cluster.NoPartition); err != nil {
			return err
		}
	}
	ok, err := c.store.Txn(ctx,
		[]meta.Cond{{Key: databaseKey(path.Database), Exists: true}, {Key: tableKey(path)}}, ops)
	if err != nil {
		return fmt.Errorf("create table %s: %w", path, err)
	}
	if !ok {
		return ferr.New(ferr.TableAlreadyExist, "Table %s already exists.", path)
	}
	// Open the buckets before the table becomes visible, so that no client sees a table
	// whose buckets are unknown; if they cannot be opened, the table is not created.
	if c.replicas != nil && !t.Partitioned() {
		if err := c.replicas.BecomeLeader(ctx, t, nil); err != nil {
			c.replicas.StopReplicas(ctx, id, cluster.NoPartition)
			if _, derr := c.store.Txn(ctx, nil, []meta.Op{meta.Delete(tableKey(path)), meta.DeletePrefix(schemasPrefix(id))}); derr != nil {
				c.log.Error("cannot roll back table registration", "table", path, "err", derr)
			}
			return fmt.Errorf("open buckets of %s: %w", path, err)
		}
	}
	c.mu.Lock()
	c.tables[path] = t
	c.tablesByID[id] = t
	c.schemas[id] = map[int32]schemaVersion{firstSchemaID: {schema: desc.Schema, json: schemaJSON}}
	c.mu.Unlock()
	if states != nil {
		c.opts.Cluster.Created(ctx, t, nil, states)
	}
	c.log.Info("created table", "table", path, "id", id, "buckets", desc.BucketCount, "primary_key", desc.Schema.PrimaryKey)
	return nil
}

// asInvalidTable gives descriptor errors without a Fluss code the INVALID_TABLE_EXCEPTION code.
func asInvalidTable(err error) error {
	if ferr.CodeOf(err) == ferr.UnknownServerError {
		return ferr.New(ferr.InvalidTableException, "%v", err)
	}
	return err
}

// DropTable removes a table and deletes its data.
func (c *Coordinator) DropTable(ctx context.Context, path cluster.TablePath, ignoreIfNotExists bool) error {
	c.ddlMu.Lock()
	defer c.ddlMu.Unlock()
	t, ok := c.TableByPath(path)
	if !ok {
		if ignoreIfNotExists {
			return nil
		}
		return ferr.New(ferr.TableNotExist, "Table %s does not exist.", path)
	}
	ops := []meta.Op{meta.Delete(tableKey(path)), meta.DeletePrefix(schemasPrefix(t.ID)), meta.DeletePrefix(partitionsPrefix(t.ID))}
	if c.clustered() {
		ops = append(ops, c.opts.Cluster.DropOps(t.ID, cluster.NoPartition)...)
	}
	if _, err := c.store.Txn(ctx, nil, ops); err != nil {
		return fmt.Errorf("drop table %s: %w", path, err)
	}
	c.mu.Lock()
	c.forgetTableLocked(t)
	c.mu.Unlock()
	c.stopTable(ctx, t)
	c.log.Info("dropped table", "table", path, "id", t.ID)
	return nil
}
