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
	metadataAPIs.readOnly(wire.GetTableSchema, 0, 0, (*metadataService).handleGetTableSchema)
}

func (s *metadataService) handleGetTableSchema(ctx context.Context, req *wire.Request) (proto.Message, error) {
	var r flusspb.GetTableSchemaRequest
	t, err := s.access.decodeForTableInfo(req, s.catalog, &r, auth.OpDescribe)
	if err != nil {
		return nil, err
	}
	id := t.SchemaID
	if r.SchemaId != nil {
		id = r.GetSchemaId()
	}
	sv, ok := s.catalog.schemaVersion(t.ID, id)
	if !ok {
		return nil, ferr.New(ferr.SchemaNotExist, "Schema %d of table %s does not exist.", id, t.Path)
	}
	return &flusspb.GetTableSchemaResponse{SchemaId: proto.Int32(id), SchemaJson: sv.json}, nil
}
