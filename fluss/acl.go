package fluss

import (
	"context"
	"fmt"
	"strconv"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
)

// Access control lists. A cluster whose servers run with authorizer.enabled: true authorises
// every request of a client against ACL bindings: a binding allows one principal, connecting
// from one host (or WildcardHost), one operation on one resource. Fluss has no DENY entries;
// what no binding allows is denied, with ErrAuthorization. Users listed in the servers'
// super.users may do anything, including managing ACLs. The ACL calls themselves fail with
// ErrSecurityDisabled on a cluster without an authorizer.

// ResourceType is the kind of resource an ACL binding protects. The values are Fluss's
// wire codes.
type ResourceType int8

// Resource types. ResourceAny is for filters only.
const (
	ResourceAny      ResourceType = 1 // filters: a resource of any type
	ResourceCluster  ResourceType = 2 // the cluster (named ClusterResourceName)
	ResourceDatabase ResourceType = 3 // a database, named by itself
	ResourceTable    ResourceType = 4 // a table, named "database.table"
)

var resourceTypeNames = map[ResourceType]string{ResourceAny: "ANY", ResourceCluster: "CLUSTER", ResourceDatabase: "DATABASE", ResourceTable: "TABLE"}

// String returns Fluss's name of t: ANY, CLUSTER, DATABASE or TABLE.
func (t ResourceType) String() string { return enumName(resourceTypeNames, t, "ResourceType") }

// OperationType is what an ACL binding allows. The values are Fluss's wire codes.
type OperationType int8

// Operations. OperationAny is for filters only; OperationAll in a binding allows every
// operation.
const (
	OperationAny      OperationType = 1
	OperationAll      OperationType = 2
	OperationRead     OperationType = 3 // read a table's data
	OperationWrite    OperationType = 4 // write a table's data
	OperationCreate   OperationType = 5 // create databases and tables
	OperationDrop     OperationType = 6 // drop databases, tables and partitions
	OperationAlter    OperationType = 7 // alter tables and databases, manage ACLs
	OperationDescribe OperationType = 8 // see databases, tables and their metadata
)

var operationTypeNames = map[OperationType]string{
	OperationAny: "ANY", OperationAll: "ALL", OperationRead: "READ", OperationWrite: "WRITE",
	OperationCreate: "CREATE", OperationDrop: "DROP", OperationAlter: "ALTER", OperationDescribe: "DESCRIBE",
}

// String returns Fluss's name of o, e.g. READ.
func (o OperationType) String() string { return enumName(operationTypeNames, o, "OperationType") }

// PermissionType is whether a binding allows or (in filters) any permission. Fluss has no
// DENY. The values are Fluss's wire codes.
type PermissionType int8

// Permissions. PermissionAny is for filters only.
const (
	PermissionAny   PermissionType = 1
	PermissionAllow PermissionType = 2
)

var permissionTypeNames = map[PermissionType]string{PermissionAny: "ANY", PermissionAllow: "ALLOW"}

// String returns Fluss's name of p: ANY or ALLOW.
func (p PermissionType) String() string { return enumName(permissionTypeNames, p, "PermissionType") }

func enumName[K ~int8](names map[K]string, k K, typ string) string {
	if n, ok := names[k]; ok {
		return n
	}
	return typ + "(" + strconv.Itoa(int(k)) + ")"
}

// Wildcards and fixed names of ACL bindings.
const (
	// WildcardResource as a resource name matches every resource of the binding's type.
	WildcardResource = "*"
	// WildcardHost as a binding's host matches clients connecting from any host.
	WildcardHost = "*"
	// WildcardPrincipal as a principal's name matches every principal of its type.
	WildcardPrincipal = "*"
	// ClusterResourceName is the name of the one cluster resource.
	ClusterResourceName = "fluss-cluster"
	// UserPrincipalType is the type of principals authenticated by SASL/PLAIN.
	UserPrincipalType = "User"
)

// Resource is something an ACL binding protects.
type Resource struct {
	Type ResourceType
	// Name is ClusterResourceName, a database name, "database.table", or WildcardResource.
	Name string
}

// ClusterResource returns the cluster.
func ClusterResource() Resource { return Resource{ResourceCluster, ClusterResourceName} }

