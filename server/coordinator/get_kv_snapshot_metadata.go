package coordinator

import (
	"context"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
	"github.com/stromdb/strom/server/auth"
	"github.com/stromdb/strom/server/cluster"
	"github.com/stromdb/strom/server/kvsnap"
)

func init() {
	kvSnapshotAPIs.readOnly(wire.GetKvSnapshotMetadata, 0, 0, (*kvSnapshotService).handleGetKvSnapshotMetadata)
}

// handleGetKvSnapshotMetadata answers a snapshot's log offset and files: file:// URLs of the
// remote directory and the names they take in the reader's RocksDB directory.
func (s *kvSnapshotService) handleGetKvSnapshotMetadata(ctx context.Context, req *wire.Request) (proto.Message, error) {
	var r flusspb.GetKvSnapshotMetadataRequest
	if err := req.Decode(&r); err != nil {
		return nil, err
	}
	if err := s.access.authorizeTableID(req, s.catalog, auth.OpDescribe, r.GetTableId()); err != nil {
		return nil, err
	}
	b := cluster.Bucket{TableID: r.GetTableId(), PartitionID: cluster.NoPartition, Bucket: r.GetBucketId()}
	if r.PartitionId != nil {
		b.PartitionID = r.GetPartitionId()
	}
	var snap *kvsnap.Snapshot
	snaps := s.store()
	if snaps != nil {
		snap, _ = snaps.Get(b, r.GetSnapshotId())
	}
	if snap == nil {
		return nil, ferr.New(ferr.KvSnapshotNotExist, "Failed to get kv snapshot metadata for table bucket %s and snapshot id %d. Error: Kv snapshot not found",
			javaBucket(b), r.GetSnapshotId())
	}
	resp := &flusspb.GetKvSnapshotMetadataResponse{LogOffset: proto.Int64(snap.LogOffset)}
	for _, f := range snaps.Files(b, snap) {
		resp.SnapshotFiles = append(resp.SnapshotFiles, &flusspb.PbRemotePathAndLocalFile{
			RemotePath: proto.String(f.RemotePath), LocalFileName: proto.String(f.LocalFileName)})
	}
	return resp, nil
}
