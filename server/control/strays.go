package control

import (
	"context"
	"encoding/json"
	"strings"

	"go.etcd.io/etcd/api/v3/mvccpb"

	"github.com/stromdb/strom/server/cluster"
	"github.com/stromdb/strom/server/meta"
)

// catalogIDs are the tables and partitions the catalog held at one revision.
type catalogIDs struct {
	tables, partitions map[int64]bool
	unreadable         bool // a record could not be read: its id is unknown
}

// catalogIDsOf reads the ids of the catalog's table and partition records (the coordinator's
// tableRecord and partitionRecord, both {"id": …}) among kvs. A record it cannot read sets
// unreadable, which makes removeStrays keep every bucket without a state.
func catalogIDsOf(kvs []*mvccpb.KeyValue) catalogIDs {
	ids := catalogIDs{tables: map[int64]bool{}, partitions: map[int64]bool{}}
	for _, kv := range kvs {
		key := strings.TrimPrefix(string(kv.Key), meta.KeyPrefix)
		var into map[int64]bool
		switch {
		case strings.HasPrefix(key, "tables/"):
			into = ids.tables
		case strings.HasPrefix(key, "partitions/"):
			into = ids.partitions
		default:
			continue
		}
		var rec struct {
			ID *int64 `json:"id"`
		}
		if err := json.Unmarshal(kv.Value, &rec); err != nil || rec.ID == nil {
			ids.unreadable = true
			continue
		}
		into[*rec.ID] = true
	}
	return ids
}

// strayRemover is the tablet server's RemoveStrayReplicas.
type strayRemover interface {
	RemoveStrayReplicas(ctx context.Context, stray func(cluster.Bucket) bool) ([]cluster.Bucket, error)
}

// removeStrays has the local tablet server delete the copies of buckets it keeps on disk but
// no longer holds, judged by the state loaded at start (states and ids, one revision): a
// bucket whose state does not list this server (its replicas moved while it was away), and
// a bucket without a state whose table or partition the catalog no longer has (dropped while
// it was away). A bucket without a state of a table the catalog still has is kept, as is
// everything when a catalog record could not be read. Table and partition ids are never
// reused (the store's counters), so an id absent at that revision cannot come back.
func (c *Control) removeStrays(ctx context.Context, states map[cluster.Bucket]cluster.BucketState, ids catalogIDs) {
	r, ok := c.opts.Replicas.(strayRemover)
	if !ok {
		return
	}
	self := c.opts.Registration.ID
	stray := func(b cluster.Bucket) bool {
		if st, ok := states[b]; ok {
			return !st.IsReplica(self)
		}
		if ids.unreadable {
			return false
		}
		if !ids.tables[b.TableID] {
			return true
		}
		return b.PartitionID != cluster.NoPartition && !ids.partitions[b.PartitionID]
	}
	removed, err := r.RemoveStrayReplicas(ctx, stray)
	if err != nil {
		c.log.Warn("cannot remove every copy of a bucket this server no longer holds", "err", err)
	}
	if len(removed) > 0 {
		c.log.Info("removed copies of buckets this server no longer holds", "buckets", len(removed))
	}
}
