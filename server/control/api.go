package control

import (
	"context"
	"errors"
	"time"

	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/server/cluster"
	"github.com/stromdb/strom/server/control/assign"
	"github.com/stromdb/strom/server/control/bucketstate"
	"github.com/stromdb/strom/server/control/rebalance"
	"github.com/stromdb/strom/server/meta"
)

// What the rest of the server asks of the control plane. Each method hands the call to the
// concern that owns it.

// Control implements cluster.ReplicationControl over etcd.
var _ cluster.ReplicationControl = (*Control)(nil)

// LiveServers returns the ids of the live tablet servers, sorted.
func (c *Control) LiveServers() []int32 { return c.members.IDs() }

// HTTPAddr returns HOST:PORT of live tablet server id's HTTP listener, if it has one.
func (c *Control) HTTPAddr(id int32) (string, bool) { return c.members.HTTPAddr(id) }

// IsLive reports whether tablet server id is registered.
func (c *Control) IsLive(id int32) bool { return c.members.IsLive(id) }

// BucketStates returns the states of the buckets of a table (partitionID NoPartition) or
// partition, by bucket id; ok false for a bucket with no stored state.
func (c *Control) BucketStates(tableID, partitionID int64, n int32) ([]cluster.BucketState, []bool) {
	return c.states.Table(tableID, partitionID, n)
}

// State returns the state of one bucket.
func (c *Control) State(b cluster.Bucket) (cluster.BucketState, bool) { return c.states.State(b) }

// Active reports whether this node is the active coordinator.
func (c *Control) Active() bool { return c.elector.Active() }

// Fence returns the active coordinator's fence: its election key and epoch. ok is false
// while this node is not the active coordinator.
func (c *Control) Fence() (meta.Fence, bool) { return c.elector.Fence() }

// Epoch returns the coordinator epoch of this node while it is active, else 0.
func (c *Control) Epoch() int64 { return c.elector.Epoch() }

// ActiveCoordinatorAddr returns HOST:PORT of the active coordinator's internal listener,
// where a standby forwards admin requests; ok false while none is elected or this node is
// the active one.
func (c *Control) ActiveCoordinatorAddr() (string, bool) {
	if c.Active() {
		return "", false
	}
	return c.elector.CoordinatorAddr()
}

// Assign places the buckets of a new table (partitionID NoPartition) or partition over the
// live servers not tagged PERMANENT_OFFLINE (assign.Place), over their racks when they have
// them (tablet-server.rack in their registrations). It returns the puts of the
// states, for the creating transaction, and the states themselves.
func (c *Control) Assign(t *cluster.TableInfo, partitionID int64) ([]meta.Op, map[cluster.Bucket]cluster.BucketState, error) {
	servers := rebalance.PlacementServers(c.members.IDs(), c.rebalancer.ServerTags())
	states, err := assign.Place(servers, c.members.Racks(), t.ID, partitionID, t.NumBuckets(), t.Descriptor.Properties.ReplicationFactor(), c.elector.Epoch())
	if err != nil {
		return nil, nil, err
	}
	ops := make([]meta.Op, 0, len(states))
	for b := int32(0); b < t.NumBuckets(); b++ {
		bk := cluster.Bucket{TableID: t.ID, PartitionID: partitionID, Bucket: b}
		ops = append(ops, meta.Put(bucketstate.Key(bk), bucketstate.Encode(states[bk])))
	}
	return ops, states, nil
}

// DropOps returns the deletes of a dropped table's or partition's states and lineages.
func (c *Control) DropOps(tableID, partitionID int64) []meta.Op {
	return []meta.Op{meta.DeletePrefix(bucketstate.TablePrefix(tableID, partitionID)),
		meta.DeletePrefix(bucketstate.LineageTablePrefix(tableID, partitionID))}
}

// Created is called by the active coordinator once the transaction creating a table or
// partition with states committed: it tells every replica and waits (bounded by
// NotifyTimeout) until the leaders serve. A replica that does not answer in time learns the
// states from its watch.
func (c *Control) Created(ctx context.Context, t *cluster.TableInfo, p *cluster.PartitionInfo, states map[cluster.Bucket]cluster.BucketState) {
	for b, st := range states {
		c.states.Put(b, st, 0)
	}
	c.notifier.Notify(ctx, states, t, p)
}

// Dropped is called once the transaction dropping a table or partition committed. Every
// replica (this node's too) stops and deletes its copy when its watch sees the states
// deleted.
func (c *Control) Dropped(ctx context.Context, tableID, partitionID int64) {
	c.states.Forget(tableID, partitionID)
}

