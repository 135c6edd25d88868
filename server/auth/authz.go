package auth

// This file is the ACL authorizer: Fluss's DefaultAuthorizer model (resource types, operations,
// ALLOW entries, super users) over ACLs kept in the metadata store.

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/server/meta"
)

// ResourceType is a Fluss ACL resource type; the values are the wire codes.
type ResourceType int8

// Resource types.
const (
	ResourceAny      ResourceType = 1
	ResourceCluster  ResourceType = 2
	ResourceDatabase ResourceType = 3
	ResourceTable    ResourceType = 4
)

var resourceTypeNames = map[ResourceType]string{ResourceAny: "ANY", ResourceCluster: "CLUSTER", ResourceDatabase: "DATABASE", ResourceTable: "TABLE"}

func (t ResourceType) String() string {
	if n, ok := resourceTypeNames[t]; ok {
		return n
	}
	return "RESOURCE_" + strconv.Itoa(int(t))
}

// Operation is a Fluss ACL operation type; the values are the wire codes.
type Operation int8

// Operations.
const (
	OpAny      Operation = 1
	OpAll      Operation = 2
	OpRead     Operation = 3
	OpWrite    Operation = 4
	OpCreate   Operation = 5
	OpDrop     Operation = 6
	OpAlter    Operation = 7
	OpDescribe Operation = 8
)

var operationNames = map[Operation]string{OpAny: "ANY", OpAll: "ALL", OpRead: "READ", OpWrite: "WRITE", OpCreate: "CREATE", OpDrop: "DROP", OpAlter: "ALTER", OpDescribe: "DESCRIBE"}

func (o Operation) String() string {
	if n, ok := operationNames[o]; ok {
		return n
	}
	return "OPERATION_" + strconv.Itoa(int(o))
}

// Permission is a Fluss ACL permission type. Fluss has no DENY entries.
type Permission int8

// Permissions.
const (
	PermissionAny   Permission = 1
	PermissionAllow Permission = 2
)

// ClusterName is the name of the one cluster resource; Wildcard matches every resource of a
// type, and WildcardHost every client host.
const (
	ClusterName  = "fluss-cluster"
	Wildcard     = "*"
	WildcardHost = "*"
)

// Resource is something an ACL protects. Tables are named "<database>.<table>".
type Resource struct {
	Type ResourceType
	Name string
}

// ClusterResource is the cluster.
func ClusterResource() Resource { return Resource{ResourceCluster, ClusterName} }

// DatabaseResource is a database.
func DatabaseResource(db string) Resource { return Resource{ResourceDatabase, db} }

// TableResource is a table.
func TableResource(db, table string) Resource { return Resource{ResourceTable, db + "." + table} }

func (r Resource) String() string {
	return fmt.Sprintf("Resource{type=%s, name='%s'}", r.Type, r.Name)
}

// Principal is an authenticated identity; SASL users have type "User".
type Principal struct {
	Name string
	Type string
}

// Anonymous is the principal of connections that did not authenticate.
var Anonymous = Principal{Name: "ANONYMOUS", Type: "User"}

// PrincipalOf parses the principal the network layer attaches to a request: "type:name" as
// the SASL authenticators give it ("User:alice"), a bare name as a User, Anonymous for "".
func PrincipalOf(s string) Principal {
	if s == "" {
		return Anonymous
	}
	if typ, name, ok := strings.Cut(s, ":"); ok && typ != "" && name != "" {
		return Principal{Name: name, Type: typ}
	}
	return Principal{Name: s, Type: "User"}
}

func (p Principal) String() string {
	return fmt.Sprintf("FlussPrincipal{name='%s', type='%s'}", p.Name, p.Type)
}

// Entry is one access control entry of a resource.
type Entry struct {
	Principal  Principal
	Host       string
	Operation  Operation
	Permission Permission
}

// Binding is an entry bound to its resource.
type Binding struct {
	Resource Resource
	Entry    Entry
}

// Filter selects bindings. nil fields match anything; ResourceAny, OpAny and PermissionAny
// match every type, operation and permission.
type Filter struct {
	ResourceType ResourceType
	ResourceName *string
	Principal    *Principal
	Host         *string
	Operation    Operation
	Permission   Permission
}

// matchesResource is Java's ResourceFilter.matches: a name only constrains a typed filter.
func (f Filter) matchesResource(r Resource) bool {
	if f.ResourceType != ResourceAny && f.ResourceName != nil && *f.ResourceName != r.Name {
		return false
	}
	return f.ResourceType == ResourceAny || f.ResourceType == r.Type
}

