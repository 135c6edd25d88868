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

// Cluster is the control plane of a multi-node cluster as the coordinator uses it
// (server/control implements it). Options.Cluster is nil on the single node, which keeps its
// own path: every bucket led by the one tablet server, opened in process.
//
// In a cluster the coordinator's store is fenced (meta.FencedStore): every DDL write fails
// with NOT_COORDINATOR_LEADER unless this node is the active coordinator, and a creation
// writes the bucket states Assign returns in the same transaction as the table or partition.
type Cluster interface {
	// Active reports whether this node is the active coordinator.
	Active() bool
	// Assign places the buckets of a new table (partitionID NoPartition) or partition: the
	// puts of their states and the states themselves, or INVALID_REPLICATION_FACTOR.
	Assign(t *cluster.TableInfo, partitionID int64) ([]meta.Op, map[cluster.Bucket]cluster.BucketState, error)
	// DropOps returns the deletes of a dropped table's or partition's states.
	DropOps(tableID, partitionID int64) []meta.Op
	// Created tells the replicas of a committed creation and waits, bounded, for the leaders.
	Created(ctx context.Context, t *cluster.TableInfo, p *cluster.PartitionInfo, states map[cluster.Bucket]cluster.BucketState)
	// Dropped is called after a committed drop.
	Dropped(ctx context.Context, tableID, partitionID int64)
	// BucketStates returns the states of n buckets of a table or partition.
	BucketStates(tableID, partitionID int64, n int32) ([]cluster.BucketState, []bool)
}

// clustered reports whether the coordinator runs in a cluster.
func (c *Coordinator) clustered() bool { return c.opts.Cluster != nil }

// standby reports whether this coordinator is a standby of a cluster: it serves catalog
// reads from its cache and refuses (or forwards) writes.
func (c *Coordinator) standby() bool { return c.clustered() && !c.opts.Cluster.Active() }

// Reload re-reads the whole catalog from the store and replaces the in-memory one, on a
// node that is not the active coordinator (which writes its catalog itself); it calls it on
// every catalog change it sees in etcd. A reload that finds the node active when it is done
// is discarded: it may predate the node's first DDL.
func (c *Coordinator) Reload(ctx context.Context) error {
	if !c.standby() {
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
func (c *Coordinator) reloadOnMiss() bool {
	if !c.standby() {
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
func (c *Coordinator) catchUpTable(path cluster.TablePath) {
	if !c.standby() {
		return
	}
	ctx, cancel := context.WithTimeout(c.bgCtx, 5*time.Second)
	defer cancel()
	raw, err := c.store.Get(ctx, tableKey(path))
	cached, ok := c.tableByPathCached(path)
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

func (c *Coordinator) reloadLocked(ctx context.Context) error { return c.reload(ctx, false) }

func (c *Coordinator) reload(ctx context.Context, standbyOnly bool) error {
	fresh := &Coordinator{
		store: c.store, log: c.log, opts: c.opts,
		databases:  map[string]*Database{},
		tables:     map[cluster.TablePath]*cluster.TableInfo{},
		tablesByID: map[int64]*cluster.TableInfo{},
		schemas:    map[int64]map[int32]schemaVersion{},
		partitions: map[int64]map[string]*cluster.PartitionInfo{},
		partByID:   map[int64]*cluster.PartitionInfo{},
	}
	if err := fresh.load(ctx); err != nil {
		return fmt.Errorf("reload catalog: %w", err)
	}
	c.mu.Lock()
	if standbyOnly && !c.standby() {
		c.mu.Unlock()
		return nil
	}
	// Keep the *TableInfo of unchanged tables, so pointer comparisons (autoPartition's
	// "replaced meanwhile") and the tablet server's cached pointers stay valid; altered
	// tables are handed to the local tablet server.
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
	c.mu.Unlock()
	if c.updater != nil {
		for _, t := range altered {
			if err := c.updater.UpdateTable(ctx, t); err != nil {
				c.log.Error("cannot apply altered table to its buckets", "table", t.Path, "err", err)
			}
		}
	}
	return nil
}

// Takeover prepares a newly active coordinator: its catalog is re-read (a standby's cache
// may trail etcd by a watch event), the default database created on a fresh cluster, and
// due auto-partitions created.
func (c *Coordinator) Takeover(ctx context.Context) error {
	c.ddlMu.Lock()
	err := c.reloadLocked(ctx)
	c.ddlMu.Unlock()
	if err != nil {
		return err
	}
	if _, ok := c.Database(DefaultDatabase); !ok {
		if err := c.CreateDatabase(ctx, DefaultDatabase, nil, true); err != nil {
			return fmt.Errorf("create default database: %w", err)
		}
	}
	go c.RunAutoPartition(c.bgCtx)
	return nil
}
