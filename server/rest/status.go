package rest

import (
	"cmp"
	"context"
	"net/http"
	"slices"

	"github.com/stromdb/strom/fluss"
	"github.com/stromdb/strom/server"
)

// StatusSource is what the node hosting the gateway knows beyond the Fluss protocol: the
// in-sync replica sets and the followers' progress (which GET_METADATA does not carry), the
// etcd members and whether this node is the active coordinator. *server.Node implements it;
// a gateway without one answers the protocol's view only.
type StatusSource interface {
	BucketReplication(ctx context.Context, tableID, partitionID int64, numBuckets int32) []server.BucketReplication
	EtcdMembers(ctx context.Context) ([]server.EtcdMember, error)
	ActiveCoordinator() (self bool, other string)
}

// replicationJSON adds the control plane's view of each bucket to the buckets answer: the
// ISR, the leader epoch and, per follower, its log end and lag as the leader reports them.
func (g *Gateway) replicationJSON(ctx context.Context, c *fluss.Connection, info *fluss.TableInfo, partition string, out []map[string]any) error {
	if g.opts.Status == nil {
		return nil
	}
	t, err := c.Table(ctx, info.Path)
	if err != nil {
		return err
	}
	pid, err := partitionID(ctx, c, t, partition)
	if err != nil {
		return err
	}
	reps := g.opts.Status.BucketReplication(ctx, info.TableID, pid, int32(len(out)))
	for _, e := range out {
		b := e["bucket"].(int32)
		if int(b) >= len(reps) {
			continue
		}
		r := reps[b]
		isr := r.ISR
		if isr == nil {
			isr = []int32{}
		}
		e["isr"], e["leader_epoch"] = isr, r.LeaderEpoch
		followers := make([]map[string]any, 0, len(r.Followers))
		for _, f := range r.Followers {
			in := false
			for _, id := range r.ISR {
				in = in || id == f.ID
			}
			fj := map[string]any{"id": f.ID, "log_end_offset": f.LogEndOffset, "lag": f.Lag, "in_sync": in, "last_caught_up_ms": f.LastCaughtUpMs}
			if f.LogEndOffset < 0 {
				fj["log_end_offset"], fj["lag"] = nil, nil
			}
			followers = append(followers, fj)
		}
		e["followers"] = followers
		if r.ProgressError != "" {
			e["followers_error"] = r.ProgressError
		}
	}
	return nil
}

// getLake answers the lake tiering state of a table: whether tiering is on, and the latest
// lake snapshot (GET_LAKE_SNAPSHOT) with, per bucket, the log offset it covers next to the
// bucket's latest offset.
func (g *Gateway) getLake(ctx context.Context, c *fluss.Connection, w http.ResponseWriter, r *http.Request) error {
	path := tablePath(r)
	admin := c.Admin()
	info, err := admin.GetTableInfo(ctx, path)
	if err != nil {
		return err
	}
	enabled := info.Properties()["table.datalake.enabled"] == "true"
	out := map[string]any{"table_id": info.TableID, "datalake_enabled": enabled, "format": info.Properties()["table.datalake.format"],
		"snapshot_id": nil, "buckets": []any{}}
	snap, err := admin.GetLatestLakeSnapshot(ctx, path)
	switch {
	case fluss.CodeOf(err) == fluss.ErrLakeSnapshotNotExist:
		writeJSON(w, http.StatusOK, out)
		return nil
	case err != nil:
		return err
	}
	out["snapshot_id"] = snap.SnapshotID
	// Latest offsets per partition (or of the table), to show how far the lake is behind.
	parts := map[int64]string{-1: ""}
	if info.IsPartitioned() {
		infos, err := admin.ListPartitionInfos(ctx, path, nil)
		if err != nil {
			return err
		}
		for _, p := range infos {
			parts[p.ID] = p.Name
		}
	}
	latest := map[int64]map[int32]int64{}
	buckets := make([]map[string]any, 0, len(snap.BucketOffsets))
	for tb, off := range snap.BucketOffsets {
		name, known := parts[tb.PartitionID]
		e := map[string]any{"bucket": tb.Bucket, "tiered_offset": off}
		if info.IsPartitioned() {
			e["partition_id"], e["partition"] = tb.PartitionID, name
		}
		if known {
			if latest[tb.PartitionID] == nil {
				all := make([]int32, info.NumBuckets())
				for i := range all {
					all[i] = int32(i)
				}
				m, err := listOffsets(ctx, admin, path, name, all, fluss.OffsetLatest())
				if err != nil {
					return err
				}
				latest[tb.PartitionID] = m
			}
			if l, ok := latest[tb.PartitionID][tb.Bucket]; ok {
				e["latest_offset"], e["behind"] = l, max(l-off, 0)
			}
		}
		buckets = append(buckets, e)
	}
	sortBuckets(buckets)
	out["buckets"] = buckets
	writeJSON(w, http.StatusOK, out)
	return nil
}

// sortBuckets orders bucket entries by partition id, then bucket.
func sortBuckets(bs []map[string]any) {
	key := func(e map[string]any) (int64, int32) {
		p, _ := e["partition_id"].(int64)
		return p, e["bucket"].(int32)
	}
	slices.SortFunc(bs, func(a, b map[string]any) int {
		pa, ba := key(a)
		pb, bb := key(b)
		if c := cmp.Compare(pa, pb); c != 0 {
			return c
		}
		return cmp.Compare(ba, bb)
	})
}

// clusterStatusJSON adds the node's view to the /cluster answer: the etcd members and
// whether the node answering is the active coordinator.
func (g *Gateway) clusterStatusJSON(ctx context.Context, out map[string]any) {
	if g.opts.Status == nil {
		return
	}
	self, other := g.opts.Status.ActiveCoordinator()
	node := map[string]any{"active_coordinator": self}
	if other != "" {
		node["active_coordinator_internal_address"] = other
	}
	out["this_node"] = node
	members, err := g.opts.Status.EtcdMembers(ctx)
	if err != nil {
		out["etcd_error"] = err.Error()
		members = []server.EtcdMember{}
	}
	out["etcd_members"] = members
}
