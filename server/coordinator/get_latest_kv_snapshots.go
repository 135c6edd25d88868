package coordinator

import (
	"context"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
	"github.com/stromdb/strom/server/auth"
	"github.com/stromdb/strom/server/cluster"
)

func init() {
	kvSnapshotAPIs.readOnly(wire.GetLatestKvSnapshots, 0, 0, (*kvSnapshotService).handleGetLatestKvSnapshots)
}

// handleGetLatestKvSnapshots answers, per bucket of the table (or of one of its partitions),
// the newest snapshot id and its log offset, or neither when the bucket has none (Fluss
// RpcServiceBase.getLatestKvSnapshots, same checks and codes).
func (s *kvSnapshotService) handleGetLatestKvSnapshots(ctx context.Context, req *wire.Request) (proto.Message, error) {
	var r flusspb.GetLatestKvSnapshotsRequest
	if err := req.Decode(&r); err != nil {
		return nil, err
	}
	path := tablePathOf(r.GetTablePath())
	if err := s.access.authorize(req, auth.OpDescribe, tableResource(path)); err != nil {
		return nil, err
	}
	t, err := s.catalog.table(r.GetTablePath())
	if err != nil {
		return nil, err
	}
	switch {
	case !t.HasPrimaryKey():
		return nil, ferr.New(ferr.NonPrimaryKeyTableException, "Table '%s' is not a primary key table, so it doesn't have any kv snapshots.", t.Path)
	case r.PartitionName != nil && !t.Partitioned():
		return nil, ferr.New(ferr.TableNotPartitionedException, "Table '%s' is not a partitioned table.", t.Path)
	case r.PartitionName == nil && t.Partitioned():
		return nil, ferr.New(ferr.PartitionNotExists, "Table '%s' is a partitioned table, but partition name is not provided.", t.Path)
	}
	resp := &flusspb.GetLatestKvSnapshotsResponse{TableId: proto.Int64(t.ID)}
	pid := cluster.NoPartition
	if r.PartitionName != nil {
		p, ok := s.catalog.PartitionByName(t.ID, r.GetPartitionName())
		if !ok {
			return nil, ferr.New(ferr.PartitionNotExists, "The partition '%s' of table '%s' does not exist.", r.GetPartitionName(), t.Path)
		}
		pid = p.ID
		resp.PartitionId = proto.Int64(pid)
	}
	snaps := s.store()
	for b := int32(0); b < t.NumBuckets(); b++ {
		pb := &flusspb.PbKvSnapshot{BucketId: proto.Int32(b)}
		if snaps != nil {
			if snap, ok := snaps.Latest(cluster.Bucket{TableID: t.ID, PartitionID: pid, Bucket: b}); ok {
				pb.SnapshotId, pb.LogOffset = proto.Int64(snap.ID), proto.Int64(snap.LogOffset)
			}
		}
		resp.LatestSnapshots = append(resp.LatestSnapshots, pb)
	}
	return resp, nil
}
