package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// SyncGroup (14): v0-v5. The leader's assignments are handed to every member; a follower's
// answer waits for the leader's SyncGroup.
func init() { register(14, 0, 5, handleSyncGroup) }

func handleSyncGroup(ctx context.Context, s *Server, req *request) (kmsg.Response, error) {
	r := req.msg.(*kmsg.SyncGroupRequest)
	resp := kmsg.NewPtrSyncGroupResponse()
	if code := s.isCoordinator(req.conn, r.Group); code != 0 {
		resp.ErrorCode = code
		return resp, nil
	}
	gc := s.groups
	gc.mu.Lock()
	g, m := gc.member(r.Group, r.MemberID)
	switch {
	case m == nil:
		resp.ErrorCode = kerr.UnknownMemberID.Code
	case r.Generation != g.generation:
		resp.ErrorCode = kerr.IllegalGeneration.Code
	case g.state == stPreparing:
		resp.ErrorCode = kerr.RebalanceInProgress.Code
	case g.state == stStable:
		resp.MemberAssignment = m.assignment
	}
	if resp.ErrorCode != 0 || g.state == stStable {
		gc.mu.Unlock()
		return resp, nil
	}
	if r.MemberID == g.leader {
		for _, a := range r.GroupAssignment {
			if mm := g.members[a.MemberID]; mm != nil {
				mm.assignment = a.MemberAssignment
			}
		}
		g.state = stStable
		for _, mm := range g.members {
			if mm.syncWait != nil {
				mm.syncWait <- syncResult{assignment: mm.assignment}
				mm.syncWait = nil
			}
		}
		resp.MemberAssignment = m.assignment
		gc.mu.Unlock()
		return resp, nil
	}
	wait := make(chan syncResult, 1)
	m.syncWait = wait
	gc.mu.Unlock()
	select {
	case res := <-wait:
		resp.ErrorCode, resp.MemberAssignment = res.err, res.assignment
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if req.ver >= 5 {
		resp.ProtocolType, resp.Protocol = r.ProtocolType, r.Protocol
	}
	return resp, nil
}
