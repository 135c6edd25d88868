package coordinator

import (
	"context"
	"encoding/json"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
	"github.com/stromdb/strom/server/auth"
	"github.com/stromdb/strom/server/cluster"
	"github.com/stromdb/strom/server/meta"
)

func init() { catalogAPIs.admin(wire.CreateTable, 0, 0, (*Catalog).handleCreateTable) }

func (c *Catalog) handleCreateTable(ctx context.Context, req *wire.Request) (proto.Message, error) {
	var r flusspb.CreateTableRequest
	if err := req.Decode(&r); err != nil {
		return nil, err
	}
	if err := c.access.authorize(req, auth.OpCreate, auth.DatabaseResource(r.GetTablePath().GetDatabaseName())); err != nil {
		return nil, err
	}
	return &flusspb.CreateTableResponse{}, c.CreateTable(ctx, tablePathOf(r.GetTablePath()), r.GetTableJson(), r.GetIgnoreIfExists())
}

// CreateTable validates a table descriptor, applies the cluster defaults, registers the table
// and opens its buckets (or pre-creates the partitions of an auto-partitioned table). The
// table is writable when CreateTable returns.
func (c *Catalog) CreateTable(ctx context.Context, path cluster.TablePath, descJSON []byte, ignoreIfExists bool) error {
	if err := c.createTable(ctx, path, descJSON, ignoreIfExists); err != nil {
		return err
	}
	if t, ok := c.TableByPath(path); ok && t.Partitioned() && c.afterCreate != nil {
		c.afterCreate(ctx, t) // takes the DDL lock itself
	}
	return nil
}

func (c *Catalog) createTable(ctx context.Context, path cluster.TablePath, descJSON []byte, ignoreIfExists bool) error {
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
	desc, err = metadata.PrepareCreateTable(&desc, c.defaults)
	if err != nil {
		return asInvalidTable(err)
	}
	defer c.lockDDL()()
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
	now := c.now().UnixMilli()
	stored := desc.JSON()
	schemaJSON := metadata.SchemaJSON(desc.Schema)
	rec, _ := json.Marshal(tableRecord{ID: id, SchemaID: firstSchemaID, Descriptor: stored, CreatedMs: now, ModifiedMs: now})
	t := &cluster.TableInfo{Path: path, ID: id, SchemaID: firstSchemaID, Descriptor: desc, DescriptorJSON: stored, CreatedMs: now, ModifiedMs: now}
	ops := []meta.Op{meta.Put(schemaKey(id, firstSchemaID), schemaJSON), meta.Put(tableKey(path), rec)}
	states, assign, err := c.placeTable(t)
	if err != nil {
		return err
	}
	ops = append(ops, assign...)
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
	c.cache.putTable(t, &schemaVersion{schema: desc.Schema, json: schemaJSON})
	if states != nil {
		c.place.Created(ctx, t, nil, states)
	}
	c.log.Info("created table", "table", path, "id", id, "buckets", desc.BucketCount, "primary_key", desc.Schema.PrimaryKey)
	return nil
}

// placeTable places the buckets of a new table in a cluster: the states to write in the
// creating transaction (a coordinator killed mid-way leaves either the table with all its
// states or nothing) and the states themselves. A partitioned table's buckets are placed
// per partition; its replication factor is checked now so that the table is not created
// only for its partitions to fail. On the single node there is nothing to place, but its one
// tablet server cannot hold more than one replica of a bucket.
func (c *Catalog) placeTable(t *cluster.TableInfo) (map[cluster.Bucket]cluster.BucketState, []meta.Op, error) {
	switch {
	case c.place == nil:
		const singleNodeServers = 1
		if rf := t.Descriptor.Properties.ReplicationFactor(); rf > singleNodeServers {
			return nil, nil, ferr.New(ferr.InvalidReplicationFactor, "Replication factor: %d larger than available tablet servers: %d.", rf, singleNodeServers)
		}
		return nil, nil, nil
	case !t.Partitioned():
		ops, states, err := c.place.Assign(t, cluster.NoPartition)
		return states, ops, err
	case t.Descriptor.Properties.ReplicationFactor() > 0:
		_, _, err := c.place.Assign(&cluster.TableInfo{ID: t.ID, Descriptor: metadata.TableDescriptor{Properties: t.Descriptor.Properties}}, cluster.NoPartition)
		return nil, nil, err
	}
	return nil, nil, nil
}

// asInvalidTable gives descriptor errors without a Fluss code the INVALID_TABLE_EXCEPTION code.
func asInvalidTable(err error) error {
	if ferr.CodeOf(err) == ferr.UnknownServerError {
		return ferr.New(ferr.InvalidTableException, "%v", err)
	}
	return err
}
