package coordinator

import (
	"context"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
	"github.com/stromdb/strom/server/auth"
	"github.com/stromdb/strom/server/cluster"
)

func (c *Coordinator) session(req *wire.Request) auth.Session {
	return auth.SessionOf(req, c.opts.InternalListener)
}

// checksAccess reports whether requests on req's listener are authorised: the authorizer is
// enabled and the listener is not the internal one.
func (c *Coordinator) checksAccess(req *wire.Request) bool {
	return c.opts.Authorizer != nil && req.Listener != c.opts.InternalListener
}

// authorize returns AUTHORIZATION_EXCEPTION unless req may perform op on r.
func (c *Coordinator) authorize(req *wire.Request, op auth.Operation, r auth.Resource) error {
	if !c.checksAccess(req) {
		return nil
	}
	return c.opts.Authorizer.Authorize(c.session(req), op, r)
}

// allowed reports whether req may perform op on r.
func (c *Coordinator) allowed(req *wire.Request, op auth.Operation, r auth.Resource) bool {
	return !c.checksAccess(req) || c.opts.Authorizer.Allowed(c.session(req), op, r)
}

func tableResource(p cluster.TablePath) auth.Resource { return auth.TableResource(p.Database, p.Table) }

// tablePathRequest is a request that names one table by its path.
type tablePathRequest interface {
	proto.Message
	GetTablePath() *flusspb.PbTablePath
}

// decodeForTable decodes req into r and authorizes op on the table r names: the prologue of
// every request scoped to one table path. It returns the path.
func (c *Coordinator) decodeForTable(req *wire.Request, r tablePathRequest, op auth.Operation) (cluster.TablePath, error) {
	if err := req.Decode(r); err != nil {
		return cluster.TablePath{}, err
	}
	path := tablePathOf(r.GetTablePath())
	return path, c.authorize(req, op, tableResource(path))
}

// decodeForTableInfo is decodeForTable for a request about an existing table, which it
// returns (TABLE_NOT_EXIST when there is none).
func (c *Coordinator) decodeForTableInfo(req *wire.Request, r tablePathRequest, op auth.Operation) (*cluster.TableInfo, error) {
	if _, err := c.decodeForTable(req, r, op); err != nil {
		return nil, err
	}
	return c.table(r.GetTablePath())
}

// authorizeTableID authorises op on the table with the given id; an unknown table is
// TABLE_NOT_EXIST, as Java's lookup of the table path fails first.
func (c *Coordinator) authorizeTableID(req *wire.Request, op auth.Operation, tableID int64) error {
	if !c.checksAccess(req) {
		return nil
	}
	t, ok := c.TableByID(tableID)
	if !ok {
		return ferr.New(ferr.TableNotExist, "The table id %d does not exist.", tableID)
	}
	return c.authorize(req, op, tableResource(t.Path))
}

var errSecurityDisabled = ferr.New(ferr.SecurityDisabledException, "No Authorizer is configured.")

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

func init() { registerAdmin(wire.CreateAcls, 0, 0, (*Coordinator).handleCreateAcls) }

func (c *Coordinator) handleCreateAcls(ctx context.Context, req *wire.Request) (proto.Message, error) {
	var r flusspb.CreateAclsRequest
	if err := req.Decode(&r); err != nil {
		return nil, err
	}
	if c.opts.Authorizer == nil {
		return nil, errSecurityDisabled
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
	s := c.session(req)
	results, err := c.opts.Authorizer.Add(ctx, s, bs)
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

func init() { registerAdmin(wire.DropAcls, 0, 0, (*Coordinator).handleDropAcls) }

func (c *Coordinator) handleDropAcls(ctx context.Context, req *wire.Request) (proto.Message, error) {
	var r flusspb.DropAclsRequest
	if err := req.Decode(&r); err != nil {
		return nil, err
	}
	if c.opts.Authorizer == nil {
		return nil, errSecurityDisabled
	}
	filters := make([]auth.Filter, len(r.GetAclFilter()))
	for i, f := range r.GetAclFilter() {
		var err error
		if filters[i], err = filterOf(f); err != nil {
			return nil, err
		}
	}
	s := c.session(req)
	dropped, err := c.opts.Authorizer.Drop(ctx, s, filters)
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

func init() { registerReadOnly(wire.ListAcls, 0, 0, (*Coordinator).handleListAcls) }

func (c *Coordinator) handleListAcls(ctx context.Context, req *wire.Request) (proto.Message, error) {
	var r flusspb.ListAclsRequest
	if err := req.Decode(&r); err != nil {
		return nil, err
	}
	if c.opts.Authorizer == nil {
		return nil, errSecurityDisabled
	}
	f, err := filterOf(r.GetAclFilter())
	if err != nil {
		return nil, err
	}
	s := c.session(req)
	resp := &flusspb.ListAclsResponse{}
	for _, b := range c.opts.Authorizer.List(s, f) {
		resp.Acl = append(resp.Acl, pbACL(b))
	}
	return resp, nil
}

// setError fills an error_code/error_message pair from err.
func setError(code **int32, msg **string, err error) {
	*code = proto.Int32(int32(ferr.CodeOf(err)))
	if m := ferr.MessageOf(err); m != "" {
		*msg = proto.String(wire.Sanitize(m))
	}
}
