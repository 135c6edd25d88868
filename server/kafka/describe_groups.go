package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// DescribeGroups (15): v0-v5. A group known only by its committed offsets is Empty; one
// neither live nor stored is Dead, as Kafka answers.
func init() { register(15, 0, 5, handleDescribeGroups) }

func handleDescribeGroups(ctx context.Context, s *Server, req *request) (kmsg.Response, error) {
	r := req.msg.(*kmsg.DescribeGroupsRequest)
	resp := kmsg.NewPtrDescribeGroupsResponse()
	for _, id := range r.Groups {
		out := kmsg.NewDescribeGroupsResponseGroup()
		out.Group = id
		if code := s.isCoordinator(req.conn, id); code != 0 {
			out.ErrorCode = code
			resp.Groups = append(resp.Groups, out)
			continue
		}
		gc := s.groups
		gc.mu.Lock()
		g := gc.get(id, false)
		if g != nil && len(g.members) > 0 {
			out.State, out.ProtocolType, out.Protocol = g.state, g.protocolType, g.protocol
			for _, m := range g.members {
				dm := kmsg.NewDescribeGroupsResponseGroupMember()
				dm.MemberID, dm.ClientID, dm.ClientHost, dm.MemberAssignment = m.id, m.clientID, m.host, m.assignment
				for _, p := range m.protocols {
					if p.name == g.protocol {
						dm.ProtocolMetadata = p.metadata
					}
				}
				out.Members = append(out.Members, dm)
			}
		}
		gc.mu.Unlock()
		if out.State == "" {
			c, ok, err := s.loadCommitted(ctx, id)
			switch {
			case err != nil:
				out.ErrorCode = errCode(err)
			case ok:
				out.State, out.ProtocolType = stEmpty, c.ProtocolType
			default:
				out.State = stDead
			}
		}
		resp.Groups = append(resp.Groups, out)
	}
	return resp, nil
}
