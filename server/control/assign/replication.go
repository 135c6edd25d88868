package assign

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/server/cluster"
	"github.com/stromdb/strom/server/control/bucketstate"
	"github.com/stromdb/strom/server/meta"
)

// Replication is the leader's side of the bucket states in etcd: ISR changes, the
// leader-epoch lineage, and commits fenced by a leadership. None of it needs the
// coordinator; each write compares the state's revision, so a leader deposed meanwhile
// cannot win.
type Replication struct {
	Store  *meta.EtcdStore
	States *bucketstate.Cache
	// Self is the local tablet server's id (for CommitAsLeader).
	Self int32
}

// readState reads b's stored state and its revision; what names the operation in an etcd
// error.
func (r *Replication) readState(ctx context.Context, b cluster.Bucket, what string) (cluster.BucketState, int64, error) {
	resp, err := r.Store.Client().Get(ctx, meta.KeyPrefix+bucketstate.Key(b))
	if err != nil {
		return cluster.BucketState{}, 0, fmt.Errorf("%s of %s: %w", what, b, err)
	}
	if len(resp.Kvs) == 0 {
		return cluster.BucketState{}, 0, ferr.New(ferr.UnknownTableOrBucketException, "bucket %s has no state (dropped?)", b)
	}
	st, err := bucketstate.Decode(resp.Kvs[0].Value)
	if err != nil {
		return cluster.BucketState{}, 0, fmt.Errorf("bucket %s: %w", b, err)
	}
	return st, resp.Kvs[0].ModRevision, nil
}

// AdjustISR implements cluster.ReplicationControl: a compare-and-swap of the bucket's state
// on its revision, made by the bucket's leader, of the state ChangeISR decides.
func (r *Replication) AdjustISR(ctx context.Context, b cluster.Bucket, expect cluster.BucketState, isr []int32) (cluster.BucketState, error) {
	var next cluster.BucketState
	rev, err := r.swapOnState(ctx, b, "adjust ISR", false, func(cur cluster.BucketState) ([]clientv3.Op, error) {
		var err error
		if next, err = ChangeISR(b, cur, expect, isr); err != nil {
			return nil, err
		}
		return []clientv3.Op{clientv3.OpPut(meta.KeyPrefix+bucketstate.Key(b), string(bucketstate.Encode(next)))}, nil
	})
	if err != nil {
		return cluster.BucketState{}, err
	}
	r.States.Put(b, next, rev)
	return next, nil
}

// PublishLineage implements cluster.ReplicationControl: it stores l if the bucket's leader
// epoch is still l.LeaderEpoch (compared in the same transaction).
func (r *Replication) PublishLineage(ctx context.Context, b cluster.Bucket, l cluster.Lineage) error {
	val, err := json.Marshal(l)
	if err != nil {
		return fmt.Errorf("publish lineage of %s: %w", b, err)
	}
	// The state may change its ISR (bucket epoch) meanwhile without changing the leader
	// epoch: swapOnState then decides again on the new state.
	_, err = r.swapOnState(ctx, b, "publish lineage", true, func(cur cluster.BucketState) ([]clientv3.Op, error) {
		if cur.LeaderEpoch != l.LeaderEpoch {
			return nil, ferr.New(ferr.FencedLeaderEpochException, "bucket %s is at leader epoch %d, the lineage is of %d", b, cur.LeaderEpoch, l.LeaderEpoch)
		}
		return []clientv3.Op{clientv3.OpPut(meta.KeyPrefix+bucketstate.LineageKey(b), string(val))}, nil
	})
	return err
}

