package rest_test

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
)

// curlCommand is one curl invocation of a docs block, as the test replays it.
type curlCommand struct {
	line         string // its words, for failure messages
	method, path string
	body         string
}

// curlCommands reads the shell block that follows heading in a Markdown file and parses its
// curl commands: single quotes (across lines), backslash-newline continuations, comments;
// the flags -s, -N (ignored), -X METHOD, -d BODY (POST unless -X says otherwise) and a URL
// on localhost:9249.
func curlCommands(t *testing.T, file, heading string) []curlCommand {
	t.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	i := strings.Index(doc, "\n"+heading+"\n")
	if i < 0 {
		t.Fatalf("%s has no heading %q", file, heading)
	}
	doc = doc[i:]
	start := strings.Index(doc, "```sh\n")
	end := strings.Index(doc[start+6:], "\n```")
	if start < 0 || end < 0 {
		t.Fatalf("%s: no sh block after %q", file, heading)
	}
	block := doc[start+6 : start+6+end+1]

	var cmds [][]string
	var words []string
	var word strings.Builder
	inWord, quoted, comment := false, false, false
	flush := func() {
		if inWord {
			words = append(words, word.String())
			word.Reset()
			inWord = false
		}
	}
	for j := 0; j < len(block); j++ {
		c := block[j]
		if comment {
			if c == '\n' {
				comment = false
			}
			continue
		}
		switch {
		case quoted && c == '\'':
			quoted = false
		case quoted:
			word.WriteByte(c)
		case c == '\'':
			quoted, inWord = true, true
		case c == '\\' && j+1 < len(block) && block[j+1] == '\n':
			j++
			flush()
		case c == '#' && !inWord && len(words) == 0:
			comment = true
		case c == ' ' || c == '\t':
			flush()
		case c == '\n':
			flush()
			if len(words) > 0 {
				cmds = append(cmds, words)
			}
			words = nil
		default:
			word.WriteByte(c)
			inWord = true
		}
	}
	if quoted {
		t.Fatalf("%s: unbalanced quote in the block after %q", file, heading)
	}
	var out []curlCommand
	for _, ws := range cmds {
		line := strings.Join(ws, " ")
		if ws[0] != "curl" {
			t.Fatalf("%s: not a curl command: %q", file, line)
		}
		c := curlCommand{line: line}
		for a := 1; a < len(ws); a++ {
			switch w := ws[a]; {
			case w == "-X":
				a++
				c.method = ws[a]
			case w == "-d":
				a++
				c.body = ws[a]
			case strings.HasPrefix(w, "-") && strings.Trim(w, "-sN") == "":
			case strings.HasPrefix(w, "localhost:9249/"):
				c.path = strings.TrimPrefix(w, "localhost:9249")
			default:
				t.Fatalf("%s: %q: argument %q is not one this test replays", file, line, w)
			}
		}
		if c.method == "" {
			c.method = "GET"
			if c.body != "" {
				c.method = "POST"
			}
		}
		out = append(out, c)
	}
	return out
}

// ndjsonLines decodes a tail answer of one JSON object per line.
func ndjsonLines(t *testing.T, raw []byte) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("tail line %q: %v", l, err)
		}
		out = append(out, m)
	}
	return out
}

