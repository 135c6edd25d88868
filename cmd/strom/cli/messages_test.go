package cli

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// Messages about bad values and wrong ports name the line, column, value and the form
// wanted, and no Go parser's words; testdata/bad_values.golden holds them.
func TestGoldenBadValueMessages(t *testing.T) {
	c := newCLI(t)
	c.ok("", "table", "create", "people", "-c", "id:INT", "-c", "age:INT", "-c", "small:TINYINT", "-c", "born:DATE",
		"-c", "seen:TIMESTAMP_LTZ(3)", "-c", "at:TIMESTAMP(3)", "-c", "ok:BOOLEAN", "-c", "pic:BYTES",
		"-c", "score:DECIMAL(5,2)", "-c", "tags:ARRAY<INT>", "--primary-key", "id", "--buckets", "1")
	var got strings.Builder
	for _, tc := range []struct {
		in   string
		args []string
	}{
		{"id,age\n1,30\n2,thirty\n", []string{"produce", "people", "--format", "csv"}},
		{"id,small\n1,300\n", []string{"produce", "people", "--format", "csv"}},
		{"id,born\n1,not-a-date\n", []string{"produce", "people", "--format", "csv"}},
		{"id,seen\n1,yesterday\n", []string{"produce", "people", "--format", "csv"}},
		{"id,at\n1,2026-13-01T00:00:00\n", []string{"produce", "people", "--format", "csv"}},
		{"id,ok\n1,maybe\n", []string{"produce", "people", "--format", "csv"}},
		{"id,pic\n1,***\n", []string{"produce", "people", "--format", "csv"}},
		{"id,score\n1,1.2.3\n", []string{"produce", "people", "--format", "csv"}},
		{"id,tags\n1,\"[1,\"\"ten\"\"]\"\n", []string{"produce", "people", "--format", "csv"}},
		{`{"id": 1, "age": "ten"}` + "\n", []string{"produce", "people"}},
		{`{"id": 1, "age": true}` + "\n", []string{"produce", "people"}},
		{`{"id": 1, "born": "2026-02-30"}` + "\n", []string{"produce", "people"}},
		{"", []string{"lookup", "people", "id=ten"}},
		{"id,age\n1,3\"0\n", []string{"produce", "people", "--format", "csv"}},
		{"id,age\n1,\"30\n", []string{"produce", "people", "--format", "csv"}},
	} {
		r := c.run(tc.in, tc.args...)
		got.WriteString("$ strom " + strings.Join(tc.args, " ") + "\n" + r.err)
		for _, internal := range []string{"strconv", "parsing time", "invalid syntax", "illegal base64"} {
			if strings.Contains(r.err, internal) {
				t.Errorf("strom %s: message shows Go internals (%s): %s", strings.Join(tc.args, " "), internal, r.err)
			}
		}
	}
	golden(t, "bad_values.golden", got.String())
}

// Pointed at an HTTP listener (Strom's metrics port), the CLI says so instead of reporting
// a frame length of 1213486160 bytes ("HTTP").
func TestHTTPPortIsNamed(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) }))
	defer srv.Close()
	c := &cli{t: t, bootstrap: strings.TrimPrefix(srv.URL, "http://")}
	r := c.run("", "db", "ls", "--timeout", "5s")
	want := "is an HTTP port, not a Fluss RPC port (try 9123"
	if r.code != ExitUnreachable || !strings.Contains(r.err, want) || strings.Contains(r.err, "1213486160") {
		t.Errorf("db ls against an HTTP port: exit %d, %q; want exit %d and %q", r.code, r.err, ExitUnreachable, want)
	}
}

// lookup's table tells the string "NULL" from a NULL, and a value with line breaks or tabs
// stays on its row (testdata/lookup_awkward.golden).
func TestGoldenLookupAwkwardStrings(t *testing.T) {
	c := newCLI(t)
	c.ok("", "table", "create", "notes", "-c", "id:INT", "-c", "a:STRING", "-c", "b:STRING", "-c", "c:STRING",
		"-c", "d:STRING", "-c", "e:STRING", "-c", "f:ARRAY<STRING>", "--primary-key", "id", "--buckets", "1", "--comment", "two\nlines")
	c.ok(`{"id": 1, "a": "NULL", "b": null, "c": "two\nlines\tand a tab", "d": "", "e": "plain text", "f": ["x\ny"]}`+"\n", "produce", "notes")
	out := c.ok("", "lookup", "notes", "id=1")
	golden(t, "lookup_awkward.golden", out)
	if desc := c.ok("", "table", "describe", "notes"); !strings.Contains(desc, `two\nlines`) {
		t.Errorf("describe breaks a comment with a line break over lines:\n%s", desc)
	}
}

// A misspelt table or database name gets the nearest existing one suggested; a name near
// nothing gets no guess.
func TestDidYouMean(t *testing.T) {
	c := newCLI(t)
	c.createShop()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"table", "describe", "shop.ordrs"}, "(did you mean shop.orders?)"},
		{[]string{"tail", "shop.Orders", "-e"}, "(did you mean shop.orders?)"},
		{[]string{"lookup", "shop.order", "id=1"}, "(did you mean shop.orders?)"},
		{[]string{"offsets", "shop.evnts"}, "(did you mean shop.events?)"},
		{[]string{"table", "drop", "shop.event"}, "(did you mean shop.events?)"},
		{[]string{"produce", "shp.orders"}, "(did you mean database shop?)"},
		{[]string{"table", "ls", "shp"}, "(did you mean database shop?)"},
		{[]string{"table", "describe", "shop.zzzzzzzz"}, ""},
	} {
		r := c.run("", tc.args...)
		if r.code != ExitNotFound || (tc.want != "" && !strings.Contains(r.err, tc.want)) || (tc.want == "" && strings.Contains(r.err, "did you mean")) {
			t.Errorf("strom %s: exit %d, %q; want exit %d and %q", strings.Join(tc.args, " "), r.code, r.err, ExitNotFound, tc.want)
		}
	}
}
