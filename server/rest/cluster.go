package rest

import (
	"context"
	"net/http"
	"sort"

	"github.com/stromdb/strom/fluss"
)

// getCluster answers the servers as metadata lists them (the coordinator first: the active
// one, which is the only one metadata names) and GET_CLUSTER_HEALTH.
func (g *Gateway) getCluster(ctx context.Context, c *fluss.Connection, w http.ResponseWriter, r *http.Request) error {
	admin := c.Admin()
	nodes, err := admin.GetServerNodes(ctx)
	if err != nil {
		return err
	}
	h, err := admin.GetClusterHealth(ctx)
	if err != nil {
		return err
	}
	servers := make([]map[string]any, len(nodes))
	active := int32(-1)
	for i, n := range nodes {
		servers[i] = map[string]any{"id": n.ID, "type": string(n.Type), "host": n.Host, "port": n.Port, "address": n.Addr()}
		if n.Type == fluss.CoordinatorServer && active < 0 {
			active = n.ID
		}
	}
	out := map[string]any{
		"servers": servers, "active_coordinator": active,
		"health": map[string]any{
			"status": h.Status.String(), "replicas": h.Replicas, "in_sync_replicas": h.InSyncReplicas,
			"buckets": h.LeaderReplicas, "buckets_with_leader": h.ActiveLeaderReplicas,
			"under_replicated": h.UnderReplicated(), "offline_buckets": h.OfflineBuckets(),
		},
	}
	g.clusterStatusJSON(ctx, out)
	writeJSON(w, http.StatusOK, out)
	return nil
}

// listOffsets is ListOffsets or ListPartitionOffsets, by whether partition is set.
func listOffsets(ctx context.Context, a *fluss.Admin, path fluss.TablePath, partition string, buckets []int32, spec fluss.OffsetSpec) (map[int32]int64, error) {
	if partition == "" {
		return a.ListOffsets(ctx, path, buckets, spec)
	}
	return a.ListPartitionOffsets(ctx, path, partition, buckets, spec)
}

// getBuckets answers, per bucket of a table (or of one partition, ?partition=NAME), its
// leader and replica set (tablet server ids), its earliest and latest offsets and its row
// count; with a StatusSource also the ISR, the leader epoch and each follower's lag.
func (g *Gateway) getBuckets(ctx context.Context, c *fluss.Connection, w http.ResponseWriter, r *http.Request) error {
	path, partition := tablePath(r), r.URL.Query().Get("partition")
	admin := c.Admin()
	info, err := admin.GetTableInfo(ctx, path)
	if err != nil {
		return err
	}
	if info.IsPartitioned() && partition == "" {
		return badRequest(fluss.ErrInvalidPartitionSpec, "the table is partitioned: name one with ?partition= (see .../partitions)")
	}
	leaders, err := admin.BucketLeaders(ctx, path, partition)
	if err != nil {
		return err
	}
	buckets := make([]int32, info.NumBuckets())
	for i := range buckets {
		buckets[i] = int32(i)
	}
	earliest, err := listOffsets(ctx, admin, path, partition, buckets, fluss.OffsetEarliest())
	if err != nil {
		return err
	}
	latest, err := listOffsets(ctx, admin, path, partition, buckets, fluss.OffsetLatest())
	if err != nil {
		return err
	}
	rows, err := admin.GetTableStats(ctx, path, partition)
	if err != nil {
		return err
	}
	replicas, err := admin.BucketReplicas(ctx, path, partition)
	if err != nil {
		return err
	}
	out := make([]map[string]any, 0, len(buckets))
	for _, b := range buckets {
		reps := replicas[b]
		if reps == nil {
			reps = []int32{}
		}
		e := map[string]any{"bucket": b, "earliest_offset": earliest[b], "latest_offset": latest[b], "rows": rows[b], "leader": nil, "replicas": reps}
		if n, ok := leaders[b]; ok {
			e["leader"] = map[string]any{"id": n.ID, "address": n.Addr()}
		}
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i]["bucket"].(int32) < out[j]["bucket"].(int32) })
	if err := g.replicationJSON(ctx, c, info, partition, out); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"table_id": info.TableID, "partition": partition, "buckets": out})
	return nil
}

// getOffsets answers ListOffsets: ?spec=earliest|latest|timestamp (with &timestamp=MS).
func (g *Gateway) getOffsets(ctx context.Context, c *fluss.Connection, w http.ResponseWriter, r *http.Request) error {
	path, partition := tablePath(r), r.URL.Query().Get("partition")
	var spec fluss.OffsetSpec
	switch s := r.URL.Query().Get("spec"); s {
	case "", "latest":
		spec = fluss.OffsetLatest()
	case "earliest":
		spec = fluss.OffsetEarliest()
	case "timestamp":
		ts, err := intParam(r, "timestamp", -1, 0, 1<<62)
		if err != nil {
			return err
		}
		if ts < 0 {
			return badRequest(fluss.ErrInvalidTimestamp, "spec=timestamp needs &timestamp=EPOCH_MS")
		}
		spec = fluss.OffsetAtTimestamp(ts)
	default:
		return badRequest(fluss.ErrInvalidConfig, "spec="+s+": want earliest, latest or timestamp")
	}
	info, err := c.Admin().GetTableInfo(ctx, path)
	if err != nil {
		return err
	}
	if info.IsPartitioned() && partition == "" {
		return badRequest(fluss.ErrInvalidPartitionSpec, "the table is partitioned: name one with ?partition=")
	}
	buckets := make([]int32, info.NumBuckets())
	for i := range buckets {
		buckets[i] = int32(i)
	}
	offs, err := listOffsets(ctx, c.Admin(), path, partition, buckets, spec)
	if err != nil {
		return err
	}
	out := make([]map[string]any, len(buckets))
	for i, b := range buckets {
		out[i] = map[string]any{"bucket": b, "offset": offs[b]}
	}
	writeJSON(w, http.StatusOK, map[string]any{"partition": partition, "buckets": out})
	return nil
}
