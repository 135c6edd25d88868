package rest_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

const api = "/api/v1"

func TestDatabasesAndTables(t *testing.T) {
	n := startNode(t, nil)
	n.createDB(t, "shop")
	n.refused(t, http.StatusConflict, 6, call{method: "POST", path: api + "/databases", body: map[string]any{"name": "shop"}})
	n.must(t, http.StatusCreated, call{method: "POST", path: api + "/databases", body: map[string]any{"name": "shop", "ignore_if_exists": true}})
	r := n.must(t, 200, call{method: "GET", path: api + "/databases"})
	if !strings.Contains(jsonOf(t, r.body["databases"]), `"shop"`) {
		t.Fatalf("databases: %s", r.raw)
	}
	n.refused(t, http.StatusNotFound, 4, call{method: "GET", path: api + "/databases/nope"})

	n.createTable(t, "shop", map[string]any{"name": "orders", "columns": []any{col("id", "BIGINT"), col("amount", "DECIMAL(10, 2)"), col("at", "TIMESTAMP_LTZ(3)")},
		"primary_key": []string{"id"}, "bucket_count": 3, "comment": "all orders", "properties": map[string]string{"table.replication.factor": "1"}})
	n.refused(t, http.StatusConflict, 8, call{method: "POST", path: api + "/databases/shop/tables", body: map[string]any{"name": "orders", "columns": []any{col("id", "INT")}}})
	r = n.must(t, 200, call{method: "GET", path: api + "/databases/shop/tables"})
	if got := jsonOf(t, r.body["tables"]); got != `["orders"]` {
		t.Fatalf("tables: %s", got)
	}
	r = n.must(t, 200, call{method: "GET", path: api + "/databases/shop"})
	if got := jsonOf(t, r.body["tables"]); got != `["orders"]` {
		t.Fatalf("database info tables: %s", got)
	}
	r = n.must(t, 200, call{method: "GET", path: api + "/databases/shop/tables/orders"})
	if r.body["bucket_count"].(float64) != 3 || r.body["comment"] != "all orders" || jsonOf(t, r.body["primary_key"]) != `["id"]` {
		t.Fatalf("table info: %s", r.raw)
	}
	if got := jsonOf(t, r.body["columns"]); got != `[{"name":"id","type":"BIGINT NOT NULL"},{"name":"amount","type":"DECIMAL(10, 2)"},{"name":"at","type":"TIMESTAMP_LTZ(3)"}]` {
		t.Fatalf("columns: %s", got)
	}
	r = n.must(t, 200, call{method: "GET", path: api + "/databases/shop/tables/orders/schema"})
	if r.body["schema_id"].(float64) != 1 || len(r.body["columns"].([]any)) != 3 {
		t.Fatalf("schema: %s", r.raw)
	}
	n.refused(t, http.StatusNotFound, 7, call{method: "GET", path: api + "/databases/shop/tables/nope"})
	n.refused(t, http.StatusBadRequest, 15, call{method: "POST", path: api + "/databases/shop/tables", body: map[string]any{"name": "bad", "columns": []any{col("x", "NUMBER(3)")}}})
	n.refused(t, http.StatusBadRequest, 15, call{method: "POST", path: api + "/databases/shop/tables", body: map[string]any{"name": "bad"}})

	n.refused(t, http.StatusConflict, 5, call{method: "DELETE", path: api + "/databases/shop"})
	n.must(t, http.StatusNoContent, call{method: "DELETE", path: api + "/databases/shop/tables/orders"})
	n.refused(t, http.StatusNotFound, 7, call{method: "DELETE", path: api + "/databases/shop/tables/orders"})
	n.must(t, http.StatusNoContent, call{method: "DELETE", path: api + "/databases/shop/tables/orders?ignore_if_not_exists=true"})
	n.createTable(t, "shop", map[string]any{"name": "again", "columns": []any{col("id", "INT")}})
	n.must(t, http.StatusNoContent, call{method: "DELETE", path: api + "/databases/shop?cascade=true"})
	n.refused(t, http.StatusNotFound, 4, call{method: "GET", path: api + "/databases/shop/tables"})
}

