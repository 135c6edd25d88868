package coordinator

import (
	"context"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
	"github.com/stromdb/strom/server/auth"
)

func init() { metadataAPIs.readOnly(wire.TableExists, 0, 0, (*metadataService).handleTableExists) }

func (s *metadataService) handleTableExists(ctx context.Context, req *wire.Request) (proto.Message, error) {
	var r flusspb.TableExistsRequest
	if err := req.Decode(&r); err != nil {
		return nil, err
	}
	path := tablePathOf(r.GetTablePath())
	if !s.access.allowed(req, auth.OpDescribe, tableResource(path)) {
		return &flusspb.TableExistsResponse{Exists: proto.Bool(false)}, nil
	}
	_, ok := s.catalog.TableByPath(path)
	return &flusspb.TableExistsResponse{Exists: proto.Bool(ok)}, nil
}