func (f Filter) matchesEntry(e Entry) bool {
	if f.Principal != nil && *f.Principal != e.Principal {
		return false
	}
	if f.Host != nil && *f.Host != e.Host {
		return false
	}
	if f.Operation != OpAny && f.Operation != e.Operation {
		return false
	}
	return f.Permission == PermissionAny || f.Permission == e.Permission
}

// Matches reports whether b passes the filter.
func (f Filter) Matches(b Binding) bool {
	return f.matchesResource(b.Resource) && f.matchesEntry(b.Entry)
}

// Session is who sends a request and from where.
type Session struct {
	Principal Principal
	Host      string // client IP address, "" when unknown
	// Internal marks requests on the internal listener (internal.listener.name), which Fluss
	// never authorises.
	Internal bool
}

// Authorizer decides whether a session may perform an operation on a resource, as Fluss's
// DefaultAuthorizer does: super users may do anything; otherwise an ALLOW entry must exist
// on the resource, on a resource containing it (the table's database, the cluster) or on the
// wildcard resource of its type, for the session's principal or the wildcard principal, for
// the operation or ALL (DESCRIBE is also granted by READ, WRITE, CREATE, DROP and ALTER), for
// the session's host or any host. No entry means no access.
//
// ACLs are stored under acls/<type code>/<resource name>, one JSON list of entries per
// resource; every change is written to the store before the in-memory copy changes.
type Authorizer struct {
	store      meta.Store
	superUsers []Principal
	ignoreCase bool

	writeMu sync.Mutex // serialises changes
	mu      sync.RWMutex
	acls    map[Resource][]Entry
}

// AuthorizerOptions configure an Authorizer with Fluss's option values.
type AuthorizerOptions struct {
	// SuperUsers is super.users: "User:admin;User:bob".
	SuperUsers string
	// IgnoreCase is security.acl.principal.ignore-case.
	IgnoreCase bool
}

// ParseSuperUsers parses super.users.
func ParseSuperUsers(s string) ([]Principal, error) {
	var out []Principal
	for _, u := range strings.Split(s, ";") {
		u = strings.TrimSpace(u)
		if u == "" {
			continue
		}
		typ, name, ok := strings.Cut(u, ":")
		if !ok || typ == "" || name == "" {
			return nil, fmt.Errorf("super.users: %q is not principal_type:principal_name", u)
		}
		out = append(out, Principal{Name: name, Type: typ})
	}
	return out, nil
}

// NewAuthorizer loads the stored ACLs.
func NewAuthorizer(ctx context.Context, store meta.Store, opts AuthorizerOptions) (*Authorizer, error) {
	su, err := ParseSuperUsers(opts.SuperUsers)
	if err != nil {
		return nil, err
	}
	a := &Authorizer{store: store, superUsers: su, ignoreCase: opts.IgnoreCase, acls: map[Resource][]Entry{}}
	kvs, err := store.List(ctx, aclPrefix)
	if err != nil {
		return nil, fmt.Errorf("load ACLs: %w", err)
	}
	for _, kv := range kvs {
		r, err := parseACLKey(kv.Key)
		if err != nil {
			return nil, err
		}
		var entries []storedEntry
		if err := json.Unmarshal(kv.Value, &entries); err != nil {
			return nil, fmt.Errorf("ACLs of %s: corrupt record: %w", r, err)
		}
		for _, e := range entries {
			a.acls[r] = append(a.acls[r], e.entry())
		}
	}
	return a, nil
}

const aclPrefix = "acls/"

func aclKey(r Resource) string { return fmt.Sprintf("%s%d/%s", aclPrefix, r.Type, r.Name) }

func parseACLKey(k string) (Resource, error) {
	typ, name, ok := strings.Cut(strings.TrimPrefix(k, aclPrefix), "/")
	n, err := strconv.Atoi(typ)
	if !ok || err != nil {
		return Resource{}, fmt.Errorf("unexpected ACL key %q", k)
	}
	return Resource{Type: ResourceType(n), Name: name}, nil
}

// storedEntry is the on-disk form of an Entry; field names are part of the format.
type storedEntry struct {
	PrincipalName string     `json:"principal_name"`
	PrincipalType string     `json:"principal_type"`
	Host          string     `json:"host"`
	Operation     Operation  `json:"operation"`
	Permission    Permission `json:"permission"`
}

func (s storedEntry) entry() Entry {
	return Entry{Principal: Principal{s.PrincipalName, s.PrincipalType}, Host: s.Host, Operation: s.Operation, Permission: s.Permission}
}

func toStored(es []Entry) []storedEntry {
	out := make([]storedEntry, len(es))
	for i, e := range es {
		out[i] = storedEntry{e.Principal.Name, e.Principal.Type, e.Host, e.Operation, e.Permission}
	}
	return out
}

