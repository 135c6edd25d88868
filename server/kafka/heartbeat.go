package kafka

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Heartbeat (12): v0-v4. REBALANCE_IN_PROGRESS tells a member to rejoin.
func init() { register(12, 0, 4, handleHeartbeat) }

func handleHeartbeat(_ context.Context, s *Server, req *request) (kmsg.Response, error) {
	r := req.msg.(*kmsg.HeartbeatRequest)
	resp := kmsg.NewPtrHeartbeatResponse()
	if code := s.isCoordinator(req.conn, r.Group); code != 0 {
		resp.ErrorCode = code
		return resp, nil
	}
	gc := s.groups
	gc.mu.Lock()
	defer gc.mu.Unlock()
	g, m := gc.member(r.Group, r.MemberID)
	switch {
	case m == nil:
		resp.ErrorCode = kerr.UnknownMemberID.Code
	case g.state == stPreparing:
		m.lastSeen = time.Now()
		resp.ErrorCode = kerr.RebalanceInProgress.Code
	case r.Generation != g.generation:
		resp.ErrorCode = kerr.IllegalGeneration.Code
	default:
		m.lastSeen = time.Now()
	}
	return resp, nil
}
