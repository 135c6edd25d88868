package coordinator

import (
	"context"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
	"github.com/stromdb/strom/server/auth"
)

func init() { metadataAPIs.readOnly(wire.GetTableInfo, 0, 0, (*metadataService).handleGetTableInfo) }

func (s *metadataService) handleGetTableInfo(ctx context.Context, req *wire.Request) (proto.Message, error) {
	var r flusspb.GetTableInfoRequest
	t, err := s.access.decodeForTableInfo(req, s.catalog, &r, auth.OpDescribe)
	if err != nil {
		return nil, err
	}
	return &flusspb.GetTableInfoResponse{
		TableId: proto.Int64(t.ID), SchemaId: proto.Int32(t.SchemaID), TableJson: s.servedTableJSON(t),
		CreatedTime: proto.Int64(t.CreatedMs), ModifiedTime: proto.Int64(t.ModifiedMs),
	}, nil
}
