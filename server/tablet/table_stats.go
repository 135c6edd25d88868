package tablet

import (
	"context"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
	"github.com/stromdb/strom/server/cluster"
)

// GET_TABLE_STATS (1059): version 0 only.
func init() {
	bucketInfoAPIs.register(wire.GetTableStats, 0, 0, (*bucketInfoService).handleGetTableStats)
}

// handleGetTableStats answers the row count of each requested bucket as a Fluss tablet server
// does: the live keys of a primary-key bucket, the records between log start and high
// watermark of a log bucket. Primary-key tables with the WAL changelog image have no row
// count in Fluss (INVALID_TABLE_EXCEPTION per bucket), and Strom answers the same.
func (s *bucketInfoService) handleGetTableStats(ctx context.Context, req *wire.Request) (proto.Message, error) {
	var r flusspb.GetTableStatsRequest
	if err := req.Decode(&r); err != nil {
		return nil, err
	}
	resp := &flusspb.GetTableStatsResponse{BucketsResp: make([]*flusspb.PbTableStatsRespForBucket, 0, len(r.BucketsReq))}
	for _, br := range r.BucketsReq {
		out := &flusspb.PbTableStatsRespForBucket{BucketId: proto.Int32(br.GetBucketId()), PartitionId: br.PartitionId}
		n, err := s.rowCount(bucketOf(r.GetTableId(), br.PartitionId, br.GetBucketId()))
		if err != nil {
			setBucketError(&out.ErrorCode, &out.ErrorMessage, err)
		} else {
			out.RowCount = proto.Int64(n)
		}
		resp.BucketsResp = append(resp.BucketsResp, out)
	}
	return resp, nil
}

func (s *bucketInfoService) rowCount(b cluster.Bucket) (int64, error) {
	rep, err := s.replica(b)
	if err != nil {
		return 0, err
	}
	if rep.KV == nil {
		return rep.Log.HighWatermark() - s.logStart(rep), nil // from the remote log start, as Fluss's LogTablet.getRowCount
	}
	if rep.Table.Descriptor.Properties.ChangelogImage() == metadata.ChangelogWAL {
		return 0, ferr.New(ferr.InvalidTableException,
			"Row count is disabled for this table '%s'. This usually happens when the table is created before v0.9 or the changelog image is set to WAL, "+
				"as maintaining row count in WAL mode is costly and not necessary for most use cases. If you want to enable row count, please set changelog image to FULL.",
			rep.Table.Path)
	}
	return rep.KV.RowCount()
}
