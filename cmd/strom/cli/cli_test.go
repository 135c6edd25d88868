package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/stromdb/strom/fluss/flusstest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// cli runs strom commands against one in-process server.
type cli struct {
	t         *testing.T
	bootstrap string
}

func newCLI(t *testing.T) *cli {
	t.Helper()
	return &cli{t: t, bootstrap: flusstest.Start(t, nil).Bootstrap}
}

type result struct {
	out, err string
	code     int
}

// run runs one command line with stdin as input.
func (c *cli) run(stdin string, args ...string) result {
	c.t.Helper()
	var out, errb bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	code := Run(ctx, append([]string{"--bootstrap", c.bootstrap}, args...), Streams{In: strings.NewReader(stdin), Out: &out, Err: &errb})
	return result{out: out.String(), err: errb.String(), code: code}
}

// ok runs a command that must succeed and returns its stdout.
func (c *cli) ok(stdin string, args ...string) string {
	c.t.Helper()
	r := c.run(stdin, args...)
	if r.code != 0 {
		c.t.Fatalf("strom %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.code, r.out, r.err)
	}
	return r.out
}

var (
	timeRE  = regexp.MustCompile(`("timestamp":|"created": |"modified": |Created:\s+)"?[0-9TZ:.-]+"?`)
	tableID = regexp.MustCompile(`("table_id": |Table id:\s+)\d+`)
)

// normalize replaces what changes from run to run: creation and commit times, table ids.
func normalize(s string) string {
	s = timeRE.ReplaceAllString(s, "${1}<TIME>")
	return tableID.ReplaceAllString(s, "${1}<ID>")
}

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from the golden file:\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

func (c *cli) createShop() {
	c.t.Helper()
	c.ok("", "db", "create", "shop", "--comment", "web shop")
	c.ok("", "table", "create", "shop.orders",
		"-c", "id:BIGINT", "-c", "item:STRING", "-c", "price:DECIMAL(10,2)", "-c", "ts:TIMESTAMP_LTZ(3)",
		"--primary-key", "id", "--buckets", "1", "--comment", "orders of the shop")
	c.ok("", "table", "create", "shop.events", "-c", "at:TIMESTAMP(3)", "-c", "kind:STRING NOT NULL",
		"-c", "tags:ARRAY<STRING>", "--buckets", "2", "--property", "table.log.ttl=7d")
}

func TestGoldenListAndDescribe(t *testing.T) {
	c := newCLI(t)
	c.createShop()
	golden(t, "db_ls.golden", c.ok("", "db", "ls"))
	golden(t, "table_ls.golden", c.ok("", "table", "ls"))
	golden(t, "table_ls_json.golden", c.ok("", "table", "ls", "shop", "--json"))
	golden(t, "describe_orders.golden", normalize(c.ok("", "table", "describe", "shop.orders")))
	golden(t, "describe_events_json.golden", normalize(c.ok("", "table", "describe", "shop.events", "--json")))
}

func TestGoldenTailJSON(t *testing.T) {
	c := newCLI(t)
	c.createShop()
	in := `{"id": 1, "item": "tea", "price": "3.50", "ts": "2026-01-02T03:04:05.678Z"}
{"id": 2, "item": "cake", "price": 4, "ts": 1767323045678}
{"id": 1, "item": "green tea", "price": "3.90"}
{"change_type": "-D", "row": {"id": 2}}
`
	c.ok(in, "produce", "shop.orders")
	out := c.ok("", "tail", "shop.orders", "--from", "earliest", "--limit", "5", "--json")
	golden(t, "tail_orders_json.golden", normalize(out))
	// --limit stops exactly; --idle stops a follow when nothing arrives.
	if n := strings.Count(c.ok("", "tail", "shop.orders", "--from", "earliest", "--limit", "2", "--json"), "\n"); n != 2 {
		t.Errorf("--limit 2 printed %d lines", n)
	}
	if n := strings.Count(c.ok("", "tail", "shop.orders", "--from", "latest", "--idle", "300ms"), "\n"); n != 0 {
		t.Errorf("--from latest on an idle table printed %d lines", n)
	}
}

// rows returns the "row" objects of tail --json output, in offset order per bucket.
func rows(t *testing.T, tail string) []string {
	t.Helper()
	var out []string
	for line := range strings.Lines(tail) {
		var rec struct {
			Row json.RawMessage `json:"row"`
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("tail line %q: %v", line, err)
		}
		out = append(out, string(rec.Row))
	}
	return out
}

var awkwardColumns = []string{"id:INT", "s:STRING", "d:DECIMAL(38,10)", "ts:TIMESTAMP(9)", "ltz:TIMESTAMP_LTZ(6)", "day:DATE",
	"t:TIME(3)", "ok:BOOLEAN", "f:DOUBLE", "b:BYTES", "tags:ARRAY<STRING>", "m:MAP<STRING,INT>"}

func (c *cli) createAwkward(name string) {
	c.t.Helper()
	args := []string{"table", "create", name, "--primary-key", "id", "--buckets", "1"}
	for _, col := range awkwardColumns {
		args = append(args, "-c", col)
	}
	c.ok("", args...)
}

// The awkward values and their JSON form as tail prints them.
var awkwardRows = []string{
	`{"id":1,"s":"say \"hi\", then \"bye\"","d":"12345678901234567890.0123456789","ts":"2026-01-02T03:04:05.123456789","ltz":"2026-01-02T03:04:05.123456Z","day":"1970-01-01","t":"23:59:59.999","ok":true,"f":-0.5,"b":"AAEC/w==","tags":["a,b","\"q\"",""],"m":{"k 1":1,"ü":-2}}`,
	`{"id":2,"s":"Grüße, 世界 🎉\nsecond line","d":"-0.0000000001","ts":"1969-12-31T23:59:59.999","ltz":"1999-12-31T23:59:59Z","day":"2999-12-31","t":"00:00:00","ok":false,"f":1e+300,"b":"","tags":[],"m":{}}`,
	`{"id":3,"s":null,"d":null,"ts":null,"ltz":null,"day":null,"t":null,"ok":null,"f":null,"b":null,"tags":null,"m":null}`,
	`{"id":4,"s":"","d":"0.0000000000","ts":"2000-02-29T00:00:00","ltz":"2000-02-29T00:00:00Z","day":"2000-02-29","t":"12:00:00.5","ok":true,"f":"NaN","b":"/w==","tags":[null,"x"],"m":{"":0}}`,
}

const awkwardCSV = `id,s,d,ts,ltz,day,t,ok,f,b,tags,m
1,"say ""hi"", then ""bye""",12345678901234567890.0123456789,2026-01-02T03:04:05.123456789,2026-01-02T04:04:05.123456+01:00,1970-01-01,23:59:59.999,true,-0.5,AAEC/w==,"[""a,b"",""\""q\"""",""""]","{""k 1"":1,""ü"":-2}"
2,"Grüße, 世界 🎉
second line",-0.0000000001,1969-12-31 23:59:59.999,946684799000,2999-12-31,00:00:00,false,1e300,,[],{}
3,\N,\N,\N,\N,\N,\N,\N,\N,\N,\N,\N
4,,0,2000-02-29T00:00:00,2000-02-29T00:00:00Z,2000-02-29,12:00:00.5,TRUE,NaN,/w==,"[null,""x""]","{"""":0}"
`

func TestCSVRoundTrip(t *testing.T) {
	c := newCLI(t)
	c.ok("", "db", "create", "rt")
	c.createAwkward("rt.csv")
	c.ok(awkwardCSV, "produce", "rt.csv", "--format", "csv", "--null", `\N`)
	got := rows(t, c.ok("", "tail", "rt.csv", "--from", "earliest", "--limit", "4", "--json"))
	if strings.Join(got, "\n") != strings.Join(awkwardRows, "\n") {
		t.Errorf("CSV rows read back:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(awkwardRows, "\n"))
	}
}

func TestJSONLinesRoundTrip(t *testing.T) {
	c := newCLI(t)
	c.ok("", "db", "create", "rt")
	c.createAwkward("rt.a")
	c.createAwkward("rt.b")
	c.ok(strings.Join(awkwardRows, "\n")+"\n", "produce", "rt.a")
	tail := c.ok("", "tail", "rt.a", "--from", "earliest", "--limit", "4", "--json")
	if got := rows(t, tail); strings.Join(got, "\n") != strings.Join(awkwardRows, "\n") {
		t.Errorf("JSON rows read back:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(awkwardRows, "\n"))
	}
	// tail's own output replays into another table, deletes included.
	c.ok(`{"id":3}`+"\n", "produce", "rt.a")
	c.ok(`{"change_type":"-D","row":{"id":3}}`+"\n", "produce", "rt.a")
	all := c.ok("", "tail", "rt.a", "--from", "earliest", "--limit", "7", "--json")
	c.ok(all, "produce", "rt.b")
	if r := c.run("", "lookup", "rt.b", "id=3"); r.code != ExitNotFound {
		t.Errorf("lookup of the replayed delete: exit %d, %s", r.code, r.out)
	}
	if got := c.ok("", "lookup", "rt.b", "id=1", "--json"); !strings.Contains(got, `"d": "12345678901234567890.0123456789"`) {
		t.Errorf("lookup of a replayed row: %s", got)
	}
}

func TestLookupAndOffsets(t *testing.T) {
	c := newCLI(t)
	c.createShop()
	c.ok(`{"id": 7, "item": "mug", "price": "9.99"}`+"\n", "produce", "shop.orders")
	golden(t, "lookup_orders.golden", c.ok("", "lookup", "shop.orders", "id=7"))
	c.ok("kind,tags\nclick,\"[\"\"a\"\"]\"\nview,\n", "produce", "shop.events", "--format", "csv")
	golden(t, "offsets_orders.golden", c.ok("", "offsets", "shop.orders"))
	if got := c.ok("", "offsets", "shop.events", "--json"); !strings.Contains(got, `"records": 2`) && strings.Count(got, `"records": 1`) != 2 {
		t.Errorf("offsets of 2 rows in 2 buckets: %s", got)
	}
	out := c.ok("", "cluster", "--json")
	var cl struct {
		Servers []struct {
			Type  string
			Leads *int `json:"leader_buckets"`
		} `json:"servers"`
		Total int `json:"total_buckets"`
	}
	if err := json.Unmarshal([]byte(out), &cl); err != nil || len(cl.Servers) != 2 || cl.Total != 3 {
		t.Errorf("cluster --json = %s (%v)", out, err)
	}
	// The one tablet server leads every bucket; the coordinator leads none.
	for _, s := range cl.Servers {
		switch {
		case s.Type == "tablet" && (s.Leads == nil || *s.Leads != cl.Total):
			t.Errorf("tablet server leads %v buckets, want %d: %s", s.Leads, cl.Total, out)
		case s.Type == "coordinator" && s.Leads != nil:
			t.Errorf("coordinator reported as a bucket leader: %s", out)
		}
	}
}

func TestSchemaFileAndDescribeJSONRoundTrip(t *testing.T) {
	c := newCLI(t)
	dir := t.TempDir()
	yamlFile := filepath.Join(dir, "users.yaml")
	os.WriteFile(yamlFile, []byte(`columns:
  - {name: id, type: BIGINT}
  - {name: name, type: STRING, comment: display name}
  - {name: address, type: "ROW<street STRING, zip CHAR(5)>"}
primary_key: [id]
buckets: 3
comment: people
`), 0o644)
	c.ok("", "table", "create", "fluss.users", "--schema", yamlFile)
	desc := c.ok("", "table", "describe", "fluss.users", "--json")
	jsonFile := filepath.Join(dir, "users.json")
	os.WriteFile(jsonFile, []byte(desc), 0o644)
	c.ok("", "table", "create", "users_copy", "--schema", jsonFile)
	copyDesc := c.ok("", "table", "describe", "fluss.users_copy", "--json")
	strip := func(s string) string {
		s = normalize(s)
		return strings.Replace(s, `"table": "users_copy"`, `"table": "users"`, 1)
	}
	if strip(desc) != strip(copyDesc) {
		t.Errorf("table created from describe --json differs:\n%s\nvs\n%s", desc, copyDesc)
	}
	for _, want := range []string{`"type": "ROW<`, `"comment": "display name"`, `"buckets": 3`} {
		if !strings.Contains(desc, want) {
			t.Errorf("describe --json lacks %s:\n%s", want, desc)
		}
	}
}

func TestExitCodesAndMessages(t *testing.T) {
	c := newCLI(t)
	c.createShop()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	for _, tc := range []struct {
		args []string
		in   string
		code int
		msg  string
	}{
		{[]string{"table", "describe", "shop.nope"}, "", ExitNotFound, "strom table ls"},
		{[]string{"table", "ls", "nodb"}, "", ExitNotFound, "strom db create"},
		{[]string{"lookup", "shop.orders", "id=404"}, "", ExitNotFound, "no row"},
		{[]string{"lookup", "shop.orders", "item=x"}, "", ExitUsage, "missing id=VALUE"},
		{[]string{"lookup", "shop.events", "kind=x"}, "", ExitFailure, "log table"},
		{[]string{"table", "create", "shop.orders", "-c", "id:INT"}, "", ExitFailure, "--if-not-exists"},
		{[]string{"table", "create", "shop.x", "-c", "id:INTEGR"}, "", ExitUsage, "unknown type INTEGR"},
		{[]string{"db", "drop", "shop"}, "", ExitFailure, "--cascade"},
		{[]string{"table", "frobnicate"}, "", ExitUsage, ""},
		{[]string{"produce", "shop.orders"}, "{\"id\": 1}\n{\"id\": \"x\"}\n", ExitFailure, `line 2, column "id": "x" is not a BIGINT`},
		{[]string{"produce", "shop.orders"}, "{\"idd\": 1}\n", ExitFailure, `no column "idd"`},
		{[]string{"produce", "shop.orders", "--format", "csv"}, "id,price\n1,abc\n", ExitFailure, `line 2, column "price": "abc" is not a DECIMAL(10, 2)`},
		{[]string{"tail", "shop.orders", "--from", "yesterday"}, "", ExitUsage, "--from"},
		{[]string{"db", "ls", "--bootstrap", closed, "--timeout", "2s"}, "", ExitUnreachable, "strom serve"},
	} {
		r := c.run(tc.in, tc.args...)
		if r.code != tc.code || !strings.Contains(r.err, tc.msg) {
			t.Errorf("strom %s: exit %d, stderr %q; want exit %d mentioning %q", strings.Join(tc.args, " "), r.code, r.err, tc.code, tc.msg)
		}
	}
}

// Every command has a --help with examples.
func TestEveryCommandHasExamples(t *testing.T) {
	root := (&app{}).rootCommand()
	var walk func(*cobra.Command)
	walk = func(cmd *cobra.Command) {
		if cmd.Hidden || cmd.Name() == "help" || strings.HasPrefix(cmd.CommandPath(), "strom completion") {
			return
		}
		if cmd.Example == "" {
			t.Errorf("%s has no examples", cmd.CommandPath())
		}
		for _, sub := range cmd.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

func TestCompletionScripts(t *testing.T) {
	for _, shell := range []string{"bash", "zsh", "fish"} {
		var out bytes.Buffer
		if code := Run(context.Background(), []string{"completion", shell}, Streams{In: strings.NewReader(""), Out: &out, Err: &out}); code != 0 || !strings.Contains(out.String(), "strom") {
			t.Errorf("completion %s: exit %d, %d bytes", shell, code, out.Len())
		}
	}
}

func TestPartitionedTable(t *testing.T) {
	c := newCLI(t)
	c.ok("", "table", "create", "clicks", "-c", "dt:STRING", "-c", "url:STRING", "--partition-key", "dt", "--buckets", "1")
	in := `{"dt": "2026-01-01", "url": "/a"}` + "\n" + `{"dt": "2026-01-02", "url": "/b"}` + "\n"
	if r := c.run(in, "produce", "clicks"); r.code != ExitNotFound || !strings.Contains(r.err, "--create-partitions") {
		t.Errorf("produce into a missing partition: exit %d, %s", r.code, r.err)
	}
	c.ok(in, "produce", "clicks", "--create-partitions")
	var offsets []bucketOffsets
	if err := json.Unmarshal([]byte(c.ok("", "offsets", "clicks", "--json")), &offsets); err != nil {
		t.Fatal(err)
	}
	if len(offsets) != 2 || offsets[0].Partition != "2026-01-01" || offsets[0].Records != 1 || offsets[1].Partition != "2026-01-02" || offsets[1].Records != 1 {
		t.Errorf("offsets = %+v", offsets)
	}
	tail := c.ok("", "tail", "clicks", "--from", "earliest", "--limit", "2", "--json")
	for _, want := range []string{`"partition":"2026-01-01","bucket":0,"offset":0`, `"partition":"2026-01-02","bucket":0,"offset":0`} {
		if !strings.Contains(tail, want) {
			t.Errorf("tail lacks %s:\n%s", want, tail)
		}
	}
}
