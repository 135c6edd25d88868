package coordinator

import (
	"context"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
	"github.com/stromdb/strom/server/auth"
)

func init() {
	healthAPIs.readOnly(wire.GetClusterHealth, 0, 0, (*healthService).handleGetClusterHealth)
}

func (h *healthService) handleGetClusterHealth(ctx context.Context, req *wire.Request) (proto.Message, error) {
	var r flusspb.GetClusterHealthRequest
	if err := req.Decode(&r); err != nil {
		return nil, err
	}
	if err := h.access.authorize(req, auth.OpDescribe, auth.ClusterResource()); err != nil {
		return nil, err
	}
	return h.clusterHealth(), nil
}
