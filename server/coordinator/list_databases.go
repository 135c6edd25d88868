package coordinator

import (
	"context"
	"slices"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
	"github.com/stromdb/strom/server/auth"
)

func init() { metadataAPIs.readOnly(wire.ListDatabases, 0, 0, (*metadataService).handleListDatabases) }

func (s *metadataService) handleListDatabases(ctx context.Context, req *wire.Request) (proto.Message, error) {
	var r flusspb.ListDatabasesRequest
	if err := req.Decode(&r); err != nil {
		return nil, err
	}
	names := slices.DeleteFunc(s.catalog.DatabaseNames(), func(n string) bool {
		return !s.access.allowed(req, auth.OpDescribe, auth.DatabaseResource(n))
	})
	slices.Sort(names)
	resp := &flusspb.ListDatabasesResponse{}
	if !r.GetIncludeSummary() {
		resp.DatabaseName = names
		return resp, nil
	}
	for _, n := range names {
		d, ok := s.catalog.Database(n)
		if !ok {
			continue
		}
		tables, _ := s.catalog.TableNames(n)
		resp.DatabaseSummary = append(resp.DatabaseSummary, &flusspb.PbDatabaseSummary{
			DatabaseName: proto.String(n), CreatedTime: proto.Int64(d.CreatedMs), TableCount: proto.Int32(int32(len(tables))),
		})
	}
	return resp, nil
}
