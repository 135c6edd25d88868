package coordinator

import (
	"context"
	"slices"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
	"github.com/stromdb/strom/server/auth"
)

func init() { metadataAPIs.readOnly(wire.ListTables, 0, 0, (*metadataService).handleListTables) }

func (s *metadataService) handleListTables(ctx context.Context, req *wire.Request) (proto.Message, error) {
	var r flusspb.ListTablesRequest
	if err := req.Decode(&r); err != nil {
		return nil, err
	}
	names, err := s.catalog.TableNames(r.GetDatabaseName())
	if err != nil {
		return nil, err
	}
	names = slices.DeleteFunc(names, func(n string) bool {
		return !s.access.allowed(req, auth.OpDescribe, auth.TableResource(r.GetDatabaseName(), n))
	})
	slices.Sort(names)
	return &flusspb.ListTablesResponse{TableName: names}, nil
}
