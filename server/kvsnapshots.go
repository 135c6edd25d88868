package server

import (
	"context"
	"log/slog"
	"path/filepath"

	"github.com/stromdb/strom/server/cluster"
	"github.com/stromdb/strom/server/config"
	"github.com/stromdb/strom/server/control"
	"github.com/stromdb/strom/server/kvsnap"
	"github.com/stromdb/strom/server/meta"
	"github.com/stromdb/strom/server/remote"
	"github.com/stromdb/strom/server/tablet"
)

// openKvSnapshots opens the KV snapshot manager (docs/kv-snapshots.md) over the metadata store.
// tabletServer is called lazily: the tablet server is created after the manager, because its
// log retention consults the manager's floor. In a cluster (ctl non-nil) snapshot commits are
// fenced by the bucket's leader epoch, lease changes and cleanup go through the coordinator's
// fenced store (admin) and happen on the active coordinator only, and every node follows the
// snapshot records in etcd.
func openKvSnapshots(ctx context.Context, cfg config.Config, st *remote.Storage, store *meta.EtcdStore, admin meta.Store, ctl *control.Control,
	catalog cluster.Catalog, tabletServer func() *tablet.Server, log *slog.Logger) (*kvsnap.Manager, error) {
	c, err := kvsnap.ConfigFrom(cfg.Raw)
	if err != nil {
		return nil, err
	}
	opts := kvsnap.Options{Config: c, Meta: store, Admin: admin, Catalog: catalog, Logger: log,
		Remote: st, LocalDir: filepath.Join(cfg.DataDir, "kv-snapshots-local"),
		Buckets: func() []kvsnap.Bucket {
			ts := tabletServer()
			if ts == nil {
				return nil
			}
			var out []kvsnap.Bucket
			for _, r := range ts.Replicas() {
				// Only a bucket's leader snapshots it: a follower's state is the same
				// rows, behind.
				if r.KV == nil || r.KV.IsFollower() {
					continue
				}
				if epoch, leading := ts.LeaderEpoch(r.Bucket); leading {
					out = append(out, kvsnap.Bucket{Bucket: r.Bucket, KV: r.KV, LeaderEpoch: epoch})
				}
			}
			return out
		}}
	if ctl != nil {
		opts.Fence, opts.Active, opts.Watch = ctl, ctl.Active, store.Client()
		if v := cfg.Raw["remote.data.dir"]; v == "" {
			log.Warn("remote.data.dir is not set: in a cluster it must be storage every node reaches "+
				"(s3://bucket/prefix, or a directory every node shares at the same path); KV snapshots now go to this node's own "+st.Root()+
				", which the other nodes cannot read: replicas cannot bootstrap from another leader's snapshots "+
				"and Flink full reads fail when the leadership moves (docs/kv-snapshots.md)",
				"remote.data.dir", st.Root())
		}
	}
	return kvsnap.Open(ctx, opts)
}

// retentionFloor combines the changelog floors of the KV snapshots and, when set, another
// component's (the lake tiering): retention keeps everything at or above either.
func retentionFloor(snaps *kvsnap.Manager, other func(cluster.Bucket) int64) func(cluster.Bucket) int64 {
	if other == nil {
		return snaps.Floor
	}
	return func(b cluster.Bucket) int64 { return min(snaps.Floor(b), other(b)) }
}
