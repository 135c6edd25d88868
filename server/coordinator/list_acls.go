package coordinator

import (
	"context"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
)

func init() { aclAPIs.readOnly(wire.ListAcls, 0, 0, (*aclService).handleListAcls) }

func (s *aclService) handleListAcls(ctx context.Context, req *wire.Request) (proto.Message, error) {
	var r flusspb.ListAclsRequest
	if err := req.Decode(&r); err != nil {
		return nil, err
	}
	authz, err := s.authorizer()
	if err != nil {
		return nil, err
	}
	f, err := filterOf(r.GetAclFilter())
	if err != nil {
		return nil, err
	}
	resp := &flusspb.ListAclsResponse{}
	for _, b := range authz.List(s.access.session(req), f) {
		resp.Acl = append(resp.Acl, pbACL(b))
	}
	return resp, nil
}
