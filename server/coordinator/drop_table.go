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

func init() { catalogAPIs.admin(wire.DropTable, 0, 0, (*Catalog).handleDropTable) }

func (c *Catalog) handleDropTable(ctx context.Context, req *wire.Request) (proto.Message, error) {
	var r flusspb.DropTableRequest
	path, err := c.access.decodeForTable(req, &r, auth.OpDrop)
	if err != nil {
		return nil, err
	}
	return &flusspb.DropTableResponse{}, c.DropTable(ctx, path, r.GetIgnoreIfNotExists())
}

// DropTable removes a table and deletes its data.
func (c *Catalog) DropTable(ctx context.Context, path cluster.TablePath, ignoreIfNotExists bool) error {
	defer c.lockDDL()()
	t, ok := c.TableByPath(path)
	if !ok {
		if ignoreIfNotExists {
			return nil
		}
		return ferr.New(ferr.TableNotExist, "Table %s does not exist.", path)
	}
	ops := append([]meta.Op{meta.Delete(tableKey(path))}, tableRecordOps(t.ID)...)
	if c.place != nil {
		ops = append(ops, c.place.DropOps(t.ID, cluster.NoPartition)...)
	}
	if _, err := c.store.Txn(ctx, nil, ops); err != nil {
		return fmt.Errorf("drop table %s: %w", path, err)
	}
	c.cache.dropTable(t)
	c.stopTable(ctx, t)
	c.log.Info("dropped table", "table", path, "id", t.ID)
	return nil
}

// stopTable deletes a dropped table's data. Failures are logged: the catalog no longer
// references the table, so its data is unreachable either way.
func (c *Catalog) stopTable(ctx context.Context, t *cluster.TableInfo) {
	if c.place != nil {
		c.place.Dropped(ctx, t.ID, cluster.NoPartition)
	}
	if c.replicas == nil {
		return
	}
	if err := c.replicas.StopReplicas(ctx, t.ID, cluster.NoPartition); err != nil {
		c.log.Warn("cannot delete data of dropped table", "table", t.Path, "id", t.ID, "err", err)
	}
}