// DatabaseResource returns the database named name.
func DatabaseResource(name string) Resource { return Resource{ResourceDatabase, name} }

// TableResource returns the table at path.
func TableResource(path TablePath) Resource { return Resource{ResourceTable, path.String()} }

// String returns e.g. "TABLE:db.t".
func (r Resource) String() string { return r.Type.String() + ":" + r.Name }

// Principal is an authenticated identity, such as User:alice.
type Principal struct {
	Name string
	Type string // UserPrincipalType for SASL/PLAIN users
}

// User returns the principal of the SASL/PLAIN user name.
func User(name string) Principal { return Principal{Name: name, Type: UserPrincipalType} }

// String returns "Type:Name", the form super.users lists.
func (p Principal) String() string { return p.Type + ":" + p.Name }

// AccessControlEntry is the grant half of a binding: Principal, connecting from Host, may do
// Operation.
type AccessControlEntry struct {
	Principal  Principal
	Host       string // WildcardHost for any host
	Operation  OperationType
	Permission PermissionType // PermissionAllow
}

// AclBinding allows Entry on Resource.
type AclBinding struct {
	Resource Resource
	Entry    AccessControlEntry
}

// NewAclBinding returns the binding that allows principal op on r from any host.
func NewAclBinding(r Resource, principal Principal, op OperationType) AclBinding {
	return AclBinding{Resource: r, Entry: AccessControlEntry{Principal: principal, Host: WildcardHost, Operation: op, Permission: PermissionAllow}}
}

// String returns a readable form of b.
func (b AclBinding) String() string {
	return fmt.Sprintf("AclBinding{%v, %v from %s: %v %v}", b.Resource, b.Entry.Principal, b.Entry.Host, b.Entry.Permission, b.Entry.Operation)
}

// AclBindingFilter selects bindings, as Fluss's filter does. Its zero value matches every
// binding: a zero ResourceType, Operation or Permission means ANY, an empty ResourceName or
// Host, or a nil Principal, matches any. ResourceName constrains only a filter with a
// concrete ResourceType. Names are matched exactly: WildcardResource in a filter selects
// the bindings made for "*", not every resource.
type AclBindingFilter struct {
	ResourceType ResourceType
	ResourceName string
	Principal    *Principal
	Host         string
	Operation    OperationType
	Permission   PermissionType
}

// FilterOf returns the filter that matches exactly b.
func FilterOf(b AclBinding) AclBindingFilter {
	p := b.Entry.Principal
	return AclBindingFilter{
		ResourceType: b.Resource.Type, ResourceName: b.Resource.Name, Principal: &p, Host: b.Entry.Host,
		Operation: b.Entry.Operation, Permission: b.Entry.Permission,
	}
}

func (f AclBindingFilter) pb() *flusspb.PbAclFilter {
	out := &flusspb.PbAclFilter{
		ResourceType:   proto.Int32(int32(orAny(f.ResourceType, ResourceAny))),
		OperationType:  proto.Int32(int32(orAny(f.Operation, OperationAny))),
		PermissionType: proto.Int32(int32(orAny(f.Permission, PermissionAny))),
	}
	if f.ResourceName != "" {
		out.ResourceName = proto.String(f.ResourceName)
	}
	if f.Principal != nil {
		out.PrincipalName, out.PrincipalType = proto.String(f.Principal.Name), proto.String(f.Principal.Type)
	}
	if f.Host != "" {
		out.Host = proto.String(f.Host)
	}
	return out
}

func orAny[T ~int8](v, anyValue T) T {
	if v == 0 {
		return anyValue
	}
	return v
}

func (b AclBinding) pb() *flusspb.PbAclInfo {
	return &flusspb.PbAclInfo{
		ResourceName: proto.String(b.Resource.Name), ResourceType: proto.Int32(int32(b.Resource.Type)),
		PrincipalName: proto.String(b.Entry.Principal.Name), PrincipalType: proto.String(b.Entry.Principal.Type),
		Host: proto.String(b.Entry.Host), OperationType: proto.Int32(int32(b.Entry.Operation)),
		PermissionType: proto.Int32(int32(b.Entry.Permission)),
	}
}

