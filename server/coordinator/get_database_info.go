package coordinator

import (
	"context"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
	"github.com/stromdb/strom/server/auth"
)

func init() {
	metadataAPIs.readOnly(wire.GetDatabaseInfo, 0, 0, (*metadataService).handleGetDatabaseInfo)
}

func (s *metadataService) handleGetDatabaseInfo(ctx context.Context, req *wire.Request) (proto.Message, error) {
	var r flusspb.GetDatabaseInfoRequest
	if err := req.Decode(&r); err != nil {
		return nil, err
	}
	if err := s.access.authorize(req, auth.OpDescribe, auth.DatabaseResource(r.GetDatabaseName())); err != nil {
		return nil, err
	}
	d, ok := s.catalog.Database(r.GetDatabaseName())
	if !ok {
		return nil, ferr.New(ferr.DatabaseNotExist, "Database %s does not exist.", r.GetDatabaseName())
	}
	return &flusspb.GetDatabaseInfoResponse{DatabaseJson: d.JSON, CreatedTime: proto.Int64(d.CreatedMs), ModifiedTime: proto.Int64(d.ModifiedMs)}, nil
}
