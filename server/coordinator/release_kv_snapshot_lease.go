package coordinator

import (
	"context"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
	"github.com/stromdb/strom/server/cluster"
)

func init() {
	kvSnapshotAPIs.admin(wire.ReleaseKvSnapshotLease, 0, 0, (*kvSnapshotService).handleReleaseKvSnapshotLease)
}

// handleReleaseKvSnapshotLease makes a lease stop holding the given buckets' snapshots.
func (s *kvSnapshotService) handleReleaseKvSnapshotLease(ctx context.Context, req *wire.Request) (proto.Message, error) {
	var r flusspb.ReleaseKvSnapshotLeaseRequest
	if err := req.Decode(&r); err != nil {
		return nil, err
	}
	var buckets []cluster.Bucket
	for _, tb := range r.GetBucketsToRelease() {
		if err := s.checkKvTable(req, tb.GetTableId()); err != nil {
			return nil, err
		}
		b := cluster.Bucket{TableID: tb.GetTableId(), PartitionID: cluster.NoPartition, Bucket: tb.GetBucketId()}
		if tb.PartitionId != nil {
			b.PartitionID = tb.GetPartitionId()
		}
		buckets = append(buckets, b)
	}
	snaps := s.store()
	if snaps == nil {
		return nil, errNoSnapshotStore()
	}
	if err := snaps.Release(ctx, r.GetLeaseId(), buckets); err != nil {
		return nil, leaseError(err, "release", r.GetLeaseId())
	}
	return &flusspb.ReleaseKvSnapshotLeaseResponse{}, nil
}
