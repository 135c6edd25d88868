package coordinator

import (
	"context"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
	"github.com/stromdb/strom/server/auth"
)

func init() { aclAPIs.admin(wire.DropAcls, 0, 0, (*aclService).handleDropAcls) }

func (s *aclService) handleDropAcls(ctx context.Context, req *wire.Request) (proto.Message, error) {
	var r flusspb.DropAclsRequest
	if err := req.Decode(&r); err != nil {
		return nil, err
	}
	authz, err := s.authorizer()
	if err != nil {
		return nil, err
	}
	filters := make([]auth.Filter, len(r.GetAclFilter()))
	for i, f := range r.GetAclFilter() {
		if filters[i], err = filterOf(f); err != nil {
			return nil, err
		}
	}
	dropped, err := authz.Drop(ctx, s.access.session(req), filters)
	if err != nil {
		return nil, err
	}
	resp := &flusspb.DropAclsResponse{}
	for _, bs := range dropped {
		fr := &flusspb.PbDropAclsFilterResult{}
		for _, b := range bs {
			fr.MatchingAcls = append(fr.MatchingAcls, &flusspb.PbDropAclsMatchingAcl{Acl: pbACL(b)})
		}
		resp.FilterResults = append(resp.FilterResults, fr)
	}
	return resp, nil
}