// TestCurlWalkthrough replays docs/rest.md's walkthrough, exactly as curl sends it (form
// content type included), and checks each answer.
func TestCurlWalkthrough(t *testing.T) {
	n := startNode(t, nil)
	cmds := curlCommands(t, "../../docs/rest.md", "## Walkthrough with curl")
	replies := make([]reply, len(cmds))
	for i, c := range cmds {
		cl := call{method: c.method, path: c.path}
		if c.body != "" {
			cl.body, cl.contentType = c.body, "application/x-www-form-urlencoded"
		}
		replies[i] = n.do(t, cl)
		if replies[i].status >= 300 {
			t.Fatalf("step %d, %s: status %d: %s", i, c.line, replies[i].status, replies[i].raw)
		}
	}
	// want checks step i: its status and, if check is set, its answer.
	want := func(i, status int, what string, check func(r reply) bool) {
		t.Helper()
		if i >= len(replies) {
			t.Fatalf("the walkthrough has %d steps, step %d (%s) is missing", len(replies), i, what)
		}
		if r := replies[i]; r.status != status || (check != nil && !check(r)) {
			t.Errorf("step %d (%s), %s: status %d: %s", i, what, cmds[i].line, r.status, r.raw)
		}
	}
	rowsAre := func(s string) func(r reply) bool {
		return func(r reply) bool { return jsonOf(t, r.body["rows"]) == s }
	}
	want(0, 201, "create database", nil)
	want(1, 201, "create table", func(r reply) bool { return r.body["bucket_count"].(float64) == 3 })
	want(2, 200, "table info", func(r reply) bool { return jsonOf(t, r.body["primary_key"]) == `["id"]` })
	want(3, 200, "upsert two", func(r reply) bool { return r.body["rows_written"].(float64) == 2 })
	want(4, 200, "upsert one", nil)
	want(5, 200, "delete", nil)
	want(6, 200, "lookup", rowsAre(`[{"age":25,"id":1,"name":"Alice"},null]`))
	want(7, 200, "partial update", nil)
	want(8, 200, "lookup after the partial update", rowsAre(`[{"age":27,"id":1,"name":"Alice"}]`))
	want(9, 200, "changelog", func(r reply) bool {
		var types []string
		for _, l := range ndjsonLines(t, r.raw) {
			types = append(types, l["change_type"].(string))
		}
		slices.Sort(types)
		return jsonOf(t, types) == `["+I","+I","+I","+U","-D","-U"]`
	})
	want(10, 200, "scan of bucket 0", func(r reply) bool {
		for _, row := range r.body["rows"].([]any) {
			if id := row.(map[string]any)["id"].(float64); id != 1 && id != 3 {
				return false
			}
		}
		return true
	})
	want(11, 200, "scan", func(r reply) bool {
		got := jsonOf(t, r.body["rows"])
		return len(r.body["rows"].([]any)) == 2 && strings.Contains(got, `{"age":27,"id":1,"name":"Alice"}`) &&
			strings.Contains(got, `{"age":35,"id":3,"name":"Charlie"}`)
	})
	want(12, 201, "create a log table", nil)
	want(13, 200, "append", func(r reply) bool { return r.body["rows_written"].(float64) == 2 })
	want(14, 200, "tail", func(r reply) bool {
		ls := ndjsonLines(t, r.raw)
		return len(ls) == 2 && ls[0]["change_type"] == "+A" && jsonOf(t, ls[0]["row"]) == `{"kind":"login","user_id":1}` &&
			jsonOf(t, ls[1]["row"]) == `{"kind":"view","user_id":3}`
	})
	want(15, 200, "latest offsets", func(r reply) bool { return jsonOf(t, r.body["buckets"]) == `[{"bucket":0,"offset":2}]` })
	want(16, 204, "drop table", nil)
	want(17, 204, "drop database", nil)
	want(18, 200, "databases", func(r reply) bool { return !strings.Contains(jsonOf(t, r.body["databases"]), `"shop"`) })
	if len(replies) != 19 {
		t.Errorf("the walkthrough has %d steps; this test checks 19", len(replies))
	}
}

// A partial update names its columns; it needs a primary-key table and rows of only those
// columns, and leaves the other columns as they were.
func TestPartialUpdate(t *testing.T) {
	n := startNode(t, nil)
	n.createDB(t, "pu")
	n.createTable(t, "pu", map[string]any{"name": "t", "columns": []any{col("id", "INT"), col("a", "STRING"), col("b", "INT")}, "primary_key": []string{"id"}})
	n.createTable(t, "pu", map[string]any{"name": "log", "columns": []any{col("id", "INT")}})
	p := api + "/databases/pu/tables/t"
	n.must(t, 200, call{method: "POST", path: p + "/rows", body: map[string]any{"rows": []any{map[string]any{"id": 1, "a": "x", "b": 1}}}})
	n.must(t, 200, call{method: "POST", path: p + "/rows", body: map[string]any{"columns": []string{"id", "b"}, "rows": []any{map[string]any{"id": 1, "b": 2}}}})
	r := n.must(t, 200, call{method: "POST", path: p + "/lookup", body: map[string]any{"keys": []any{map[string]any{"id": 1}}}})
	if got := jsonOf(t, r.body["rows"]); got != `[{"a":"x","b":2,"id":1}]` {
		t.Fatalf("after the partial update: %s", got)
	}
	n.refused(t, 400, 20, call{method: "POST", path: api + "/databases/pu/tables/log/rows", body: map[string]any{"columns": []string{"id"}, "rows": []any{map[string]any{"id": 1}}}})
	n.refused(t, 400, 35, call{method: "POST", path: p + "/rows", body: map[string]any{"columns": []string{"id", "b"}, "rows": []any{map[string]any{"id": 1, "a": "y"}}}})
	n.refused(t, 400, 35, call{method: "POST", path: p + "/rows", body: map[string]any{"columns": []string{"a"}, "rows": []any{map[string]any{"a": "y"}}}}) // no primary key
	r = n.must(t, 200, call{method: "POST", path: p + "/lookup", body: map[string]any{"keys": []any{map[string]any{"id": 1}}}})
	if got := jsonOf(t, r.body["rows"]); got != `[{"a":"x","b":2,"id":1}]` {
		t.Fatalf("a refused partial update changed the row: %s", got)
	}
}
