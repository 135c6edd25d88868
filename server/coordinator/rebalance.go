package coordinator

import (
	"context"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
	"github.com/stromdb/strom/server/auth"
	"github.com/stromdb/strom/server/control"
)

func init() { membershipAPIs.admin(wire.Rebalance, 0, 0, (*membershipService).handleRebalance) }

func (m *membershipService) handleRebalance(ctx context.Context, req *wire.Request) (proto.Message, error) {
	var r flusspb.RebalanceRequest
	if err := req.Decode(&r); err != nil {
		return nil, err
	}
	if err := m.access.authorize(req, auth.OpWrite, auth.ClusterResource()); err != nil {
		return nil, err
	}
	goals := make([]control.Goal, 0, len(r.GetGoals()))
	for _, g := range r.GetGoals() {
		if !control.ValidGoal(g) {
			return nil, ferr.New(ferr.UnknownServerError, "Value %d must be one of [REPLICA_DISTRIBUTION(0), LEADER_DISTRIBUTION(1), RACK_AWARE(2)]", g)
		}
		goals = append(goals, control.Goal(g))
	}
	id, err := m.members.StartRebalance(ctx, goals)
	if err != nil {
		return nil, err
	}
	return &flusspb.RebalanceResponse{RebalanceId: proto.String(id)}, nil
}
