package coordinator

import (
	"context"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
	"github.com/stromdb/strom/server/auth"
)

func init() {
	metadataAPIs.readOnly(wire.DatabaseExists, 0, 0, (*metadataService).handleDatabaseExists)
}

func (s *metadataService) handleDatabaseExists(ctx context.Context, req *wire.Request) (proto.Message, error) {
	var r flusspb.DatabaseExistsRequest
	if err := req.Decode(&r); err != nil {
		return nil, err
	}
	// As in Fluss, the default database is exempt: Flink's catalog checks it when it opens.
	if r.GetDatabaseName() != DefaultDatabase && !s.access.allowed(req, auth.OpDescribe, auth.DatabaseResource(r.GetDatabaseName())) {
		return &flusspb.DatabaseExistsResponse{Exists: proto.Bool(false)}, nil
	}
	_, ok := s.catalog.Database(r.GetDatabaseName())
	return &flusspb.DatabaseExistsResponse{Exists: proto.Bool(ok)}, nil
}