// AdjustISR implements cluster.ReplicationControl (assign.Replication.AdjustISR).
func (c *Control) AdjustISR(ctx context.Context, b cluster.Bucket, expect cluster.BucketState, isr []int32) (cluster.BucketState, error) {
	return c.repl.AdjustISR(ctx, b, expect, isr)
}

// PublishLineage implements cluster.ReplicationControl.
func (c *Control) PublishLineage(ctx context.Context, b cluster.Bucket, l cluster.Lineage) error {
	return c.repl.PublishLineage(ctx, b, l)
}

// Lineage implements cluster.ReplicationControl.
func (c *Control) Lineage(ctx context.Context, b cluster.Bucket) (cluster.Lineage, bool, error) {
	return c.repl.Lineage(ctx, b)
}

// TableLineages implements cluster.LineageLister.
func (c *Control) TableLineages(ctx context.Context, tableID, partitionID int64) (map[cluster.Bucket]cluster.Lineage, error) {
	return c.repl.TableLineages(ctx, tableID, partitionID)
}

// ReplicationAddr implements cluster.ReplicationControl from the servers' registrations.
func (c *Control) ReplicationAddr(id int32) (string, bool) { return c.members.InternalAddr(id) }

// CommitAsLeader applies ops (if conds hold) only while this node's tablet server leads b at
// leaderEpoch (assign.Replication.CommitAsLeader): the KV snapshots' leader fence.
func (c *Control) CommitAsLeader(ctx context.Context, b cluster.Bucket, leaderEpoch int32, conds []meta.Cond, ops []meta.Op) (bool, error) {
	if c.opts.Replicas == nil {
		return false, errors.New("commit as leader: this node has no tablet server")
	}
	return c.repl.CommitAsLeader(ctx, b, leaderEpoch, conds, ops)
}

// RegisterTablet installs the server-to-server handlers of a tablet server on svc:
// NOTIFY_LEADER_AND_ISR, accepted only on the internal listener.
func (c *Control) RegisterTablet(svc *wire.Service, internalListener string) {
	c.notifier.Register(svc, internalListener)
}

// RegisterCoordinator installs the server-to-server handlers of a coordinator on svc:
// CONTROLLED_SHUTDOWN, accepted only on the internal listener.
func (c *Control) RegisterCoordinator(svc *wire.Service, internalListener string) {
	c.shutdown.Register(svc, internalListener)
}

// ControlledShutdown asks the active coordinator to move this tablet server's leaderships
// away, retrying (within timeout) while some remain that could move. Buckets with no other
// live ISR member keep this server as leader until its lease ends. Nothing to do on a node
// without a tablet server, before Start, or after Abandon.
func (c *Control) ControlledShutdown(ctx context.Context, timeout time.Duration) error {
	if c.opts.Replicas == nil || c.cancel == nil || c.abandon.Load() {
		return nil
	}
	return c.shutdown.Request(ctx, c.opts.Registration.ID, timeout)
}

// ServerTags returns the tags of the tablet servers.
func (c *Control) ServerTags() map[int32]ServerTag { return c.rebalancer.ServerTags() }

// AddServerTag tags servers, all or none (Fluss's ADD_SERVER_TAG; rebalance.AddTags).
func (c *Control) AddServerTag(ctx context.Context, ids []int32, tag ServerTag) error {
	return c.rebalancer.AddServerTag(ctx, ids, tag)
}

// RemoveServerTag removes a tag from servers, all or none (Fluss's REMOVE_SERVER_TAG;
// rebalance.RemoveTags).
func (c *Control) RemoveServerTag(ctx context.Context, ids []int32, tag ServerTag) error {
	return c.rebalancer.RemoveServerTag(ctx, ids, tag)
}

// StartRebalance plans a rebalance for goals and starts it (Fluss's REBALANCE); it returns
// its id.
func (c *Control) StartRebalance(ctx context.Context, goals []Goal) (string, error) {
	return c.rebalancer.StartRebalance(ctx, goals)
}

// RebalanceProgress returns the current or last rebalance (Fluss's LIST_REBALANCE_PROGRESS).
func (c *Control) RebalanceProgress(id string) (*Rebalance, error) { return c.rebalancer.Progress(id) }

// CancelRebalance cancels the current rebalance (Fluss's CANCEL_REBALANCE).
func (c *Control) CancelRebalance(ctx context.Context, id string) error {
	return c.rebalancer.CancelRebalance(ctx, id)
}
