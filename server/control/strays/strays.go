// Package strays decides which bucket copies a returning tablet server deletes
// (docs/cluster.md, "Moves": a server that was away). Once a server has loaded the cluster
// state at one revision, a copy on its disk is stray when the bucket's state does not list
// the server (its replicas moved while it was away), or when the bucket has no state and its
// table or partition is gone from the catalog (dropped while it was away). Table and
// partition ids come from counters and are never reused, so an id absent at that revision
// cannot come back.
package strays

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"

	"go.etcd.io/etcd/api/v3/mvccpb"

	"github.com/stromdb/strom/server/cluster"
	"github.com/stromdb/strom/server/meta"
)

// CatalogIDs are the tables and partitions the catalog held at one revision.
type CatalogIDs struct {
	Tables, Partitions map[int64]bool
	// Unreadable is set when a record could not be read: its id is unknown, so no bucket
	// without a state may be judged stray.
	Unreadable bool
}

// IDsOf reads the ids of the catalog's table and partition records (the coordinator's
// tableRecord and partitionRecord, both {"id": …}) among kvs (keys under meta.KeyPrefix).
func IDsOf(kvs []*mvccpb.KeyValue) CatalogIDs {
	ids := CatalogIDs{Tables: map[int64]bool{}, Partitions: map[int64]bool{}}
	for _, kv := range kvs {
		key := strings.TrimPrefix(string(kv.Key), meta.KeyPrefix)
		var into map[int64]bool
		switch {
		case strings.HasPrefix(key, "tables/"):
			into = ids.Tables
		case strings.HasPrefix(key, "partitions/"):
			into = ids.Partitions
		default:
			continue
		}
		var rec struct {
			ID *int64 `json:"id"`
		}
		if err := json.Unmarshal(kv.Value, &rec); err != nil || rec.ID == nil {
			ids.Unreadable = true
			continue
		}
		into[*rec.ID] = true
	}
	return ids
}

// Stray is the decision: whether server self's copy of bucket b is stray, given the bucket
// states and catalog ids of one revision. A bucket without a state of a table (and
// partition) the catalog still has is kept, as is every bucket without a state when a
// catalog record could not be read.
func Stray(states map[cluster.Bucket]cluster.BucketState, ids CatalogIDs, self int32, b cluster.Bucket) bool {
	if st, ok := states[b]; ok {
		return !st.IsReplica(self)
	}
	if ids.Unreadable {
		return false
	}
	if !ids.Tables[b.TableID] {
		return true
	}
	return b.PartitionID != cluster.NoPartition && !ids.Partitions[b.PartitionID]
}

// Remover is the tablet server's RemoveStrayReplicas: it offers every bucket it keeps on
// disk but has not open to stray, and deletes those stray says are.
type Remover interface {
	RemoveStrayReplicas(ctx context.Context, stray func(cluster.Bucket) bool) ([]cluster.Bucket, error)
}

// Remove has replicas (when it is a Remover) delete server self's stray copies.
func Remove(ctx context.Context, replicas any, self int32, states map[cluster.Bucket]cluster.BucketState, ids CatalogIDs, log *slog.Logger) {
	r, ok := replicas.(Remover)
	if !ok {
		return
	}
	removed, err := r.RemoveStrayReplicas(ctx, func(b cluster.Bucket) bool { return Stray(states, ids, self, b) })
	if err != nil {
		log.Warn("cannot remove every copy of a bucket this server no longer holds", "err", err)
	}
	if len(removed) > 0 {
		log.Info("removed copies of buckets this server no longer holds", "buckets", len(removed))
	}
}
