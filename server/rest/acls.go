package rest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/stromdb/strom/fluss"
)

// aclJSON is an ACL binding as the API reads and writes it: enum values by their Fluss
// names (TABLE, READ, ALLOW), the principal as "Type:Name" (the form super.users uses).
type aclJSON struct {
	ResourceType string `json:"resource_type"`
	ResourceName string `json:"resource_name"`
	Principal    string `json:"principal"`
	Host         string `json:"host,omitempty"`
	Operation    string `json:"operation"`
	Permission   string `json:"permission,omitempty"`
}

func aclOf(b fluss.AclBinding) aclJSON {
	return aclJSON{
		ResourceType: b.Resource.Type.String(), ResourceName: b.Resource.Name,
		Principal: b.Entry.Principal.String(), Host: b.Entry.Host,
		Operation: b.Entry.Operation.String(), Permission: b.Entry.Permission.String(),
	}
}

// enumOf parses name (case-insensitive) as the value of an enum whose String is its Fluss
// name; "" gives the zero value, which in a filter means ANY.
func enumOf[T ~int8](kind, name string, values ...T) (T, error) {
	if name == "" {
		return 0, nil
	}
	names := make([]string, len(values))
	for i, v := range values {
		names[i] = fmt.Sprint(v)
		if strings.EqualFold(names[i], name) {
			return v, nil
		}
	}
	return 0, badRequest(fluss.ErrInvalidConfig, fmt.Sprintf("%s %q: want one of %s", kind, name, strings.Join(names, ", ")))
}

var (
	resourceTypes = []fluss.ResourceType{fluss.ResourceAny, fluss.ResourceCluster, fluss.ResourceDatabase, fluss.ResourceTable}
	operations    = []fluss.OperationType{fluss.OperationAny, fluss.OperationAll, fluss.OperationRead, fluss.OperationWrite,
		fluss.OperationCreate, fluss.OperationDrop, fluss.OperationAlter, fluss.OperationDescribe}
	permissions = []fluss.PermissionType{fluss.PermissionAny, fluss.PermissionAllow}
)

// principalOf parses "Type:Name"; a bare name is a SASL user.
func principalOf(s string) (fluss.Principal, error) {
	if s == "" {
		return fluss.Principal{}, badRequest(fluss.ErrInvalidConfig, `"principal" is required, as "User:NAME"`)
	}
	typ, name, ok := strings.Cut(s, ":")
	if !ok {
		return fluss.User(s), nil
	}
	if typ == "" || name == "" {
		return fluss.Principal{}, badRequest(fluss.ErrInvalidConfig, fmt.Sprintf("principal %q: want TYPE:NAME, as User:alice", s))
	}
	return fluss.Principal{Type: typ, Name: name}, nil
}

// binding converts a to a binding to create: every field concrete (no ANY); the host
// defaults to any host, the permission to ALLOW and a cluster resource's name to Fluss's.
func (a aclJSON) binding() (fluss.AclBinding, error) {
	var b fluss.AclBinding
	rt, err := enumOf("resource_type", a.ResourceType, resourceTypes...)
	if err != nil {
		return b, err
	}
	op, err := enumOf("operation", a.Operation, operations...)
	if err != nil {
		return b, err
	}
	perm, err := enumOf("permission", a.Permission, permissions...)
	if err != nil {
		return b, err
	}
	p, err := principalOf(a.Principal)
	if err != nil {
		return b, err
	}
	switch {
	case rt == 0 || rt == fluss.ResourceAny:
		return b, badRequest(fluss.ErrInvalidConfig, `"resource_type" is required: CLUSTER, DATABASE or TABLE`)
	case op == 0 || op == fluss.OperationAny:
		return b, badRequest(fluss.ErrInvalidConfig, `"operation" is required and may not be ANY`)
	case perm == fluss.PermissionAny:
		return b, badRequest(fluss.ErrInvalidConfig, `"permission" may only be ALLOW`)
	}
	name := a.ResourceName
	if rt == fluss.ResourceCluster && name == "" {
		name = fluss.ClusterResourceName
	}
	if name == "" {
		return b, badRequest(fluss.ErrInvalidConfig, `"resource_name" is required: a database, "database.table" or "*"`)
	}
	host := a.Host
	if host == "" {
		host = fluss.WildcardHost
	}
	b = fluss.NewAclBinding(fluss.Resource{Type: rt, Name: name}, p, op)
	b.Entry.Host = host
	return b, nil
}

