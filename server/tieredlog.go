package server

import (
	"log/slog"

	"github.com/stromdb/strom/server/cluster"
	"github.com/stromdb/strom/server/config"
	"github.com/stromdb/strom/server/control"
	"github.com/stromdb/strom/server/meta"
	"github.com/stromdb/strom/server/remote"
	"github.com/stromdb/strom/server/remotelog"
	"github.com/stromdb/strom/server/tablet"
)

// openRemoteLog opens log tiering (docs/tiered-storage.md) into storage, the node's
// remote.data.dir, when that option is set explicitly (with remote.log.task-interval-duration
// 0 nothing more is tiered, and what is already is served); otherwise it returns nil and every
// segment stays on local disk until table.log.ttl deletes it (the default remote.data.dir, a
// directory on the node's own disk, would free nothing). tabletServer is called lazily (the tablet server is created after the
// manager, which it reads from). In a cluster (ctl non-nil) commits are fenced by the
// bucket's leader epoch in etcd.
func openRemoteLog(cfg config.Config, storage *remote.Storage, store meta.Store, ctl *control.Control, catalog cluster.Catalog,
	tabletServer func() *tablet.Server, lakeFloor func(cluster.Bucket) int64, log *slog.Logger) (*remotelog.Manager, error) {
	c, enabled, err := remotelog.ConfigFrom(cfg.Raw)
	if err != nil {
		return nil, err
	}
	if !enabled {
		return nil, nil
	}
	opts := remotelog.Options{Config: c, Storage: storage, Meta: store, Catalog: catalog, LakeFloor: lakeFloor, Logger: log,
		Buckets: func() []remotelog.Bucket {
			ts := tabletServer()
			if ts == nil {
				return nil
			}
			var out []remotelog.Bucket
			for _, r := range ts.Replicas() {
				p := r.Partition
				if p == nil && r.Bucket.PartitionID != cluster.NoPartition {
					if p, _ = catalog.PartitionByID(r.Bucket.PartitionID); p == nil {
						continue // not known yet: its remote directory cannot be named
					}
				}
				epoch, leading := ts.LeaderEpoch(r.Bucket)
				out = append(out, remotelog.Bucket{Bucket: r.Bucket, Table: r.Table, Partition: p, Log: r.Log,
					Leading: leading, LeaderEpoch: epoch})
			}
			return out
		}}
	if ctl != nil {
		opts.Fence = ctl
	}
	return remotelog.New(opts), nil
}
