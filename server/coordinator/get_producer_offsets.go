package coordinator

import (
	"context"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
	"github.com/stromdb/strom/server/auth"
	"github.com/stromdb/strom/server/cluster"
)

func init() {
	producerOffsetAPIs.admin(wire.GetProducerOffsets, 0, 0, (*producerOffsets).handleGetProducerOffsets)
}

// handleGetProducerOffsets returns a producer's offsets, leaving out tables the session may
// not READ; an unknown or expired producer gets an empty response.
func (s *producerOffsets) handleGetProducerOffsets(ctx context.Context, req *wire.Request) (proto.Message, error) {
	var r flusspb.GetProducerOffsetsRequest
	if err := req.Decode(&r); err != nil {
		return nil, err
	}
	if err := validateProducerID(r.GetProducerId()); err != nil {
		return nil, err
	}
	s.mu.Lock()
	rec, ok, err := s.readProducer(ctx, r.GetProducerId())
	s.mu.Unlock()
	if err != nil || !ok {
		return &flusspb.GetProducerOffsetsResponse{}, err
	}
	resp := &flusspb.GetProducerOffsetsResponse{ProducerId: proto.String(r.GetProducerId()), ExpirationTime: proto.Int64(rec.ExpirationMs)}
	for _, tid := range rec.tableIDs() {
		if s.access.authorizeTableID(req, s.tables, auth.OpRead, tid) != nil {
			continue
		}
		to := &flusspb.PbProducerTableOffsets{TableId: proto.Int64(tid)}
		for _, o := range rec.Offsets {
			if o.TableID != tid {
				continue
			}
			bo := &flusspb.PbBucketOffset{BucketId: proto.Int32(o.Bucket), LogEndOffset: proto.Int64(o.Offset)}
			if o.PartitionID != cluster.NoPartition {
				bo.PartitionId = proto.Int64(o.PartitionID)
			}
			to.BucketOffsets = append(to.BucketOffsets, bo)
		}
		resp.TableOffsets = append(resp.TableOffsets, to)
	}
	return resp, nil
}