func (a *Authorizer) principalMatches(acl, p Principal) bool {
	if a.ignoreCase {
		return strings.EqualFold(acl.Name, p.Name) && strings.EqualFold(acl.Type, p.Type)
	}
	return acl == p
}

func (a *Authorizer) isSuperUser(p Principal) bool {
	return slices.ContainsFunc(a.superUsers, func(su Principal) bool { return a.principalMatches(su, p) })
}

// parents returns the resources whose ACLs apply to r: r itself, its database and the cluster.
func parents(r Resource) []Resource {
	switch r.Type {
	case ResourceTable:
		db, _, _ := strings.Cut(r.Name, ".")
		return []Resource{r, DatabaseResource(db), ClusterResource()}
	case ResourceDatabase:
		return []Resource{r, ClusterResource()}
	case ResourceCluster:
		return []Resource{r}
	}
	return nil
}

// grants lists the operations whose ALLOW entries grant op.
func grants(op Operation) []Operation {
	if op == OpDescribe {
		return []Operation{OpDescribe, OpRead, OpWrite, OpCreate, OpDrop, OpAlter, OpAll}
	}
	return []Operation{op, OpAll}
}

// Allowed reports whether s may perform op on r.
func (a *Authorizer) Allowed(s Session, op Operation, r Resource) bool {
	if s.Internal || a.isSuperUser(s.Principal) {
		return true
	}
	a.mu.RLock()
	defer a.mu.RUnlock()
	wildcardPrincipal := Principal{Name: "*", Type: "*"}
	ops := grants(op)
	check := func(es []Entry) bool {
		for _, e := range es {
			if e.Permission != PermissionAllow || !slices.Contains(ops, e.Operation) {
				continue
			}
			if !a.principalMatches(e.Principal, s.Principal) && !a.principalMatches(e.Principal, wildcardPrincipal) {
				continue
			}
			if e.Host == WildcardHost || (s.Host != "" && e.Host == s.Host) {
				return true
			}
		}
		return false
	}
	if check(a.acls[Resource{Type: r.Type, Name: Wildcard}]) {
		return true
	}
	for _, p := range parents(r) {
		if check(a.acls[p]) {
			return true
		}
	}
	return false
}

// Authorize returns AUTHORIZATION_EXCEPTION (48) unless s may perform op on r.
func (a *Authorizer) Authorize(s Session, op Operation, r Resource) error {
	if a.Allowed(s, op, r) {
		return nil
	}
	return ferr.New(ferr.AuthorizationException, "Principal %s have no authorization to operate %s on resource %s ", s.Principal, op, r)
}

// authorizeACLChange checks that s may change the ACLs of r: ALTER (or ALL) on the resource,
// or on the table's database for tables (Fluss's minimum granularity of ACL administration),
// as Fluss's DefaultAuthorizer.authorizeAclOperation requires.
func (a *Authorizer) authorizeACLChange(s Session, r Resource) error {
	if r.Type == ResourceTable {
		db, _, _ := strings.Cut(r.Name, ".")
		r = DatabaseResource(db)
	}
	return a.Authorize(s, OpAlter, r)
}

// Validate checks a binding to be created: known type codes, a resource name, a principal
// and a host. As in Fluss 0.9.1, the ANY codes are accepted and stored: a binding with
// operation or permission ANY, or on a resource of type ANY, is listed and dropped like any
// other but grants nothing (grants and parents never match it).
func (b Binding) Validate() error {
	switch {
	case b.Resource.Type < ResourceAny || b.Resource.Type > ResourceTable:
		return ferr.New(ferr.UnknownServerError, "Unknown resource type code %d", b.Resource.Type)
	case b.Entry.Operation < OpAny || b.Entry.Operation > OpDescribe:
		return ferr.New(ferr.UnknownServerError, "Unknown operation type code: %d", b.Entry.Operation)
	case b.Entry.Permission < PermissionAny || b.Entry.Permission > PermissionAllow:
		return ferr.New(ferr.UnknownServerError, "Unknown permission type: %d", b.Entry.Permission)
	case b.Resource.Name == "" || b.Entry.Principal.Name == "" || b.Entry.Principal.Type == "" || b.Entry.Host == "":
		return ferr.New(ferr.UnknownServerError, "ACL binding %v is missing a resource name, principal or host", b)
	}
	return nil
}