func TestPrimaryKeyRows(t *testing.T) {
	n := startNode(t, nil)
	n.createDB(t, "db")
	// Primary key (user, seq), bucketed by user: point lookups by the whole key, prefix
	// lookups by user.
	n.createTable(t, "db", map[string]any{"name": "events", "columns": []any{col("user", "STRING"), col("seq", "INT"), col("v", "DOUBLE"), col("tags", "ARRAY<STRING>")},
		"primary_key": []string{"user", "seq"}, "bucket_keys": []string{"user"}, "bucket_count": 2})
	p := api + "/databases/db/tables/events"
	r := n.must(t, 200, call{method: "POST", path: p + "/rows", body: map[string]any{"rows": []any{
		map[string]any{"user": "ann", "seq": 1, "v": 1.5, "tags": []string{"a"}},
		map[string]any{"user": "ann", "seq": 2, "v": 2.5},
		map[string]any{"user": "bob", "seq": 1, "v": -1},
	}}})
	if r.body["rows_written"].(float64) != 3 {
		t.Fatalf("write: %s", r.raw)
	}
	r = n.must(t, 200, call{method: "POST", path: p + "/lookup", body: map[string]any{"keys": []any{
		map[string]any{"user": "ann", "seq": 1}, map[string]any{"user": "zed", "seq": 1}}}})
	// Raw bytes: rows keep the table's column order.
	if !strings.Contains(string(r.raw), `"rows":[{"user":"ann","seq":1,"v":1.5,"tags":["a"]},null]`) {
		t.Fatalf("lookup: %s", r.raw)
	}
	r = n.must(t, 200, call{method: "POST", path: p + "/prefix-lookup", body: map[string]any{"prefixes": []any{map[string]any{"user": "ann"}, map[string]any{"user": "nobody"}}}})
	if got := jsonOf(t, r.body["results"]); !strings.Contains(got, `"seq":1`) || !strings.Contains(got, `"seq":2`) || !strings.HasSuffix(got, `,[]]`) {
		t.Fatalf("prefix lookup: %s", got)
	}
	// Upsert replaces, delete removes.
	n.must(t, 200, call{method: "POST", path: p + "/rows", body: map[string]any{"rows": []any{map[string]any{"user": "bob", "seq": 1, "v": 9}}}})
	r = n.must(t, 200, call{method: "POST", path: p + "/rows/delete", body: map[string]any{"keys": []any{map[string]any{"user": "ann", "seq": 2}}}})
	if r.body["rows_deleted"].(float64) != 1 {
		t.Fatalf("delete: %s", r.raw)
	}
	r = n.must(t, 200, call{method: "GET", path: p + "/scan?limit=10"})
	got := jsonOf(t, r.body["rows"])
	if len(r.body["rows"].([]any)) != 2 || !strings.Contains(got, `"v":9`) || strings.Contains(got, `"seq":2`) {
		t.Fatalf("scan after upsert and delete: %s", got)
	}
	r = n.must(t, 200, call{method: "GET", path: p + "/scan?limit=1"})
	if len(r.body["rows"].([]any)) != 1 {
		t.Fatalf("scan limit 1: %s", r.raw)
	}
	r = n.must(t, 200, call{method: "GET", path: p + "/buckets"})
	var rows, latest float64
	for _, b := range r.body["buckets"].([]any) {
		m := b.(map[string]any)
		rows += m["rows"].(float64)
		latest += m["latest_offset"].(float64)
		if m["leader"] == nil || jsonOf(t, m["replicas"]) != "[0]" {
			t.Fatalf("bucket without leader or replicas: %s", r.raw)
		}
		if jsonOf(t, m["isr"]) != "[0]" || jsonOf(t, m["followers"]) != "[]" { // the single node: no followers
			t.Fatalf("bucket's ISR and followers: %s", r.raw)
		}
	}
	if rows != 2 || latest != 6 { // 3 inserts, 1 update (-U +U), 1 delete
		t.Fatalf("buckets: rows %v latest offsets %v: %s", rows, latest, r.raw)
	}
	r = n.must(t, 200, call{method: "GET", path: p + "/offsets?spec=earliest"})
	if got := jsonOf(t, r.body["buckets"]); got != `[{"bucket":0,"offset":0},{"bucket":1,"offset":0}]` {
		t.Fatalf("earliest offsets: %s", got)
	}
	n.must(t, 200, call{method: "GET", path: p + "/offsets?spec=timestamp&timestamp=0"})
	n.refused(t, 400, 38, call{method: "GET", path: p + "/offsets?spec=timestamp"})
	n.refused(t, 400, 39, call{method: "GET", path: p + "/offsets?spec=sometime"})

	// Lookup keys must be exactly the key columns.
	n.refused(t, 400, 3, call{method: "POST", path: p + "/lookup", body: map[string]any{"keys": []any{map[string]any{"user": "ann"}}}})
	n.refused(t, 400, 3, call{method: "POST", path: p + "/lookup", body: map[string]any{"keys": []any{map[string]any{"user": "ann", "seq": 1, "v": 2}}}})
	n.refused(t, 400, 3, call{method: "POST", path: p + "/lookup", body: map[string]any{"keys": []any{}}})
	n.refused(t, 400, 35, call{method: "POST", path: p + "/prefix-lookup", body: map[string]any{"columns": []string{"nope"}, "prefixes": []any{map[string]any{"nope": 1}}}})
}

