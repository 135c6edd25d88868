package coordinator

import (
	"context"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/proto/flusspb"
	"github.com/stromdb/strom/server/auth"
)

func TestACLServiceWithoutAuthorizerRefusesEveryACLAPI(t *testing.T) {
	ctx := context.Background()
	s := &aclService{}
	_, err := s.handleCreateAcls(ctx, request(t, &flusspb.CreateAclsRequest{}))
	wantCode(t, err, ferr.SecurityDisabledException, "CREATE_ACLS")
	_, err = s.handleDropAcls(ctx, request(t, &flusspb.DropAclsRequest{}))
	wantCode(t, err, ferr.SecurityDisabledException, "DROP_ACLS")
	_, err = s.handleListAcls(ctx, request(t, &flusspb.ListAclsRequest{AclFilter: &flusspb.PbAclFilter{
		ResourceType: proto.Int32(0), OperationType: proto.Int32(0), PermissionType: proto.Int32(0)}}))
	wantCode(t, err, ferr.SecurityDisabledException, "LIST_ACLS")
}

// ACL messages convert both ways without loss, and type codes Java's enums do not know are
// refused as Java refuses them.
func TestACLConversions(t *testing.T) {
	b := auth.Binding{Resource: auth.Resource{Type: auth.ResourceTable, Name: "fluss.t"},
		Entry: auth.Entry{Principal: auth.Principal{Name: "bob", Type: "User"}, Host: "*", Operation: auth.OpRead, Permission: auth.PermissionAllow}}
	if got := bindingOf(pbACL(b)); got != b {
		t.Fatalf("round trip: %+v, want %+v", got, b)
	}
	valid := func() *flusspb.PbAclFilter {
		return &flusspb.PbAclFilter{ResourceType: proto.Int32(int32(auth.ResourceAny)), OperationType: proto.Int32(int32(auth.OpAny)),
			PermissionType: proto.Int32(int32(auth.PermissionAny)), PrincipalName: proto.String("bob")}
	}
	f, err := filterOf(valid())
	if err != nil || f.Principal != nil {
		t.Fatalf("filter with a principal name but no type: %+v, %v; want no principal constraint", f, err)
	}
	for what, mutate := range map[string]func(*flusspb.PbAclFilter){
		"resource type 99": func(f *flusspb.PbAclFilter) { f.ResourceType = proto.Int32(99) },
		"operation 99":     func(f *flusspb.PbAclFilter) { f.OperationType = proto.Int32(99) },
		"permission 99":    func(f *flusspb.PbAclFilter) { f.PermissionType = proto.Int32(99) },
	} {
		pf := valid()
		mutate(pf)
		_, err := filterOf(pf)
		wantCode(t, err, ferr.UnknownServerError, what)
	}
}