// Add creates bindings on behalf of s. The whole call fails with AUTHORIZATION_EXCEPTION when
// s may not administer one of the resources; otherwise each binding gets its own result (nil
// on success). Adding an existing binding succeeds and changes nothing.
func (a *Authorizer) Add(ctx context.Context, s Session, bs []Binding) ([]error, error) {
	a.writeMu.Lock()
	defer a.writeMu.Unlock()
	results := make([]error, len(bs))
	byResource := map[Resource][]int{}
	var order []Resource
	for i, b := range bs {
		if err := b.Validate(); err != nil {
			results[i] = err
			continue
		}
		if _, ok := byResource[b.Resource]; !ok {
			order = append(order, b.Resource)
		}
		byResource[b.Resource] = append(byResource[b.Resource], i)
	}
	for _, r := range order {
		if err := a.authorizeACLChange(s, r); err != nil {
			return nil, err
		}
	}
	for _, r := range order {
		a.mu.RLock()
		entries := slices.Clone(a.acls[r])
		a.mu.RUnlock()
		for _, i := range byResource[r] {
			if !slices.Contains(entries, bs[i].Entry) {
				entries = append(entries, bs[i].Entry)
			}
		}
		if err := a.write(ctx, r, entries); err != nil {
			for _, i := range byResource[r] {
				results[i] = err
			}
		}
	}
	return results, nil
}

// Drop removes the bindings matching each filter on behalf of s and returns them per filter.
// It fails with AUTHORIZATION_EXCEPTION when s may not administer a resource a filter matches.
func (a *Authorizer) Drop(ctx context.Context, s Session, filters []Filter) ([][]Binding, error) {
	a.writeMu.Lock()
	defer a.writeMu.Unlock()
	a.mu.RLock()
	var touched []Resource
	for r := range a.acls {
		if slices.ContainsFunc(filters, func(f Filter) bool { return f.matchesResource(r) }) {
			touched = append(touched, r)
		}
	}
	a.mu.RUnlock()
	slices.SortFunc(touched, compareResources)
	for _, r := range touched {
		if err := a.authorizeACLChange(s, r); err != nil {
			return nil, err
		}
	}
	out := make([][]Binding, len(filters))
	for _, r := range touched {
		a.mu.RLock()
		current := a.acls[r]
		a.mu.RUnlock()
		var keep []Entry
		for _, e := range current {
			removed := false
			for fi, f := range filters {
				if f.matchesResource(r) && f.matchesEntry(e) {
					if !removed {
						out[fi] = append(out[fi], Binding{Resource: r, Entry: e})
					}
					removed = true
				}
			}
			if !removed {
				keep = append(keep, e)
			}
		}
		if len(keep) == len(current) {
			continue
		}
		if err := a.write(ctx, r, keep); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// List returns the bindings matching f on resources s may DESCRIBE, in a stable order.
func (a *Authorizer) List(s Session, f Filter) []Binding {
	a.mu.RLock()
	resources := make([]Resource, 0, len(a.acls))
	for r := range a.acls {
		resources = append(resources, r)
	}
	a.mu.RUnlock()
	slices.SortFunc(resources, compareResources)
	var out []Binding
	for _, r := range resources {
		if !a.Allowed(s, OpDescribe, r) {
			continue
		}
		a.mu.RLock()
		es := slices.Clone(a.acls[r])
		a.mu.RUnlock()
		for _, e := range es {
			if b := (Binding{Resource: r, Entry: e}); f.Matches(b) {
				out = append(out, b)
			}
		}
	}
	return out
}

func compareResources(x, y Resource) int {
	if x.Type != y.Type {
		return int(x.Type) - int(y.Type)
	}
	return strings.Compare(x.Name, y.Name)
}

// write stores the entries of r (deleting the key when none are left) and then publishes them.
// Called with writeMu held.
func (a *Authorizer) write(ctx context.Context, r Resource, entries []Entry) error {
	var op meta.Op
	if len(entries) == 0 {
		op = meta.Delete(aclKey(r))
	} else {
		data, err := json.Marshal(toStored(entries))
		if err != nil {
			return err
		}
		op = meta.Put(aclKey(r), data)
	}
	if _, err := a.store.Txn(ctx, nil, []meta.Op{op}); err != nil {
		return fmt.Errorf("store ACLs of %s: %w", r, err)
	}
	a.mu.Lock()
	if len(entries) == 0 {
		delete(a.acls, r)
	} else {
		a.acls[r] = entries
	}
	a.mu.Unlock()
	return nil
}

// SessionOf returns who sent req: the principal the network layer authenticated and, when the
// request can tell it, the client's IP address. Requests on internalListener are internal.
func SessionOf(req *wire.Request, internalListener string) Session {
	s := Session{Principal: PrincipalOf(req.Principal), Internal: req.IsInternal(internalListener)}
	if host, _, err := net.SplitHostPort(req.RemoteAddr().String()); err == nil {
		s.Host = host
	}
	return s
}
