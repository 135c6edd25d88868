package server

import (
	"context"
	"log/slog"

	"github.com/stromdb/strom/server/cluster"
	"github.com/stromdb/strom/server/config"
	"github.com/stromdb/strom/server/kvsnap"
	"github.com/stromdb/strom/server/meta"
	"github.com/stromdb/strom/server/tablet"
)

// openKvSnapshots opens the KV snapshot manager (docs/kv-snapshots.md) over the metadata store.
// tabletServer is called lazily: the tablet server is created after the manager, because its
// log retention consults the manager's floor.
func openKvSnapshots(ctx context.Context, cfg config.Config, store meta.Store, catalog cluster.Catalog,
	tabletServer func() *tablet.Server, log *slog.Logger) (*kvsnap.Manager, error) {
	c, err := kvsnap.ConfigFrom(cfg.Raw, cfg.DataDir)
	if err != nil {
		return nil, err
	}
	return kvsnap.Open(ctx, kvsnap.Options{Config: c, Meta: store, Catalog: catalog, Logger: log,
		Buckets: func() []kvsnap.Bucket {
			ts := tabletServer()
			if ts == nil {
				return nil
			}
			var out []kvsnap.Bucket
			for _, r := range ts.Replicas() {
				// Only a bucket's leader snapshots it: a follower's state is the same
				// rows, behind.
				if r.KV != nil && !r.KV.IsFollower() {
					out = append(out, kvsnap.Bucket{Bucket: r.Bucket, KV: r.KV})
				}
			}
			return out
		}})
}

// retentionFloor combines the changelog floors of the KV snapshots and, when set, another
// component's (the lake tiering): retention keeps everything at or above either.
func retentionFloor(snaps *kvsnap.Manager, other func(cluster.Bucket) int64) func(cluster.Bucket) int64 {
	if other == nil {
		return snaps.Floor
	}
	return func(b cluster.Bucket) int64 { return min(snaps.Floor(b), other(b)) }
}
