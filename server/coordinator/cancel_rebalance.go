package coordinator

import (
	"context"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
	"github.com/stromdb/strom/server/auth"
)

func init() {
	membershipAPIs.admin(wire.CancelRebalance, 0, 0, (*membershipService).handleCancelRebalance)
}

func (m *membershipService) handleCancelRebalance(ctx context.Context, req *wire.Request) (proto.Message, error) {
	var r flusspb.CancelRebalanceRequest
	if err := req.Decode(&r); err != nil {
		return nil, err
	}
	if err := m.access.authorize(req, auth.OpWrite, auth.ClusterResource()); err != nil {
		return nil, err
	}
	return &flusspb.CancelRebalanceResponse{}, m.members.CancelRebalance(ctx, r.GetRebalanceId())
}
