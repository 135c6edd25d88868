package coordinator

import (
	"context"
	"slices"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
	"github.com/stromdb/strom/server/auth"
	"github.com/stromdb/strom/server/cluster"
)

func init() {
	partitionAPIs.readOnly(wire.ListPartitionInfos, 0, 0, (*partitionService).handleListPartitionInfos)
}

func (s *partitionService) handleListPartitionInfos(ctx context.Context, req *wire.Request) (proto.Message, error) {
	var r flusspb.ListPartitionInfosRequest
	path, err := s.access.decodeForTable(req, &r, auth.OpDescribe)
	if err != nil {
		return nil, err
	}
	t, err := s.partitionedTable(path)
	if err != nil {
		return nil, err
	}
	partial := specOf(r.GetPartialPartitionSpec())
	parts := s.catalog.Partitions(t.ID)
	slices.SortFunc(parts, func(a, b *cluster.PartitionInfo) int { return int(a.ID - b.ID) })
	resp := &flusspb.ListPartitionInfosResponse{}
	for _, p := range parts {
		if len(partial) > 0 {
			ok, err := metadata.MatchesPartialSpec(t.Descriptor.PartitionKeys, p.Values, partial)
			if err != nil {
				return nil, err
			}
			if !ok {
				continue
			}
		}
		spec := &flusspb.PbPartitionSpec{}
		for i, k := range t.Descriptor.PartitionKeys {
			spec.PartitionKeyValues = append(spec.PartitionKeyValues, &flusspb.PbKeyValue{Key: proto.String(k), Value: proto.String(p.Values[i])})
		}
		resp.PartitionsInfo = append(resp.PartitionsInfo, &flusspb.PbPartitionInfo{PartitionId: proto.Int64(p.ID), PartitionSpec: spec})
	}
	return resp, nil
}