func TestLogRows(t *testing.T) {
	n := startNode(t, nil)
	n.createDB(t, "db")
	n.createTable(t, "db", map[string]any{"name": "clicks", "columns": []any{col("page", "STRING"), col("n", "INT"), col("day", "DATE")}})
	p := api + "/databases/db/tables/clicks"
	n.must(t, 200, call{method: "POST", path: p + "/rows", body: map[string]any{"rows": []any{
		map[string]any{"page": "/a", "n": 1, "day": "2026-01-02"}, map[string]any{"page": "/b", "n": 2}}}})

	// An Arrow IPC stream with the table's schema.
	schema := arrow.NewSchema([]arrow.Field{{Name: "page", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "n", Type: arrow.PrimitiveTypes.Int32, Nullable: true}, {Name: "day", Type: arrow.FixedWidthTypes.Date32, Nullable: true}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	b.Field(0).(*array.StringBuilder).AppendValues([]string{"/c", "/d"}, nil)
	b.Field(1).(*array.Int32Builder).AppendValues([]int32{3, 4}, nil)
	b.Field(2).(*array.Date32Builder).AppendNulls(2)
	rec := b.NewRecordBatch()
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(schema))
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	w.Close()
	r := n.must(t, 200, call{method: "POST", path: p + "/rows", body: buf.Bytes(), contentType: "application/vnd.apache.arrow.stream"})
	if r.body["rows_written"].(float64) != 2 {
		t.Fatalf("arrow write: %s", r.raw)
	}
	n.refused(t, 400, 3, call{method: "POST", path: p + "/rows", body: "not arrow", contentType: "application/vnd.apache.arrow.stream"})

	r = n.must(t, 200, call{method: "GET", path: p + "/scan?limit=100"})
	got := string(r.raw)
	for _, want := range []string{`{"page":"/a","n":1,"day":"2026-01-02"}`, `{"page":"/b","n":2,"day":null}`, `{"page":"/d","n":4,"day":null}`} {
		if !strings.Contains(got, want) {
			t.Fatalf("scan: %s lacks %s", got, want)
		}
	}
	n.refused(t, 400, 20, call{method: "POST", path: p + "/lookup", body: map[string]any{"keys": []any{map[string]any{"page": "/a"}}}})
	n.refused(t, 400, 20, call{method: "POST", path: p + "/rows/delete", body: map[string]any{"keys": []any{map[string]any{"page": "/a"}}}})
	n.refused(t, 400, 21, call{method: "GET", path: p + "/scan?bucket=7"})
	n.refused(t, 400, 37, call{method: "GET", path: p + "/scan?partition=x"})
}

func TestPartitionedTable(t *testing.T) {
	n := startNode(t, nil)
	n.createDB(t, "db")
	n.createTable(t, "db", map[string]any{"name": "logs", "columns": []any{col("dt", "STRING"), col("msg", "STRING")}, "partition_keys": []string{"dt"}})
	p := api + "/databases/db/tables/logs"
	n.must(t, 200, call{method: "POST", path: p + "/rows", body: map[string]any{"rows": []any{map[string]any{"dt": "2026-12-01", "msg": "hi"}}}})
	r := n.must(t, 200, call{method: "GET", path: p + "/partitions"})
	if got := jsonOf(t, r.body["partitions"]); !strings.Contains(got, `"partition":"2026-12-01"`) {
		t.Fatalf("partitions: %s", got)
	}
	n.refused(t, 400, 43, call{method: "GET", path: p + "/buckets"})
	n.refused(t, 404, 36, call{method: "GET", path: p + "/scan?partition=1999-01-01"})
	r = n.must(t, 200, call{method: "GET", path: p + "/buckets?partition=2026-12-01"})
	if got := jsonOf(t, r.body["buckets"]); !strings.Contains(got, `"latest_offset":1`) {
		t.Fatalf("partition buckets: %s", got)
	}
	r = n.must(t, 200, call{method: "GET", path: p + "/scan?partition=2026-12-01"})
	if got := jsonOf(t, r.body["rows"]); got != `[{"dt":"2026-12-01","msg":"hi"}]` {
		t.Fatalf("partition scan: %s", got)
	}
}

// readEvents reads SSE records from a tail until the stream ends.
func readEvents(t *testing.T, sc *bufio.Scanner) []map[string]any {
	t.Helper()
	var out []map[string]any
	event := ""
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			if event != "record" {
				t.Fatalf("event %q: %s", event, line)
			}
			var m map[string]any
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &m); err != nil {
				t.Fatal(err)
			}
			out = append(out, m)
		}
	}
	return out
}

