package kafka

import (
	"context"
	"net/url"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ListGroups (16): v0-v4. The groups this broker coordinates: live ones and those with
// committed offsets; StatesFilter (v4) is applied.
func init() { register(16, 0, 4, handleListGroups) }

func handleListGroups(ctx context.Context, s *Server, req *request) (kmsg.Response, error) {
	r := req.msg.(*kmsg.ListGroupsRequest)
	resp := kmsg.NewPtrListGroupsResponse()
	seen := map[string]kmsg.ListGroupsResponseGroup{}
	kvs, err := s.opts.Store.List(ctx, groupPrefix)
	if err != nil {
		resp.ErrorCode = errCode(err)
		return resp, nil
	}
	for _, kv := range kvs {
		id, err := url.PathUnescape(strings.TrimPrefix(kv.Key, groupPrefix))
		if err != nil || s.isCoordinator(req.conn, id) != 0 {
			continue
		}
		g := kmsg.NewListGroupsResponseGroup()
		g.Group, g.ProtocolType, g.GroupState = id, "consumer", stEmpty
		seen[id] = g
	}
	s.groups.mu.Lock()
	for id, gr := range s.groups.groups {
		if len(gr.members) == 0 {
			continue
		}
		g := kmsg.NewListGroupsResponseGroup()
		g.Group, g.ProtocolType, g.GroupState = id, gr.protocolType, gr.state
		seen[id] = g
	}
	s.groups.mu.Unlock()
	for _, g := range seen {
		if len(r.StatesFilter) > 0 && !containsFold(r.StatesFilter, g.GroupState) {
			continue
		}
		resp.Groups = append(resp.Groups, g)
	}
	return resp, nil
}

func containsFold(list []string, s string) bool {
	for _, x := range list {
		if strings.EqualFold(x, s) {
			return true
		}
	}
	return false
}