// aclFilter reads a filter from the query: resource_type, resource_name, principal, host,
// operation, permission; a parameter left out matches anything.
func aclFilter(r *http.Request) (fluss.AclBindingFilter, error) {
	q := r.URL.Query()
	var f fluss.AclBindingFilter
	var err error
	if f.ResourceType, err = enumOf("resource_type", q.Get("resource_type"), resourceTypes...); err != nil {
		return f, err
	}
	if f.Operation, err = enumOf("operation", q.Get("operation"), operations...); err != nil {
		return f, err
	}
	if f.Permission, err = enumOf("permission", q.Get("permission"), permissions...); err != nil {
		return f, err
	}
	f.ResourceName, f.Host = q.Get("resource_name"), q.Get("host")
	if f.ResourceName != "" && (f.ResourceType == 0 || f.ResourceType == fluss.ResourceAny) {
		return f, badRequest(fluss.ErrInvalidConfig, "resource_name needs a resource_type: CLUSTER, DATABASE or TABLE")
	}
	if s := q.Get("principal"); s != "" {
		p, err := principalOf(s)
		if err != nil {
			return f, err
		}
		f.Principal = &p
	}
	return f, nil
}

func aclsJSON(bs []fluss.AclBinding) []aclJSON {
	out := make([]aclJSON, len(bs))
	for i, b := range bs {
		out[i] = aclOf(b)
	}
	return out
}

// listAcls answers LIST_ACLS for the query's filter.
func (g *Gateway) listAcls(ctx context.Context, c *fluss.Connection, w http.ResponseWriter, r *http.Request) error {
	f, err := aclFilter(r)
	if err != nil {
		return err
	}
	bs, err := c.Admin().ListAcls(ctx, f)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"acls": aclsJSON(bs)})
	return nil
}

// createAcls answers CREATE_ACLS for {"acls": [...]}. Every binding is validated before the
// request is sent, so a malformed one creates nothing; a binding the server refuses on its
// own is reported with its error, and the answer is then that error's status.
func (g *Gateway) createAcls(ctx context.Context, c *fluss.Connection, w http.ResponseWriter, r *http.Request) error {
	var body struct {
		ACLs []aclJSON `json:"acls"`
	}
	if err := g.readJSON(w, r, &body); err != nil {
		return err
	}
	if len(body.ACLs) == 0 {
		return badRequest(fluss.ErrInvalidConfig, `"acls" is empty: [{"resource_type": "TABLE", "resource_name": "db.t", "principal": "User:alice", "operation": "READ"}]`)
	}
	bindings := make([]fluss.AclBinding, len(body.ACLs))
	for i, a := range body.ACLs {
		b, err := a.binding()
		if err != nil {
			var ae *apiError
			if errors.As(err, &ae) {
				ae.msg = fmt.Sprintf("acls[%d]: %s", i, ae.msg)
			}
			return err
		}
		bindings[i] = b
	}
	results, err := c.Admin().CreateAcls(ctx, bindings)
	if err != nil {
		return err
	}
	for i, e := range results {
		if e != nil {
			return fmt.Errorf("acls[%d] %s: %w", i, bindings[i], e)
		}
	}
	writeJSON(w, http.StatusCreated, map[string]any{"acls": aclsJSON(bindings)})
	return nil
}

// dropAcls answers DROP_ACLS for the query's filter: the bindings it removed. A filter with
// no parameter at all would drop every ACL of the cluster: it needs ?all=true.
func (g *Gateway) dropAcls(ctx context.Context, c *fluss.Connection, w http.ResponseWriter, r *http.Request) error {
	f, err := aclFilter(r)
	if err != nil {
		return err
	}
	all, err := boolParam(r, "all")
	if err != nil {
		return err
	}
	if f == (fluss.AclBindingFilter{}) && !all {
		return badRequest(fluss.ErrInvalidConfig, "an empty filter drops every ACL: narrow it (resource_type, resource_name, principal, operation, ...) or add all=true")
	}
	res, err := c.Admin().DropAcls(ctx, []fluss.AclBindingFilter{f})
	if err != nil {
		return err
	}
	if res[0].Err != nil {
		return res[0].Err
	}
	writeJSON(w, http.StatusOK, map[string]any{"dropped": aclsJSON(res[0].Bindings)})
	return nil
}