func TestTail(t *testing.T) {
	n := startNode(t, nil)
	n.createDB(t, "db")
	n.createTable(t, "db", map[string]any{"name": "kv", "columns": []any{col("k", "INT"), col("v", "STRING")}, "primary_key": []string{"k"}})
	p := api + "/databases/db/tables/kv"
	n.must(t, 200, call{method: "POST", path: p + "/rows", body: map[string]any{"rows": []any{map[string]any{"k": 1, "v": "old"}}}})

	// From latest: only what is written after the stream opened.
	req, _ := http.NewRequestWithContext(t.Context(), "GET", n.base+p+"/tail?max_records=3", nil)
	resp, err := n.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("tail: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	sc := bufio.NewScanner(resp.Body)
	if !sc.Scan() || sc.Text() != ": tailing" { // subscribed: writes from now on are seen
		t.Fatalf("tail preamble: %q", sc.Text())
	}
	n.must(t, 200, call{method: "POST", path: p + "/rows", body: map[string]any{"rows": []any{map[string]any{"k": 1, "v": "new"}, map[string]any{"k": 2, "v": "two"}}}})
	evs := readEvents(t, sc)
	var kinds []string
	for _, e := range evs {
		kinds = append(kinds, e["change_type"].(string)+jsonOf(t, e["row"]))
	}
	want := `-U{"k":1,"v":"old"} +U{"k":1,"v":"new"} +I{"k":2,"v":"two"}`
	if strings.Join(kinds, " ") != want {
		t.Fatalf("tail records: %s\nwant %s", strings.Join(kinds, " "), want)
	}

	// From earliest, as JSON lines.
	r := n.must(t, 200, call{method: "GET", path: p + "/tail?from=earliest&format=ndjson&max_records=4"})
	lines := strings.Split(strings.TrimSpace(string(r.raw)), "\n")
	if len(lines) != 4 || !strings.Contains(lines[0], `"change_type":"+I"`) || !strings.Contains(lines[0], `"offset":0`) {
		t.Fatalf("ndjson tail: %s", r.raw)
	}
	n.refused(t, 400, 19, call{method: "GET", path: p + "/tail?from=yesterday"})
	n.refused(t, 400, 39, call{method: "GET", path: p + "/tail?format=xml"})
}

func TestCluster(t *testing.T) {
	n := startNode(t, nil)
	r := n.must(t, 200, call{method: "GET", path: api + "/cluster"})
	servers := r.body["servers"].([]any)
	if len(servers) != 2 || servers[0].(map[string]any)["type"] != "coordinator" || r.body["active_coordinator"].(float64) != 0 {
		t.Fatalf("cluster: %s", r.raw)
	}
	if h := r.body["health"].(map[string]any); h["status"] != "GREEN" {
		t.Fatalf("health: %s", r.raw)
	}
	// The node's own view: it is the active coordinator; its embedded etcd is the one member.
	if jsonOf(t, r.body["this_node"]) != `{"active_coordinator":true}` {
		t.Fatalf("this node: %s", r.raw)
	}
	members := r.body["etcd_members"].([]any)
	if len(members) != 1 || members[0].(map[string]any)["leader"] != true || members[0].(map[string]any)["name"] == "" {
		t.Fatalf("etcd members: %s", r.raw)
	}
}

// A table without lake tiering has no lake snapshot: the lake view says so rather than fail.
func TestLakeStateWithoutTiering(t *testing.T) {
	n := startNode(t, nil)
	n.createDB(t, "lk")
	n.createTable(t, "lk", map[string]any{"name": "t", "columns": []any{col("id", "INT")}})
	r := n.must(t, 200, call{method: "GET", path: api + "/databases/lk/tables/t/lake"})
	if r.body["datalake_enabled"] != false || r.body["snapshot_id"] != nil || jsonOf(t, r.body["buckets"]) != "[]" {
		t.Fatalf("lake state: %s", r.raw)
	}
	n.refused(t, 404, 7, call{method: "GET", path: api + "/databases/lk/tables/nope/lake"})
}
