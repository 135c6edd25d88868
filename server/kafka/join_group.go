package kafka

import (
	"context"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// JoinGroup (11): v0-v9. A new member of v4+ first gets MEMBER_ID_REQUIRED with its id; the
// answer waits until the rebalance completes (every member rejoined, or the rebalance
// timeout). Static membership (group.instance.id) is treated as dynamic.
func init() { register(11, 0, 9, handleJoinGroup) }

func handleJoinGroup(ctx context.Context, s *Server, req *request) (kmsg.Response, error) {
	r := req.msg.(*kmsg.JoinGroupRequest)
	resp := kmsg.NewPtrJoinGroupResponse()
	resp.Generation, resp.MemberID = -1, r.MemberID
	if code := s.isCoordinator(req.conn, r.Group); code != 0 {
		resp.ErrorCode = code
		return resp, nil
	}
	if r.SessionTimeoutMillis < minSessionMs || r.SessionTimeoutMillis > maxSessionMs {
		resp.ErrorCode = kerr.InvalidSessionTimeout.Code
		return resp, nil
	}
	if len(r.Protocols) == 0 || r.ProtocolType == "" {
		resp.ErrorCode = kerr.InconsistentGroupProtocol.Code
		return resp, nil
	}
	gc := s.groups
	gc.mu.Lock()
	g := gc.get(r.Group, true)
	if g.protocolType != "" && len(g.members) > 0 && g.protocolType != r.ProtocolType {
		gc.mu.Unlock()
		resp.ErrorCode = kerr.InconsistentGroupProtocol.Code
		return resp, nil
	}
	client := ""
	if req.client != nil {
		client = *req.client
	}
	id := r.MemberID
	if id == "" {
		id = newMemberID(client)
		if req.ver >= 4 {
			g.pendingIDs[id] = true
			gc.mu.Unlock()
			resp.MemberID, resp.ErrorCode = id, kerr.MemberIDRequired.Code
			return resp, nil
		}
	} else if g.members[id] == nil && !g.pendingIDs[id] {
		gc.mu.Unlock()
		resp.ErrorCode = kerr.UnknownMemberID.Code
		return resp, nil
	}
	delete(g.pendingIDs, id)
	m := g.members[id]
	if m == nil {
		m = &member{id: id}
		g.members[id] = m
	}
	host, _, _ := net.SplitHostPort(req.conn.nc.RemoteAddr().String())
	m.clientID, m.host, m.protocolType = client, host, r.ProtocolType
	m.sessionTimeout = time.Duration(r.SessionTimeoutMillis) * time.Millisecond
	m.rebalanceTimeout = time.Duration(r.RebalanceTimeoutMillis) * time.Millisecond
	if req.ver == 0 {
		m.rebalanceTimeout = m.sessionTimeout
	}
	m.protocols = m.protocols[:0]
	for _, p := range r.Protocols {
		m.protocols = append(m.protocols, protocolMeta{p.Name, p.Metadata})
	}
	m.lastSeen = time.Now()
	g.protocolType = r.ProtocolType
	if m.joinWait != nil {
		m.joinWait <- joinResult{err: kerr.RebalanceInProgress.Code}
	}
	wait := make(chan joinResult, 1)
	m.joinWait = wait
	gc.rebalance(g) // every member must (re)join, this one included
	m.joined = true
	gc.maybeComplete(g, time.Now())
	gc.mu.Unlock()

	var res joinResult
	select {
	case res = <-wait:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	resp.MemberID = id
	if res.err != 0 {
		resp.ErrorCode = res.err
		return resp, nil
	}
	resp.Generation, resp.LeaderID = res.generation, res.leader
	proto, ptype := res.protocol, r.ProtocolType
	resp.Protocol, resp.ProtocolType = &proto, &ptype
	for _, mm := range res.members {
		rm := kmsg.NewJoinGroupResponseMember()
		rm.MemberID = mm.id
		for _, p := range mm.protocols {
			if p.name == res.protocol {
				rm.ProtocolMetadata = p.metadata
			}
		}
		resp.Members = append(resp.Members, rm)
	}
	return resp, nil
}
