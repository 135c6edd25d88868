package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stromdb/strom/server/meta"
)

// DeleteGroups (42): v0-v2. Only a group without members can be deleted (NON_EMPTY_GROUP);
// its committed offsets are removed from the metadata store.
func init() { register(42, 0, 2, handleDeleteGroups) }

func handleDeleteGroups(ctx context.Context, s *Server, req *request) (kmsg.Response, error) {
	r := req.msg.(*kmsg.DeleteGroupsRequest)
	resp := kmsg.NewPtrDeleteGroupsResponse()
	for _, id := range r.Groups {
		out := kmsg.NewDeleteGroupsResponseGroup()
		out.Group = id
		if out.ErrorCode = s.isCoordinator(req.conn, id); out.ErrorCode != 0 {
			resp.Groups = append(resp.Groups, out)
			continue
		}
		s.groups.mu.Lock()
		g := s.groups.get(id, false)
		live := g != nil && len(g.members) > 0
		if !live {
			delete(s.groups.groups, id)
		}
		s.groups.mu.Unlock()
		if live {
			out.ErrorCode = kerr.NonEmptyGroup.Code
			resp.Groups = append(resp.Groups, out)
			continue
		}
		s.commitMu.Lock()
		_, ok, err := s.loadCommitted(ctx, id)
		if err == nil && ok {
			_, err = s.opts.Store.Txn(ctx, nil, []meta.Op{meta.Delete(groupStateKey(id))})
		}
		s.commitMu.Unlock()
		switch {
		case err != nil:
			out.ErrorCode = errCode(err)
		case !ok && g == nil:
			out.ErrorCode = kerr.GroupIDNotFound.Code
		}
		resp.Groups = append(resp.Groups, out)
	}
	return resp, nil
}
