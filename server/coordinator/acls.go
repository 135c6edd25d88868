package coordinator

import (
	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/proto/flusspb"
	"github.com/stromdb/strom/server/auth"
)

// aclService serves CREATE_ACLS, DROP_ACLS and LIST_ACLS over the authorizer's ACLs (which
// live in the metadata store, owned by server/auth). Without an authorizer every ACL API is
// refused with SECURITY_DISABLED_EXCEPTION, as Fluss refuses them.
type aclService struct {
	access access
}

var aclAPIs apiTable[*aclService]

var errSecurityDisabled = ferr.New(ferr.SecurityDisabledException, "No Authorizer is configured.")

// authorizer returns the authorizer, or SECURITY_DISABLED_EXCEPTION without one.
func (s *aclService) authorizer() (*auth.Authorizer, error) {
	if s.access.authorizer == nil {
		return nil, errSecurityDisabled
	}
	return s.access.authorizer, nil
}

func bindingOf(a *flusspb.PbAclInfo) auth.Binding {
	return auth.Binding{
		Resource: auth.Resource{Type: auth.ResourceType(a.GetResourceType()), Name: a.GetResourceName()},
		Entry: auth.Entry{
			Principal: auth.Principal{Name: a.GetPrincipalName(), Type: a.GetPrincipalType()},
			Host:      a.GetHost(), Operation: auth.Operation(a.GetOperationType()), Permission: auth.Permission(a.GetPermissionType()),
		},
	}
}

func pbACL(b auth.Binding) *flusspb.PbAclInfo {
	return &flusspb.PbAclInfo{
		ResourceName: proto.String(b.Resource.Name), ResourceType: proto.Int32(int32(b.Resource.Type)),
		PrincipalName: proto.String(b.Entry.Principal.Name), PrincipalType: proto.String(b.Entry.Principal.Type),
		Host: proto.String(b.Entry.Host), OperationType: proto.Int32(int32(b.Entry.Operation)),
		PermissionType: proto.Int32(int32(b.Entry.Permission)),
	}
}

// filterOf converts a PbAclFilter; as in Java, the principal constrains only when both its
// name and type are given. Unknown type codes are refused as Java's enum lookups refuse them.
func filterOf(f *flusspb.PbAclFilter) (auth.Filter, error) {
	out := auth.Filter{
		ResourceType: auth.ResourceType(f.GetResourceType()), ResourceName: f.ResourceName, Host: f.Host,
		Operation: auth.Operation(f.GetOperationType()), Permission: auth.Permission(f.GetPermissionType()),
	}
	if f.PrincipalName != nil && f.PrincipalType != nil {
		out.Principal = &auth.Principal{Name: f.GetPrincipalName(), Type: f.GetPrincipalType()}
	}
	return out, checkCodes(out.ResourceType, out.Operation, out.Permission)
}

// checkCodes refuses type codes Java's enums do not know, with their messages.
func checkCodes(rt auth.ResourceType, op auth.Operation, perm auth.Permission) error {
	switch {
	case rt < auth.ResourceAny || rt > auth.ResourceTable:
		return ferr.New(ferr.UnknownServerError, "Unknown resource type code %d", rt)
	case op < auth.OpAny || op > auth.OpDescribe:
		return ferr.New(ferr.UnknownServerError, "Unknown operation type code: %d", op)
	case perm < auth.PermissionAny || perm > auth.PermissionAllow:
		return ferr.New(ferr.UnknownServerError, "Unknown permission type: %d", perm)
	}
	return nil
}
