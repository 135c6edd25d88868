package control

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/server/cluster"
	"github.com/stromdb/strom/server/meta"
)

// Control implements cluster.ReplicationControl over etcd.
var _ cluster.ReplicationControl = (*Control)(nil)

// AdjustISR implements cluster.ReplicationControl: a compare-and-swap of the bucket's state
// on its revision, made by the bucket's leader without a coordinator round trip. The stored
// state must still be expect (same LeaderEpoch and BucketEpoch) and name this server the
// leader; the new ISR must contain the leader and be a subset of the replicas.
func (c *Control) AdjustISR(ctx context.Context, b cluster.Bucket, expect cluster.BucketState, isr []int32) (cluster.BucketState, error) {
	key := meta.KeyPrefix + BucketKey(b)
	resp, err := c.cli.Get(ctx, key)
	if err != nil {
		return cluster.BucketState{}, fmt.Errorf("adjust ISR of %s: %w", b, err)
	}
	if len(resp.Kvs) == 0 {
		return cluster.BucketState{}, ferr.New(ferr.UnknownTableOrBucketException, "bucket %s has no state (dropped?)", b)
	}
	var cur cluster.BucketState
	if err := json.Unmarshal(resp.Kvs[0].Value, &cur); err != nil {
		return cluster.BucketState{}, fmt.Errorf("bucket %s: corrupt state: %w", b, err)
	}
	if cur.LeaderEpoch != expect.LeaderEpoch || cur.BucketEpoch != expect.BucketEpoch {
		return cluster.BucketState{}, ferr.New(ferr.FencedLeaderEpochException, "bucket %s is at leader epoch %d, bucket epoch %d; the ISR change expected %d, %d", b, cur.LeaderEpoch, cur.BucketEpoch, expect.LeaderEpoch, expect.BucketEpoch)
	}
	if cur.Leader == cluster.NoLeader || cur.Leader != expect.Leader {
		return cluster.BucketState{}, ferr.New(ferr.FencedLeaderEpochException, "bucket %s is led by %d, not %d", b, cur.Leader, expect.Leader)
	}
	if !slices.Contains(isr, cur.Leader) {
		return cluster.BucketState{}, ferr.New(ferr.InvalidUpdateVersionException, "the new ISR %v of %s does not contain its leader %d", isr, b, cur.Leader)
	}
	seen := map[int32]bool{}
	for _, id := range isr {
		if !cur.IsReplica(id) || seen[id] {
			return cluster.BucketState{}, ferr.New(ferr.InvalidUpdateVersionException, "the new ISR %v of %s is not a set of its replicas %v", isr, b, cur.Replicas)
		}
		seen[id] = true
	}
	next := cur
	next.ISR = slices.Clone(isr)
	next.BucketEpoch++
	val, _ := json.Marshal(next)
	tr, err := c.cli.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(key), "=", resp.Kvs[0].ModRevision)).
		Then(clientv3.OpPut(key, string(val))).Commit()
	if err != nil {
		return cluster.BucketState{}, fmt.Errorf("adjust ISR of %s: %w", b, err)
	}
	if !tr.Succeeded {
		return cluster.BucketState{}, ferr.New(ferr.FencedLeaderEpochException, "the state of bucket %s changed during the ISR change", b)
	}
	c.noteState(b, next, tr.Header.Revision)
	return next, nil
}

// PublishLineage implements cluster.ReplicationControl: it stores l if the bucket's leader
// epoch is still l.LeaderEpoch (compared in the same transaction).
func (c *Control) PublishLineage(ctx context.Context, b cluster.Bucket, l cluster.Lineage) error {
	skey := meta.KeyPrefix + BucketKey(b)
	resp, err := c.cli.Get(ctx, skey)
	if err != nil {
		return fmt.Errorf("publish lineage of %s: %w", b, err)
	}
	if len(resp.Kvs) == 0 {
		return ferr.New(ferr.UnknownTableOrBucketException, "bucket %s has no state (dropped?)", b)
	}
	var cur cluster.BucketState
	if err := json.Unmarshal(resp.Kvs[0].Value, &cur); err != nil {
		return fmt.Errorf("bucket %s: corrupt state: %w", b, err)
	}
	if cur.LeaderEpoch != l.LeaderEpoch {
		return ferr.New(ferr.FencedLeaderEpochException, "bucket %s is at leader epoch %d, the lineage is of %d", b, cur.LeaderEpoch, l.LeaderEpoch)
	}
	val, _ := json.Marshal(l)
	// The state may change its ISR (bucket epoch) meanwhile without changing the leader epoch;
	// compare the state's revision and retry then.
	tr, err := c.cli.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(skey), "=", resp.Kvs[0].ModRevision)).
		Then(clientv3.OpPut(meta.KeyPrefix+lineageKey(b), string(val))).Commit()
	if err != nil {
		return fmt.Errorf("publish lineage of %s: %w", b, err)
	}
	if !tr.Succeeded {
		return c.PublishLineage(ctx, b, l)
	}
	return nil
}

// Lineage implements cluster.ReplicationControl.
func (c *Control) Lineage(ctx context.Context, b cluster.Bucket) (cluster.Lineage, bool, error) {
	resp, err := c.cli.Get(ctx, meta.KeyPrefix+lineageKey(b))
	if err != nil {
		return cluster.Lineage{}, false, fmt.Errorf("lineage of %s: %w", b, err)
	}
	if len(resp.Kvs) == 0 {
		return cluster.Lineage{}, false, nil
	}
	var l cluster.Lineage
	if err := json.Unmarshal(resp.Kvs[0].Value, &l); err != nil {
		return cluster.Lineage{}, false, fmt.Errorf("lineage of %s: corrupt: %w", b, err)
	}
	return l, true, nil
}

// ReplicationAddr implements cluster.ReplicationControl from the servers' registrations.
func (c *Control) ReplicationAddr(id int32) (string, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	r, ok := c.live[id]
	if !ok || r.Internal == "" {
		return "", false
	}
	return r.Internal, true
}
