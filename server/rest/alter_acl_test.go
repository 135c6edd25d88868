package rest_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stromdb/strom/server/config"
)

func TestAlterTable(t *testing.T) {
	n := startNode(t, nil)
	n.createDB(t, "alt")
	n.createTable(t, "alt", map[string]any{"name": "t", "columns": []any{col("id", "INT"), col("name", "STRING")}, "primary_key": []string{"id"},
		"custom_properties": map[string]string{"owner": "ops", "team": "core"}})
	tbl := api + "/databases/alt/tables/t"
	n.must(t, 200, call{method: "POST", path: tbl + "/rows", body: map[string]any{"rows": []any{map[string]any{"id": 1, "name": "a"}}}})

	// Options and schema changes go in separate requests (Fluss refuses a mix, so nothing
	// is half-applied); each answer is the new info.
	addEmail := []any{map[string]any{"name": "email", "type": "STRING", "comment": "added"}}
	n.refused(t, 400, 56, call{method: "PATCH", path: tbl, body: map[string]any{"set": map[string]string{"owner": "data"}, "add_columns": addEmail}})
	r := n.must(t, 200, call{method: "PATCH", path: tbl, body: map[string]any{"set": map[string]string{"owner": "data"}, "reset": []string{"team"}}})
	if got := jsonOf(t, r.body["custom_properties"]); got != `{"owner":"data"}` {
		t.Fatalf("custom properties after alter: %s", got)
	}
	if len(r.body["columns"].([]any)) != 2 {
		t.Fatalf("the refused mixed alter added a column: %s", r.raw)
	}
	r = n.must(t, 200, call{method: "PATCH", path: tbl, body: map[string]any{"add_columns": addEmail}})
	if got := jsonOf(t, r.body["columns"]); !strings.Contains(got, `{"comment":"added","name":"email","type":"STRING"}`) {
		t.Fatalf("columns after alter: %s", got)
	}
	if r.body["schema_id"].(float64) < 2 {
		t.Fatalf("adding a column made no new schema: %s", r.raw)
	}
	// The old row reads NULL in the new column; a new row can set it.
	n.must(t, 200, call{method: "POST", path: tbl + "/rows", body: map[string]any{"rows": []any{map[string]any{"id": 2, "name": "b", "email": "b@x"}}}})
	r = n.must(t, 200, call{method: "POST", path: tbl + "/lookup", body: map[string]any{"keys": []any{map[string]any{"id": 1}, map[string]any{"id": 2}}}})
	if got := jsonOf(t, r.body["rows"]); got != `[{"email":null,"id":1,"name":"a"},{"email":"b@x","id":2,"name":"b"}]` {
		t.Fatalf("rows after add column: %s", got)
	}
	r = n.must(t, 200, call{method: "GET", path: tbl + "/scan"})
	if got := jsonOf(t, r.body["rows"]); !strings.Contains(got, `{"email":null,"id":1,"name":"a"}`) || !strings.Contains(got, `{"email":"b@x","id":2,"name":"b"}`) {
		t.Fatalf("scan after add column: %s", got)
	}

	// Refusals: nothing to change, a bad type, a NOT NULL column, a table option Fluss does
	// not alter, an unknown table — and none of them changes the table.
	n.refused(t, 400, 56, call{method: "PATCH", path: tbl, body: map[string]any{}})
	n.refused(t, 400, 56, call{method: "PATCH", path: tbl, body: map[string]any{"set": map[string]string{"x": "1"}, "reset": []string{"x"}}})
	n.refused(t, 400, 56, call{method: "PATCH", path: tbl, body: map[string]any{"add_columns": []any{col("c", "NOPE")}}})
	n.refused(t, 400, 56, call{method: "PATCH", path: tbl, body: map[string]any{"add_columns": []any{col("c", "INT NOT NULL")}}})
	n.refused(t, 400, 56, call{method: "PATCH", path: tbl, body: map[string]any{"set": map[string]string{"table.replication.factor": "3"}}})
	n.refused(t, 404, 7, call{method: "PATCH", path: api + "/databases/alt/tables/nope", body: map[string]any{"set": map[string]string{"a": "b"}}})
	n.must(t, 204, call{method: "PATCH", path: api + "/databases/alt/tables/nope", body: map[string]any{"set": map[string]string{"a": "b"}, "ignore_if_not_exists": true}})
	r = n.must(t, 200, call{method: "GET", path: tbl})
	if got := jsonOf(t, r.body["custom_properties"]); got != `{"owner":"data"}` || len(r.body["columns"].([]any)) != 3 {
		t.Fatalf("a refused alter changed the table: %s", r.raw)
	}
}

