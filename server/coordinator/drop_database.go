package coordinator

import (
	"context"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
	"github.com/stromdb/strom/server/auth"
	"github.com/stromdb/strom/server/cluster"
	"github.com/stromdb/strom/server/meta"
)

func init() { catalogAPIs.admin(wire.DropDatabase, 0, 0, (*Catalog).handleDropDatabase) }

func (c *Catalog) handleDropDatabase(ctx context.Context, req *wire.Request) (proto.Message, error) {
	var r flusspb.DropDatabaseRequest
	if err := req.Decode(&r); err != nil {
		return nil, err
	}
	if err := c.access.authorize(req, auth.OpDrop, auth.DatabaseResource(r.GetDatabaseName())); err != nil {
		return nil, err
	}
	return &flusspb.DropDatabaseResponse{}, c.DropDatabase(ctx, r.GetDatabaseName(), r.GetIgnoreIfNotExists(), r.GetCascade())
}

// DropDatabase removes a database; with cascade its tables go too.
func (c *Catalog) DropDatabase(ctx context.Context, name string, ignoreIfNotExists, cascade bool) error {
	defer c.lockDDL()()
	if _, ok := c.Database(name); !ok {
		if ignoreIfNotExists {
			return nil
		}
		return ferr.New(ferr.DatabaseNotExist, "Database %s does not exist.", name)
	}
	tables := c.cache.tablesWhere(func(t *cluster.TableInfo) bool { return t.Path.Database == name })
	if len(tables) > 0 && !cascade {
		return ferr.New(ferr.DatabaseNotEmpty, "Database %s is not empty.", name)
	}
	ops := []meta.Op{meta.Delete(databaseKey(name)), meta.DeletePrefix(tablesPrefix(name))}
	for _, t := range tables {
		ops = append(ops, tableRecordOps(t.ID)...)
		if c.place != nil {
			ops = append(ops, c.place.DropOps(t.ID, cluster.NoPartition)...)
		}
	}
	if _, err := c.store.Txn(ctx, nil, ops); err != nil {
		return fmt.Errorf("drop database %s: %w", name, err)
	}
	c.cache.dropDatabase(name, tables)
	for _, t := range tables {
		c.stopTable(ctx, t)
	}
	c.log.Info("dropped database", "database", name, "tables", len(tables))
	return nil
}
