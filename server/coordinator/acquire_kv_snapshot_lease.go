package coordinator

import (
	"context"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
	"github.com/stromdb/strom/server/cluster"
	"github.com/stromdb/strom/server/kvsnap"
)

func init() {
	kvSnapshotAPIs.admin(wire.AcquireKvSnapshotLease, 0, 0, (*kvSnapshotService).handleAcquireKvSnapshotLease)
}

// handleAcquireKvSnapshotLease creates or extends a lease and makes it hold the given
// snapshots; snapshots that do not exist come back as unavailable.
func (s *kvSnapshotService) handleAcquireKvSnapshotLease(ctx context.Context, req *wire.Request) (proto.Message, error) {
	var r flusspb.AcquireKvSnapshotLeaseRequest
	if err := req.Decode(&r); err != nil {
		return nil, err
	}
	var refs []kvsnap.Ref
	for _, tl := range r.GetSnapshotsToLease() {
		if err := s.checkKvTable(req, tl.GetTableId()); err != nil {
			return nil, err
		}
		for _, bs := range tl.GetBucketSnapshots() {
			b := cluster.Bucket{TableID: tl.GetTableId(), PartitionID: cluster.NoPartition, Bucket: bs.GetBucketId()}
			if bs.PartitionId != nil {
				b.PartitionID = bs.GetPartitionId()
			}
			refs = append(refs, kvsnap.Ref{Bucket: b, ID: bs.GetSnapshotId()})
		}
	}
	snaps := s.store()
	if snaps == nil {
		return nil, errNoSnapshotStore()
	}
	unavailable, err := snaps.Acquire(ctx, r.GetLeaseId(), r.GetLeaseDurationMs(), refs)
	if err != nil {
		return nil, leaseError(err, "acquire", r.GetLeaseId())
	}
	resp := &flusspb.AcquireKvSnapshotLeaseResponse{}
	byTable := map[int64]*flusspb.PbKvSnapshotLeaseForTable{}
	for _, u := range unavailable {
		tl := byTable[u.Bucket.TableID]
		if tl == nil {
			tl = &flusspb.PbKvSnapshotLeaseForTable{TableId: proto.Int64(u.Bucket.TableID)}
			byTable[u.Bucket.TableID] = tl
			resp.UnavailableSnapshots = append(resp.UnavailableSnapshots, tl)
		}
		bs := &flusspb.PbKvSnapshotLeaseForBucket{BucketId: proto.Int32(u.Bucket.Bucket), SnapshotId: proto.Int64(u.ID)}
		if u.Bucket.PartitionID != cluster.NoPartition {
			bs.PartitionId = proto.Int64(u.Bucket.PartitionID)
		}
		tl.BucketSnapshots = append(tl.BucketSnapshots, bs)
	}
	return resp, nil
}
