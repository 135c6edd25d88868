package coordinator

import (
	"context"
	"errors"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
	"github.com/stromdb/strom/server/auth"
	"github.com/stromdb/strom/server/cluster"
	"github.com/stromdb/strom/server/lakeconf"
)

func init() { lakeAPIs.readOnly(wire.GetLakeSnapshot, 0, 0, (*lakeService).handleGetLakeSnapshot) }

// handleGetLakeSnapshot answers with the table's tiering snapshot as Iceberg holds it: the
// snapshot id and every tiered bucket's log end offset (Fluss RpcServiceBase.getLakeSnapshot).
// Every Strom tiering commit is readable once committed, so readable=true returns the latest.
func (l *lakeService) handleGetLakeSnapshot(ctx context.Context, req *wire.Request) (proto.Message, error) {
	var r flusspb.GetLakeSnapshotRequest
	t, err := l.access.decodeForTableInfo(req, l.catalog, &r, auth.OpDescribe)
	if err != nil {
		return nil, err
	}
	if r.GetReadable() && r.SnapshotId != nil {
		return nil, ferr.New(ferr.UnknownServerError, "GetLakeSnapshotRequest cannot set both snapshot_id and readable=true; use one or the other to specify either a snapshot by id or the latest readable snapshot.")
	}
	kind := "snapshot"
	if r.GetReadable() {
		kind = "readable snapshot"
	}
	notExist := func() error {
		if r.SnapshotId != nil {
			return ferr.New(ferr.LakeSnapshotNotExist, "Lake table %s doesn't exist for table: %s, table id: %d, snapshot id: %d", kind, t.Path, t.ID, r.GetSnapshotId())
		}
		return ferr.New(ferr.LakeSnapshotNotExist, "Lake table %s doesn't exist for table: %s, table id: %d", kind, t.Path, t.ID)
	}
	lp := l.lake.Load()
	if lp == nil || !t.Descriptor.Properties.DataLakeEnabled() {
		return nil, notExist()
	}
	s, err := (*lp).Snapshot(ctx, t, r.SnapshotId)
	if errors.Is(err, lakeconf.ErrNoSnapshot) {
		return nil, notExist()
	}
	if err != nil {
		return nil, ferr.New(ferr.UnknownServerError, "Failed to get lake table snapshot for table: %s, table id: %d: %v", t.Path, t.ID, err)
	}
	resp := &flusspb.GetLakeSnapshotResponse{TableId: proto.Int64(t.ID), SnapshotId: proto.Int64(s.SnapshotID)}
	for k, off := range s.Offsets {
		b := &flusspb.PbLakeSnapshotForBucket{BucketId: proto.Int32(k.Bucket), LogOffset: proto.Int64(off)}
		if k.PartitionID != cluster.NoPartition {
			b.PartitionId = proto.Int64(k.PartitionID)
		}
		resp.BucketSnapshots = append(resp.BucketSnapshots, b)
	}
	return resp, nil
}
