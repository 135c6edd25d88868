package coordinator

import (
	"context"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
)

func init() { membershipAPIs.admin(wire.AddServerTag, 0, 0, (*membershipService).handleAddServerTag) }

func (m *membershipService) handleAddServerTag(ctx context.Context, req *wire.Request) (proto.Message, error) {
	var r flusspb.AddServerTagRequest
	tag, err := m.decodeServerTag(req, &r)
	if err != nil {
		return nil, err
	}
	return &flusspb.AddServerTagResponse{}, m.members.AddServerTag(ctx, r.GetServerIds(), tag)
}
