package control

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/server/cluster"
	"github.com/stromdb/strom/server/meta"
)

// Assign places the buckets of a new table (partition nil) or partition: each bucket gets
// the table's replication factor of replicas over the live tablet servers, spread evenly —
// bucket b of a table starts at server (b + tableID) mod n, so leaders (the first replica)
// rotate over the servers within and across tables. It returns the puts of the states, for
// the creating transaction, and the states themselves.
func (c *Control) Assign(t *cluster.TableInfo, partitionID int64) ([]meta.Op, map[cluster.Bucket]cluster.BucketState, error) {
	// A server tagged PERMANENT_OFFLINE gets no new replica (Fluss's getLiveServers).
	tags := c.ServerTags()
	servers := slices.DeleteFunc(c.LiveServers(), func(id int32) bool { return tags[id] == TagPermanentOffline && hasTag(tags, id) })
	rf := t.Descriptor.ReplicationFactor()
	if rf <= 0 {
		rf = 1
	}
	if int(rf) > len(servers) {
		return nil, nil, ferr.New(ferr.InvalidReplicationFactor, "Replication factor: %d larger than available tablet servers: %d.", rf, len(servers))
	}
	epoch := c.Epoch()
	n := len(servers)
	offset := int(t.ID % int64(n))
	if partitionID != cluster.NoPartition {
		offset = int((t.ID + partitionID) % int64(n))
	}
	ops := make([]meta.Op, 0, t.NumBuckets())
	states := make(map[cluster.Bucket]cluster.BucketState, t.NumBuckets())
	for b := int32(0); b < t.NumBuckets(); b++ {
		replicas := make([]int32, rf)
		for i := range replicas {
			replicas[i] = servers[(int(b)+offset+i)%n]
		}
		st := cluster.BucketState{Replicas: replicas, Leader: replicas[0], ISR: slices.Clone(replicas), CoordinatorEpoch: epoch}
		bk := cluster.Bucket{TableID: t.ID, PartitionID: partitionID, Bucket: b}
		val, _ := json.Marshal(st)
		ops = append(ops, meta.Put(BucketKey(bk), val))
		states[bk] = st
	}
	return ops, states, nil
}

// DropOps returns the deletes of a dropped table's or partition's states and lineages.
func (c *Control) DropOps(tableID, partitionID int64) []meta.Op {
	lp := fmt.Sprintf("%s%d/", lineagePrefix, tableID)
	if partitionID != cluster.NoPartition {
		lp = fmt.Sprintf("%s%d/%d/", lineagePrefix, tableID, partitionID)
	}
	return []meta.Op{meta.DeletePrefix(BucketsPrefix(tableID, partitionID)), meta.DeletePrefix(lp)}
}

// Created is called by the active coordinator once the transaction creating a table or
// partition with states committed: it tells every replica and waits (bounded by
// NotifyTimeout) until the leaders serve. A replica that does not answer in time learns the
// states from its watch.
func (c *Control) Created(ctx context.Context, t *cluster.TableInfo, p *cluster.PartitionInfo, states map[cluster.Bucket]cluster.BucketState) {
	for b, st := range states {
		c.noteState(b, st, 0)
	}
	c.notify(ctx, states, t, p)
}

// Dropped is called once the transaction dropping a table or partition committed. Every
// replica (this node's too) stops and deletes its copy when its watch sees the states
// deleted.
func (c *Control) Dropped(ctx context.Context, tableID, partitionID int64) {
	c.forgetStates(tableID, partitionID)
}

// nextState is the state of a bucket after the leader election rules of docs/cluster.md
// ("Failover"), given the live servers; changed is false when nothing is to be done.
//
//   - The leader is dead: the new leader is the first live ISR member in replica order, and
//     the dead leader leaves the ISR; with no live ISR member the bucket has no leader and
//     keeps its ISR (no unclean election).
//
//   - No leader: the first live ISR member in replica order becomes leader.
//
//   - The leader lives but ISR followers are dead: they leave the ISR (Kafka's and Fluss's
//     coordinators do the same when a server dies), so acks=all writes stop waiting for them
//     at once instead of after log.replica.max-lag-time; they rejoin through the leader's ISR
//     expansion once they are back and caught up.
//
// A new leader also drops every other dead member from the ISR. A leader change increments
// LeaderEpoch and BucketEpoch; an ISR-only change BucketEpoch.
func nextState(st cluster.BucketState, live func(int32) bool, epoch int64) (cluster.BucketState, bool) {
	if st.Leader != cluster.NoLeader && live(st.Leader) {
		leader := st.Leader
		isr := slices.DeleteFunc(slices.Clone(st.ISR), func(id int32) bool { return id != leader && !live(id) })
		if len(isr) == len(st.ISR) {
			return st, false
		}
		next := st
		next.Replicas = slices.Clone(st.Replicas)
		next.ISR = isr
		next.BucketEpoch++
		next.CoordinatorEpoch = epoch
		return next, true
	}
	candidate := cluster.NoLeader
	for _, r := range st.Replicas {
		if r != st.Leader && st.InISR(r) && live(r) {
			candidate = r
			break
		}
	}
	if st.Leader == cluster.NoLeader && candidate == cluster.NoLeader {
		return st, false
	}
	next := st
	next.Replicas = slices.Clone(st.Replicas)
	next.ISR = slices.Clone(st.ISR)
	if candidate != cluster.NoLeader {
		next.ISR = slices.DeleteFunc(next.ISR, func(id int32) bool { return !live(id) })
	}
	next.Leader = candidate
	next.LeaderEpoch++
	next.BucketEpoch++
	next.CoordinatorEpoch = epoch
	return next, true
}

