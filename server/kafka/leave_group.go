package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// LeaveGroup (13): v0-v5. The members leave at once and the group rebalances.
func init() { register(13, 0, 5, handleLeaveGroup) }

func handleLeaveGroup(_ context.Context, s *Server, req *request) (kmsg.Response, error) {
	r := req.msg.(*kmsg.LeaveGroupRequest)
	resp := kmsg.NewPtrLeaveGroupResponse()
	if code := s.isCoordinator(req.conn, r.Group); code != 0 {
		resp.ErrorCode = code
		return resp, nil
	}
	ids := []string{r.MemberID}
	if req.ver >= 3 {
		ids = nil
		for _, m := range r.Members {
			ids = append(ids, m.MemberID)
		}
	}
	gc := s.groups
	gc.mu.Lock()
	defer gc.mu.Unlock()
	g := gc.get(r.Group, false)
	for _, id := range ids {
		code := int16(0)
		if g == nil || g.members[id] == nil {
			code = kerr.UnknownMemberID.Code
		} else {
			gc.removeMember(g, id)
		}
		if req.ver >= 3 {
			m := kmsg.NewLeaveGroupResponseMember()
			m.MemberID, m.ErrorCode = id, code
			resp.Members = append(resp.Members, m)
		} else {
			resp.ErrorCode = code
		}
	}
	return resp, nil
}
