package coordinator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/stromdb/strom/server/cluster"
	"github.com/stromdb/strom/server/meta"
)

// How the catalog of a node that is not the active coordinator follows the store: the
// control plane calls Reload on every catalog change it sees in etcd, a lookup that misses
// re-reads it once (reloadOnMiss), and a table read first checks the table's record
// (catchUpTable).

// Reload re-reads the whole catalog from the store and replaces the in-memory one, on a
// node that is not the active coordinator (which writes its catalog itself). A reload that
// finds the node active when it is done is discarded: it may predate the node's first DDL.
func (c *Catalog) Reload(ctx context.Context) error {
	if !c.role.standby() {
		return nil
	}
	c.reloadMu.Lock()
	defer c.reloadMu.Unlock()
	err := c.reload(ctx, true)
	c.reloadGen++
	return err
}

// reloadOnMiss re-reads the catalog after a lookup missed on a node that is not the active
// coordinator; it reports whether it did. Concurrent misses share one reload.
func (c *Catalog) reloadOnMiss() bool {
	if !c.role.standby() {
		return false
	}
	c.reloadMu.Lock()
	gen := c.reloadGen
	c.reloadMu.Unlock()
	c.reloadMu.Lock()
	defer c.reloadMu.Unlock()
	if c.reloadGen != gen {
		return true // another reload completed while this one waited
	}
	ctx, cancel := context.WithTimeout(c.bgCtx, 5*time.Second)
	defer cancel()
	if err := c.reload(ctx, true); err != nil {
		c.log.Warn("cannot reload the catalog", "err", err)
		return false
	}
	c.reloadGen++
	return true
}

// catchUpTable makes a table read on a node that is not the active coordinator see every
// change committed before it: it reads the table's record from etcd (a linearizable read)
// and re-reads the catalog if the cached table differs (altered, dropped, recreated). The
// watch that keeps the catalog in step lags by a few milliseconds, and a client that alters
// a table through the active coordinator and at once asks another node for its metadata
// (the Rust client's ALTER then get_table) must get the new schema. It costs one etcd read
// per table read on those nodes; the active coordinator writes its own catalog and reads
// nothing.
func (c *Catalog) catchUpTable(path cluster.TablePath) {
	if !c.role.standby() {
		return
	}
	ctx, cancel := context.WithTimeout(c.bgCtx, 5*time.Second)
	defer cancel()
	raw, err := c.store.Get(ctx, tableKey(path))
	cached, ok := c.cache.tableByPath(path)
	switch {
	case errors.Is(err, meta.ErrNotFound):
		if !ok {
			return // absent in both
		}
	case err != nil:
		c.log.Warn("cannot read a table's record; answering from the cached catalog", "table", path, "err", err)
		return
	default:
		var rec tableRecord
		if json.Unmarshal(raw, &rec) == nil && ok && cached.ID == rec.ID && cached.SchemaID == rec.SchemaID && cached.ModifiedMs == rec.ModifiedMs {
			return
		}
	}
	c.reloadOnMiss()
}

// reload replaces the in-memory catalog by the store's; with standbyOnly it is discarded
// when the node has become active meanwhile. Altered tables are handed to the local tablet
// server.
func (c *Catalog) reload(ctx context.Context, standbyOnly bool) error {
	fresh, err := loadCatalog(ctx, c.store)
	if err != nil {
		return fmt.Errorf("reload catalog: %w", err)
	}
	altered, _ := c.cache.replace(fresh, func() bool { return !standbyOnly || c.role.standby() })
	if c.updater != nil {
		for _, t := range altered {
			if err := c.updater.UpdateTable(ctx, t); err != nil {
				c.log.Error("cannot apply altered table to its buckets", "table", t.Path, "err", err)
			}
		}
	}
	return nil
}

// takeover prepares the catalog of a newly active coordinator: it is re-read (a standby's
// cache may trail etcd by a watch event) and the default database created on a fresh
// cluster.
func (c *Catalog) takeover(ctx context.Context) error {
	unlock := c.lockDDL()
	err := c.reload(ctx, false)
	unlock()
	if err != nil {
		return err
	}
	if _, ok := c.Database(DefaultDatabase); !ok {
		if err := c.CreateDatabase(ctx, DefaultDatabase, nil, true); err != nil {
			return fmt.Errorf("create default database: %w", err)
		}
	}
	return nil
}