// reconcile runs the leader election rules over every bucket (the active coordinator only),
// writes the changed states — each a compare-and-swap on the state's revision under the
// coordinator's fence — and tells the replicas.
func (c *Control) reconcile(ctx context.Context, takeover bool) {
	c.reconcileMu.Lock()
	defer c.reconcileMu.Unlock()
	c.mu.RLock()
	entries := make(map[cluster.Bucket]stateEntry, len(c.states))
	for b, e := range c.states {
		entries[b] = e
	}
	c.mu.RUnlock()
	epoch := c.Epoch()
	if epoch == 0 {
		return
	}
	changed := map[cluster.Bucket]cluster.BucketState{}
	retry := false
	defer func() {
		// A bucket that could not be decided now (an etcd error, a concurrent change, a
		// state not yet seen by the watch) is retried shortly: no other event may come.
		if retry && c.ctx.Err() == nil {
			time.AfterFunc(200*time.Millisecond, c.kickReconcile)
		}
	}()
	for b, e := range entries {
		if e.rev == 0 {
			if _, ok := nextState(e.state, c.IsLive, epoch); ok {
				retry = true // written by us, not yet seen by the watch
			}
			continue
		}
		next, ok := nextState(e.state, c.IsLive, epoch)
		if !ok {
			continue
		}
		rev, err := c.casState(ctx, b, e.rev, next)
		if err != nil {
			c.log.Warn("cannot elect a leader", "bucket", b, "err", err)
			if ferr.CodeOf(err) == ferr.NotCoordinatorLeaderException {
				return
			}
			retry = true
			continue
		}
		if rev == 0 {
			retry = true // changed meanwhile (an ISR change); decide again on the new state
			continue
		}
		c.noteState(b, next, rev)
		changed[b] = next
		if next.LeaderEpoch == e.state.LeaderEpoch {
			c.log.Info("removed dead replicas from the ISR", "bucket", b, "leader", next.Leader, "isr", next.ISR)
		} else {
			c.log.Info("elected bucket leader", "bucket", b, "leader", next.Leader, "leader_epoch", next.LeaderEpoch, "isr", next.ISR)
		}
	}
	if len(changed) > 0 {
		c.notify(ctx, changed, nil, nil)
	}
	if takeover {
		c.log.Info("reconciled buckets at takeover", "buckets", len(entries), "elections", len(changed))
	}
}

// casState writes st for bucket b if its stored revision is still expectRev and this node
// still holds its fence. It returns the new revision, 0 when the state had moved on, or
// NOT_COORDINATOR_LEADER when the fence is gone.
func (c *Control) casState(ctx context.Context, b cluster.Bucket, expectRev int64, st cluster.BucketState) (int64, error) {
	fence, ok := c.Fence()
	if !ok {
		return 0, meta.ErrNotLeader()
	}
	key := meta.KeyPrefix + BucketKey(b)
	fenceKey := meta.KeyPrefix + fence.Key
	val, _ := json.Marshal(st)
	resp, err := c.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(fenceKey), "=", fence.Epoch), clientv3.Compare(clientv3.ModRevision(key), "=", expectRev)).
		Then(clientv3.OpPut(key, string(val))).
		Else(clientv3.OpGet(fenceKey)).Commit()
	if err != nil {
		return 0, fmt.Errorf("write state of %s: %w", b, err)
	}
	if resp.Succeeded {
		return resp.Header.Revision, nil
	}
	if g := resp.Responses[0].GetResponseRange(); len(g.Kvs) == 0 || g.Kvs[0].CreateRevision != fence.Epoch {
		return 0, meta.ErrNotLeader()
	}
	return 0, nil
}

func hasTag(tags map[int32]ServerTag, id int32) bool {
	_, ok := tags[id]
	return ok
}