// swapOnState applies the ops decide returns for b's state only if the stored state is
// still the one decided on (its revision compared in the transaction), and returns the
// transaction's revision. It costs one etcd round trip when the local cache knows the
// state's revision: the state decided on is the cached one, and a state that moved since
// comes back from the same transaction (its else branch) to be decided on again — with
// retry, until decide refuses; without, the swap fails with FENCED_LEADER_EPOCH as one that
// lost its race. Only when the cache has no revision is the state read first. A refusal by
// decide of the cached state is checked against a fresh read, since the cache may lag.
//
// Why the cached state is safe to decide on: the compare succeeds only while the key's
// mod revision equals the cached revision, and a cache entry's revision is either the mod
// revision of exactly its state (the watch, this node's own swaps) or, for a state learnt
// from a notification (bucketstate.Cache.PutNewer), an older one than the key's — the
// coordinator notifies only states it has committed — so that compare fails.
func (r *Replication) swapOnState(ctx context.Context, b cluster.Bucket, what string, retry bool, decide func(cluster.BucketState) ([]clientv3.Op, error)) (int64, error) {
	key := meta.KeyPrefix + bucketstate.Key(b)
	e, cached := r.States.Get(b)
	cur, rev := e.State, e.Rev
	if !cached || rev == 0 {
		var err error
		if cur, rev, err = r.readState(ctx, b, what); err != nil {
			return 0, err
		}
		cached = false
	}
	for {
		ops, err := decide(cur)
		if err != nil {
			if !cached {
				return 0, err
			}
			if cur, rev, err = r.readState(ctx, b, what); err != nil {
				return 0, err
			}
			cached = false
			continue
		}
		tr, err := r.Store.Client().Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(key), "=", rev)).
			Then(ops...).Else(clientv3.OpGet(key)).Commit()
		if err != nil {
			return 0, fmt.Errorf("%s of %s: %w", what, b, err)
		}
		if tr.Succeeded {
			return tr.Header.Revision, nil
		}
		if !retry && !cached {
			return 0, ferr.New(ferr.FencedLeaderEpochException, "the state of bucket %s changed during the %s", b, what)
		}
		kvs := tr.Responses[0].GetResponseRange().GetKvs()
		if len(kvs) == 0 {
			return 0, ferr.New(ferr.UnknownTableOrBucketException, "bucket %s has no state (dropped?)", b)
		}
		if cur, err = bucketstate.Decode(kvs[0].Value); err != nil {
			return 0, fmt.Errorf("bucket %s: %w", b, err)
		}
		rev, cached = kvs[0].ModRevision, false
	}
}

// Lineage implements cluster.ReplicationControl.
func (r *Replication) Lineage(ctx context.Context, b cluster.Bucket) (cluster.Lineage, bool, error) {
	resp, err := r.Store.Client().Get(ctx, meta.KeyPrefix+bucketstate.LineageKey(b))
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

// TableLineages implements cluster.LineageLister: one range read of the lineages of a
// table's buckets (partitionID NoPartition) or of one partition's. The read is serializable
// (the local member's copy, no ReadIndex round trip through the etcd leader): a follower
// waiting for its leader's lineage uses only the lineage of exactly its own leader epoch,
// which its leader writes once, so a copy that lags only makes it look again.
func (r *Replication) TableLineages(ctx context.Context, tableID, partitionID int64) (map[cluster.Bucket]cluster.Lineage, error) {
	prefix := meta.KeyPrefix + bucketstate.LineageBucketsPrefix(tableID, partitionID)
	resp, err := r.Store.Client().Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithSerializable())
	if err != nil {
		return nil, fmt.Errorf("lineages of table %d partition %d: %w", tableID, partitionID, err)
	}
	out := make(map[cluster.Bucket]cluster.Lineage, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		b, ok := bucketstate.ParseLineageKey(string(kv.Key[len(meta.KeyPrefix):]))
		if !ok {
			return nil, fmt.Errorf("lineages of table %d: unreadable key %q", tableID, kv.Key)
		}
		var l cluster.Lineage
		if err := json.Unmarshal(kv.Value, &l); err != nil {
			return nil, fmt.Errorf("lineage of %s: corrupt: %w", b, err)
		}
		out[b] = l
	}
	return out, nil
}

// CommitAsLeader applies ops (if conds hold) only while the local tablet server leads b at
// leaderEpoch, as etcd has the bucket's state (LeadsAt): the write is a transaction guarded
// by the state record's revision, read just before, so a leader deposed meanwhile (a newer
// leader epoch, or another leader) cannot commit. A KV snapshot's metadata is committed this
// way (docs/kv-snapshots.md). A state change that keeps the leadership (an ISR change) is
// retried. It returns FENCED_LEADER_EPOCH when this server does not lead b at leaderEpoch.
func (r *Replication) CommitAsLeader(ctx context.Context, b cluster.Bucket, leaderEpoch int32, conds []meta.Cond, ops []meta.Op) (bool, error) {
	for attempt := 0; ; attempt++ {
		val, rev, err := r.Store.GetRevision(ctx, bucketstate.Key(b))
		if errors.Is(err, meta.ErrNotFound) {
			return false, ferr.New(ferr.UnknownTableOrBucketException, "bucket %s has no state (dropped?)", b)
		}
		if err != nil {
			return false, err
		}
		cur, err := bucketstate.Decode(val)
		if err != nil {
			return false, fmt.Errorf("bucket %s: %w", b, err)
		}
		if !LeadsAt(cur, r.Self, leaderEpoch) {
			return false, ferr.New(ferr.FencedLeaderEpochException, "bucket %s is led by %d at leader epoch %d, not by %d at %d",
				b, cur.Leader, cur.LeaderEpoch, r.Self, leaderEpoch)
		}
		ok, err := r.Store.TxnGuarded(ctx, bucketstate.Key(b), rev, conds, ops)
		if errors.Is(err, meta.ErrGuardMoved) && attempt < 10 {
			continue // the state changed between the read and the write: decide again
		}
		return ok, err
	}
}