func TestACLs(t *testing.T) {
	n := startNode(t, func(c *config.Config) {
		c.SecurityProtocolMap = map[string]string{"FLUSS": "SASL"}
		c.PlainJAASConfig = jaas
		for k, v := range map[string]string{"authorizer.enabled": "true", "super.users": "User:admin", "internal.listener.name": "INTERNAL"} {
			if err := c.Set(k, v); err != nil {
				t.Fatal(err)
			}
		}
	})
	admin := func(c call) call { c.user, c.pass = "admin", "admin-secret"; return c }
	alice := func(c call) call { c.user, c.pass = "alice", "alice-secret"; return c }
	n.must(t, 201, admin(call{method: "POST", path: api + "/databases", body: map[string]any{"name": "sec"}}))
	n.must(t, 201, admin(call{method: "POST", path: api + "/databases/sec/tables", body: map[string]any{"name": "t", "columns": []any{col("id", "INT")}, "primary_key": []string{"id"}}}))
	lookup := call{method: "POST", path: api + "/databases/sec/tables/t/lookup", body: map[string]any{"keys": []any{map[string]any{"id": 1}}}}
	alter := call{method: "PATCH", path: api + "/databases/sec/tables/t", body: map[string]any{"set": map[string]string{"k": "v"}}}

	// Alice may neither manage ACLs nor see the table, nor alter it (ALTER is checked before
	// the table is looked up, as Fluss does).
	grant := call{method: "POST", path: api + "/acls", body: map[string]any{"acls": []any{
		map[string]any{"resource_type": "TABLE", "resource_name": "sec.t", "principal": "User:alice", "operation": "READ"}}}}
	n.refused(t, 403, 48, alice(grant))
	n.refused(t, 404, 7, alice(lookup))
	n.refused(t, 403, 48, alice(alter))
	n.refused(t, 401, 46, call{method: "GET", path: api + "/acls"})

	// The admin grants READ: alice can look up, still not alter (ALTER is its own right).
	r := n.must(t, 201, admin(grant))
	if got := jsonOf(t, r.body["acls"]); got != `[{"host":"*","operation":"READ","permission":"ALLOW","principal":"User:alice","resource_name":"sec.t","resource_type":"TABLE"}]` {
		t.Fatalf("created: %s", got)
	}
	n.must(t, 200, alice(lookup))
	n.refused(t, 403, 48, alice(alter))
	n.refused(t, 403, 48, alice(call{method: "DELETE", path: api + "/acls?principal=User:alice"}))
	n.must(t, 201, admin(call{method: "POST", path: api + "/acls", body: map[string]any{"acls": []any{
		map[string]any{"resource_type": "DATABASE", "resource_name": "sec", "principal": "alice", "operation": "ALTER"}}}}))
	n.must(t, 200, alice(alter))

	// Listing with filters.
	r = n.must(t, 200, admin(call{method: "GET", path: api + "/acls?principal=User:alice"}))
	if len(r.body["acls"].([]any)) != 2 {
		t.Fatalf("alice's ACLs: %s", r.raw)
	}
	r = n.must(t, 200, admin(call{method: "GET", path: api + "/acls?resource_type=table&operation=READ"}))
	if got := jsonOf(t, r.body["acls"]); !strings.Contains(got, `"sec.t"`) || strings.Contains(got, `"ALTER"`) {
		t.Fatalf("table READ ACLs: %s", got)
	}
	n.must(t, 200, alice(call{method: "GET", path: api + "/acls"})) // allowed, sees none
	n.refused(t, 400, 39, admin(call{method: "GET", path: api + "/acls?operation=FLY"}))
	n.refused(t, 400, 39, admin(call{method: "GET", path: api + "/acls?resource_name=sec"}))

	// Malformed bindings create nothing.
	for _, bad := range []map[string]any{
		{"resource_type": "TABLE", "resource_name": "sec.t", "principal": "User:bob"},                    // no operation
		{"resource_type": "ANY", "resource_name": "sec.t", "principal": "User:bob", "operation": "READ"}, // ANY resource
		{"resource_type": "TABLE", "principal": "User:bob", "operation": "READ"},                         // no name
		{"resource_type": "TABLE", "resource_name": "sec.t", "principal": ":bob", "operation": "READ"},   // bad principal
		{"resource_type": "TABLE", "resource_name": "sec.t", "operation": "READ", "permission": "DENY"},  // bad permission
	} {
		n.refused(t, 400, 39, admin(call{method: "POST", path: api + "/acls", body: map[string]any{"acls": []any{
			map[string]any{"resource_type": "TABLE", "resource_name": "sec.t", "principal": "User:bob", "operation": "WRITE"}, bad}}}))
	}
	n.refused(t, 400, 39, admin(call{method: "POST", path: api + "/acls", body: map[string]any{"acls": []any{}}}))
	if r := n.must(t, 200, admin(call{method: "GET", path: api + "/acls?principal=User:bob"})); len(r.body["acls"].([]any)) != 0 {
		t.Fatalf("a refused create left ACLs: %s", r.raw)
	}

	// Dropping: an empty filter needs all=true; a filter drops what matches.
	n.refused(t, 400, 39, admin(call{method: "DELETE", path: api + "/acls"}))
	r = n.must(t, 200, admin(call{method: "DELETE", path: api + "/acls?principal=User:alice&operation=READ"}))
	if got := jsonOf(t, r.body["dropped"]); !strings.Contains(got, `"READ"`) || strings.Contains(got, `"ALTER"`) {
		t.Fatalf("dropped: %s", got)
	}
	n.refused(t, 403, 48, alice(lookup)) // she still sees the table: ALTER on its database implies DESCRIBE
	r = n.must(t, 200, admin(call{method: "DELETE", path: api + "/acls?all=true"}))
	if len(r.body["dropped"].([]any)) != 1 {
		t.Fatalf("drop all: %s", r.raw)
	}
}

// Without an authorizer there are no ACLs to manage: SECURITY_DISABLED, a 400.
func TestACLsNeedAnAuthorizer(t *testing.T) {
	n := startNode(t, nil)
	n.refused(t, http.StatusBadRequest, 47, call{method: "GET", path: api + "/acls"})
}