func aclBindingOf(a *flusspb.PbAclInfo) AclBinding {
	return AclBinding{
		Resource: Resource{Type: ResourceType(a.GetResourceType()), Name: a.GetResourceName()},
		Entry: AccessControlEntry{
			Principal: Principal{Name: a.GetPrincipalName(), Type: a.GetPrincipalType()},
			Host:      a.GetHost(), Operation: OperationType(a.GetOperationType()), Permission: PermissionType(a.GetPermissionType()),
		},
	}
}

// CreateAcls adds bindings (CREATE_ACLS). The caller needs ALTER on the cluster (a super user
// has it). Adding a binding that exists changes nothing and succeeds.
//
// err is set when the whole request failed: ErrSecurityDisabled without an authorizer,
// ErrAuthorization when the caller may not manage ACLs. Otherwise results has one entry per
// binding, nil where it was created, else the *Error the server gave it (a binding with an
// ANY type, an empty name, principal or host is refused on its own).
func (a *Admin) CreateAcls(ctx context.Context, bindings []AclBinding) (results []error, err error) {
	req := &flusspb.CreateAclsRequest{Acl: make([]*flusspb.PbAclInfo, len(bindings))}
	for i, b := range bindings {
		req.Acl[i] = b.pb()
	}
	var resp flusspb.CreateAclsResponse
	if err := a.conn.callCoordinator(ctx, wire.CreateAcls, req, &resp); err != nil {
		return nil, err
	}
	if len(resp.AclRes) != len(bindings) {
		return nil, fmt.Errorf("fluss: CREATE_ACLS answered %d results for %d bindings", len(resp.AclRes), len(bindings))
	}
	results = make([]error, len(bindings))
	for i, r := range resp.AclRes {
		results[i] = errorFromCode(r.GetErrorCode(), r.GetErrorMessage())
	}
	return results, nil
}

// ListAcls returns the bindings that match filter (LIST_ACLS) among those the caller may
// see: a caller without DESCRIBE on the cluster sees none.
func (a *Admin) ListAcls(ctx context.Context, filter AclBindingFilter) ([]AclBinding, error) {
	var resp flusspb.ListAclsResponse
	if err := a.conn.callCoordinator(ctx, wire.ListAcls, &flusspb.ListAclsRequest{AclFilter: filter.pb()}, &resp); err != nil {
		return nil, err
	}
	out := make([]AclBinding, len(resp.Acl))
	for i, b := range resp.Acl {
		out[i] = aclBindingOf(b)
	}
	return out, nil
}

// DroppedAcls is what one filter of DropAcls removed: the bindings it matched, or the error
// the server gave that filter.
type DroppedAcls struct {
	Bindings []AclBinding
	Err      error
}

// DropAcls removes every binding that matches one of filters (DROP_ACLS) and returns, per
// filter, the bindings it removed. The caller needs ALTER on the cluster. err is set when the
// whole request failed, as for CreateAcls.
func (a *Admin) DropAcls(ctx context.Context, filters []AclBindingFilter) ([]DroppedAcls, error) {
	req := &flusspb.DropAclsRequest{AclFilter: make([]*flusspb.PbAclFilter, len(filters))}
	for i, f := range filters {
		req.AclFilter[i] = f.pb()
	}
	var resp flusspb.DropAclsResponse
	if err := a.conn.callCoordinator(ctx, wire.DropAcls, req, &resp); err != nil {
		return nil, err
	}
	if len(resp.FilterResults) != len(filters) {
		return nil, fmt.Errorf("fluss: DROP_ACLS answered %d results for %d filters", len(resp.FilterResults), len(filters))
	}
	out := make([]DroppedAcls, len(filters))
	for i, r := range resp.FilterResults {
		out[i].Err = errorFromCode(r.GetErrorCode(), r.GetErrorMessage())
		for _, m := range r.MatchingAcls {
			out[i].Bindings = append(out[i].Bindings, aclBindingOf(m.GetAcl()))
		}
	}
	return out, nil
}

// errorFromCode returns the *Error of a per-item error code, nil for 0.
func errorFromCode(code int32, msg string) error {
	if code == 0 {
		return nil
	}
	return &Error{Code: ErrorCode(code), Message: msg}
}
