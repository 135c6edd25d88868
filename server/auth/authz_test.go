package auth

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/server/meta"
)

// memStore is an in-memory meta.Store.
type memStore struct {
	mu sync.Mutex
	m  map[string][]byte
}

func (s *memStore) Get(ctx context.Context, key string) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.m[key]
	if !ok {
		return nil, meta.ErrNotFound
	}
	return v, nil
}

func (s *memStore) List(ctx context.Context, prefix string) ([]meta.KV, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []meta.KV
	for k, v := range s.m {
		if strings.HasPrefix(k, prefix) {
			out = append(out, meta.KV{Key: k, Value: v})
		}
	}
	return out, nil
}

func (s *memStore) Txn(ctx context.Context, conds []meta.Cond, ops []meta.Op) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, op := range ops {
		if op.Delete {
			delete(s.m, op.Key)
		} else {
			s.m[op.Key] = op.Value
		}
	}
	return true, nil
}

func (s *memStore) NextID(ctx context.Context, name string) (int64, error) { return 0, nil }
func (s *memStore) Close() error                                           { return nil }

func newTestAuthorizer(t *testing.T, store *memStore, opts AuthorizerOptions) *Authorizer {
	t.Helper()
	a, err := NewAuthorizer(context.Background(), store, opts)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func user(name string) Session {
	return Session{Principal: Principal{Name: name, Type: "User"}, Host: "10.0.0.1"}
}

func entry(name string, op Operation, host string) Entry {
	return Entry{Principal: Principal{Name: name, Type: "User"}, Host: host, Operation: op, Permission: PermissionAllow}
}

func TestAllowedFollowsFlussRules(t *testing.T) {
	store := &memStore{m: map[string][]byte{}}
	a := newTestAuthorizer(t, store, AuthorizerOptions{SuperUsers: "User:root; User:ops"})
	admin := Session{Principal: Principal{Name: "root", Type: "User"}}
	ctx := context.Background()
	results, err := a.Add(ctx, admin, []Binding{
		{TableResource("db", "t"), entry("alice", OpRead, "*")},
		{DatabaseResource("db"), entry("bob", OpAll, "*")},
		{Resource{ResourceTable, Wildcard}, entry("carol", OpWrite, "*")},
		{DatabaseResource("open"), Entry{Principal: Principal{"*", "*"}, Host: "*", Operation: OpCreate, Permission: PermissionAllow}},
		{TableResource("db", "h"), entry("dave", OpRead, "10.0.0.1")},
		{TableResource("db", "h"), entry("erin", OpRead, "10.9.9.9")},
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range results {
		if r != nil {
			t.Fatalf("binding %d: %v", i, r)
		}
	}
	cases := []struct {
		s    Session
		op   Operation
		r    Resource
		want bool
	}{
		{user("alice"), OpRead, TableResource("db", "t"), true},
		{user("alice"), OpDescribe, TableResource("db", "t"), true}, // READ implies DESCRIBE
		{user("alice"), OpWrite, TableResource("db", "t"), false},
		{user("alice"), OpRead, TableResource("db", "u"), false},
		{user("alice"), OpDescribe, DatabaseResource("db"), false}, // table ACLs do not reach up
		{user("bob"), OpDrop, TableResource("db", "any"), true},    // database ACLs cover tables
		{user("bob"), OpAlter, DatabaseResource("db"), true},
		{user("bob"), OpRead, TableResource("other", "t"), false},
		{user("carol"), OpWrite, TableResource("x", "y"), true}, // wildcard table resource
		{user("carol"), OpWrite, DatabaseResource("x"), false},
		{user("zed"), OpCreate, TableResource("open", "t"), true}, // wildcard principal
		{user("zed"), OpDescribe, DatabaseResource("open"), true},
		{user("zed"), OpDrop, DatabaseResource("open"), false},
		{user("zed"), OpCreate, DatabaseResource("closed"), false},
		{user("dave"), OpRead, TableResource("db", "h"), true}, // host matches
		{user("erin"), OpRead, TableResource("db", "h"), false},
		{Session{Principal: Principal{"ops", "User"}}, OpDrop, ClusterResource(), true}, // super user
		{Session{Principal: Principal{"ALICE", "User"}}, OpRead, TableResource("db", "t"), false},
		{Session{Principal: Anonymous, Internal: true}, OpDrop, ClusterResource(), true},
	}
	for _, c := range cases {
		if got := a.Allowed(c.s, c.op, c.r); got != c.want {
			t.Errorf("%v %v %v: got %v, want %v", c.s.Principal, c.op, c.r, got, c.want)
		}
	}
	if err := a.Authorize(user("alice"), OpWrite, TableResource("db", "t")); ferr.CodeOf(err) != ferr.AuthorizationException {
		t.Fatalf("Authorize: %v", err)
	}

	// Principal matching ignores case when configured.
	b := newTestAuthorizer(t, store, AuthorizerOptions{IgnoreCase: true})
	if !b.Allowed(Session{Principal: Principal{"ALICE", "user"}}, OpRead, TableResource("db", "t")) {
		t.Fatal("ignore-case authorizer refused ALICE")
	}
	// Reloading from the store gives the same ACLs.
	// root is no super user of b: it may describe only the "open" database (wildcard CREATE).
	if got := b.List(admin, Filter{ResourceType: ResourceAny, Operation: OpAny, Permission: PermissionAny}); len(got) != 1 || got[0].Resource.Name != "open" {
		t.Fatalf("b lists %v to a non-super user", got)
	}
	c := newTestAuthorizer(t, store, AuthorizerOptions{SuperUsers: "User:root"})
	if got := len(c.List(admin, Filter{ResourceType: ResourceAny, Operation: OpAny, Permission: PermissionAny})); got != 6 {
		t.Fatalf("reloaded authorizer lists %d bindings, want 6", got)
	}
}

func TestACLAdministration(t *testing.T) {
	store := &memStore{m: map[string][]byte{}}
	a := newTestAuthorizer(t, store, AuthorizerOptions{SuperUsers: "User:root"})
	ctx := context.Background()
	root := Session{Principal: Principal{"root", "User"}}
	if _, err := a.Add(ctx, root, []Binding{{DatabaseResource("db"), entry("dba", OpAll, "*")}}); err != nil {
		t.Fatal(err)
	}
	// ALL on a database lets dba administer ACLs of the database and its tables, not others.
	if _, err := a.Add(ctx, user("dba"), []Binding{{TableResource("db", "t"), entry("x", OpRead, "*")}}); err != nil {
		t.Fatalf("dba on its database's table: %v", err)
	}
	if _, err := a.Add(ctx, user("dba"), []Binding{{TableResource("other", "t"), entry("x", OpRead, "*")}}); ferr.CodeOf(err) != ferr.AuthorizationException {
		t.Fatalf("dba on another database: %v", err)
	}
	// Invalid bindings fail alone.
	res, err := a.Add(ctx, root, []Binding{{TableResource("db", "u"), Entry{Principal: Principal{"x", "User"}, Operation: OpRead, Permission: PermissionAllow}},
		{TableResource("db", "u"), entry("y", OpRead, "*")}})
	if err != nil || res[0] == nil || res[1] != nil {
		t.Fatalf("mixed add: %v %v", res, err)
	}
	// ALTER is enough to administer ACLs, as in Fluss.
	if _, err := a.Add(ctx, root, []Binding{{DatabaseResource("adb"), entry("alterer", OpAlter, "*")}}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Add(ctx, user("alterer"), []Binding{{TableResource("adb", "t"), entry("x", OpRead, "*")}}); err != nil {
		t.Fatalf("ALTER on the database: %v", err)
	}
	// ANY codes are stored as Fluss stores them, and grant nothing.
	anyOp := Binding{TableResource("db", "v"), Entry{Principal: Principal{"z", "User"}, Host: "*", Operation: OpAny, Permission: PermissionAny}}
	if res, err := a.Add(ctx, root, []Binding{anyOp}); err != nil || res[0] != nil {
		t.Fatalf("ANY binding: %v %v", res, err)
	}
	if a.Allowed(user("z"), OpRead, TableResource("db", "v")) || a.Allowed(user("z"), OpDescribe, TableResource("db", "v")) {
		t.Fatal("an ANY binding grants")
	}
	vname := "db.v"
	if got := a.List(root, Filter{ResourceType: ResourceTable, ResourceName: &vname, Operation: OpAny, Permission: PermissionAny}); len(got) != 1 || got[0] != anyOp {
		t.Fatalf("list ANY binding: %v", got)
	}
	name := "db.t"
	dropped, err := a.Drop(ctx, root, []Filter{{ResourceType: ResourceTable, ResourceName: &name, Operation: OpAny, Permission: PermissionAny}})
	if err != nil || len(dropped[0]) != 1 || dropped[0][0].Entry.Principal.Name != "x" {
		t.Fatalf("drop: %v %v", dropped, err)
	}
	if _, ok := store.m[aclKey(TableResource("db", "t"))]; ok {
		t.Fatal("a resource without entries keeps its key")
	}
}
