package coordinator

import (
	"context"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
	"github.com/stromdb/strom/server/auth"
)

func init() { aclAPIs.admin(wire.CreateAcls, 0, 0, (*aclService).handleCreateAcls) }

func (s *aclService) handleCreateAcls(ctx context.Context, req *wire.Request) (proto.Message, error) {
	var r flusspb.CreateAclsRequest
	if err := req.Decode(&r); err != nil {
		return nil, err
	}
	authz, err := s.authorizer()
	if err != nil {
		return nil, err
	}
	bs := make([]auth.Binding, len(r.GetAcl()))
	for i, a := range r.GetAcl() {
		bs[i] = bindingOf(a)
		// Java fails the whole request on a code its enums do not know; a binding without
		// a resource name, principal or host fails alone (auth.Binding.Validate).
		if err := checkCodes(bs[i].Resource.Type, bs[i].Entry.Operation, bs[i].Entry.Permission); err != nil {
			return nil, err
		}
	}
	results, err := authz.Add(ctx, s.access.session(req), bs)
	if err != nil {
		return nil, err
	}
	resp := &flusspb.CreateAclsResponse{}
	for i, a := range r.GetAcl() {
		info := &flusspb.PbCreateAclRespInfo{Acl: a, ErrorCode: proto.Int32(0)}
		if results[i] != nil {
			setError(&info.ErrorCode, &info.ErrorMessage, results[i])
		}
		resp.AclRes = append(resp.AclRes, info)
	}
	return resp, nil
}
