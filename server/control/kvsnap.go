package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/server/cluster"
	"github.com/stromdb/strom/server/meta"
)

// CommitAsLeader applies ops (if conds hold) only while this node's tablet server leads b at
// leaderEpoch, as etcd has the bucket's state: the write is a transaction guarded by the
// state record's revision, read just before, so a leader deposed meanwhile (a newer leader
// epoch, or another leader) cannot commit. A KV snapshot's metadata is committed this way
// (docs/kv-snapshots.md). A state change that keeps the leadership (an ISR change) is retried.
// It returns FENCED_LEADER_EPOCH when this server does not lead b at leaderEpoch.
func (c *Control) CommitAsLeader(ctx context.Context, b cluster.Bucket, leaderEpoch int32, conds []meta.Cond, ops []meta.Op) (bool, error) {
	self := c.opts.Registration.ID
	if c.opts.Replicas == nil {
		return false, errors.New("commit as leader: this node has no tablet server")
	}
	for attempt := 0; ; attempt++ {
		val, rev, err := c.store.GetRevision(ctx, BucketKey(b))
		if errors.Is(err, meta.ErrNotFound) {
			return false, ferr.New(ferr.UnknownTableOrBucketException, "bucket %s has no state (dropped?)", b)
		}
		if err != nil {
			return false, err
		}
		var cur cluster.BucketState
		if err := json.Unmarshal(val, &cur); err != nil {
			return false, fmt.Errorf("bucket %s: corrupt state: %w", b, err)
		}
		if cur.Leader != self || cur.LeaderEpoch != leaderEpoch {
			return false, ferr.New(ferr.FencedLeaderEpochException, "bucket %s is led by %d at leader epoch %d, not by %d at %d",
				b, cur.Leader, cur.LeaderEpoch, self, leaderEpoch)
		}
		ok, err := c.store.TxnGuarded(ctx, BucketKey(b), rev, conds, ops)
		if errors.Is(err, meta.ErrGuardMoved) && attempt < 10 {
			continue // the state changed between the read and the write: decide again
		}
		return ok, err
	}
}
