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
	kvSnapshotAPIs.admin(wire.ListKvSnapshots, 0, 0, (*kvSnapshotService).handleListKvSnapshots)
}

// handleListKvSnapshots answers every snapshot still kept (retained or leased) per bucket
// (Fluss CoordinatorService.listKvSnapshots).
func (s *kvSnapshotService) handleListKvSnapshots(ctx context.Context, req *wire.Request) (proto.Message, error) {
	var r flusspb.ListKvSnapshotsRequest
	if err := req.Decode(&r); err != nil {
		return nil, err
	}
	if err := s.access.authorizeTableID(req, s.catalog, auth.OpDescribe, r.GetTableId()); err != nil {
		return nil, err
	}
	pid := cluster.NoPartition
	if r.PartitionId != nil {
		pid = r.GetPartitionId()
		p, ok := s.catalog.PartitionByID(pid)
		if !ok {
			return nil, ferr.New(ferr.PartitionNotExists, "Partition %d does not exist", pid)
		}
		if p.TableID != r.GetTableId() {
			return nil, ferr.New(ferr.PartitionNotExists, "Partition %d does not belong to table %d", pid, r.GetTableId())
		}
	} else if _, ok := s.catalog.TableByID(r.GetTableId()); !ok {
		return nil, ferr.New(ferr.TableNotExist, "Table %d does not exist", r.GetTableId())
	}
	resp := &flusspb.ListKvSnapshotsResponse{TableId: proto.Int64(r.GetTableId())}
	if r.PartitionId != nil {
		resp.PartitionId = proto.Int64(pid)
	}
	if snaps := s.store(); snaps != nil {
		active := snaps.Active(r.GetTableId(), pid)
		t, _ := s.catalog.TableByID(r.GetTableId())
		for b := int32(0); t != nil && b < t.NumBuckets(); b++ {
			for _, id := range active[b] {
				resp.ActiveSnapshots = append(resp.ActiveSnapshots, &flusspb.PbKvSnapshot{BucketId: proto.Int32(b), SnapshotId: proto.Int64(id)})
			}
		}
	}
	return resp, nil
}
