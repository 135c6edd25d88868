package coordinator

import (
	"context"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
)

func init() {
	membershipAPIs.admin(wire.RemoveServerTag, 0, 0, (*membershipService).handleRemoveServerTag)
}

func (m *membershipService) handleRemoveServerTag(ctx context.Context, req *wire.Request) (proto.Message, error) {
	var r flusspb.RemoveServerTagRequest
	tag, err := m.decodeServerTag(req, &r)
	if err != nil {
		return nil, err
	}
	return &flusspb.RemoveServerTagResponse{}, m.members.RemoveServerTag(ctx, r.GetServerIds(), tag)
}
