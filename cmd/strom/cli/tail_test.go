package cli

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
)

// --exit-at-end prints what every bucket held at the start and exits by itself: no --limit
// or --idle (a tail that did not stop would run into the test's deadline and fail).
func TestTailExitAtEnd(t *testing.T) {
	c := newCLI(t)
	c.createEvents()
	if out := c.ok("", "tail", "ev", "--from", "earliest", "-e"); out != "" {
		t.Errorf("-e on an empty table printed %q", out)
	}
	c.ok(eventsCSV(7, 0), "produce", "ev")
	if n := len(rows(t, c.ok("", "tail", "ev", "--from", "earliest", "--exit-at-end", "--json"))); n != 7 {
		t.Errorf("--exit-at-end printed %d records, want 7", n)
	}
	if out := c.ok("", "tail", "ev", "-e"); out != "" {
		t.Errorf("-e from latest printed %q, want nothing", out)
	}
	var offsets []bucketOffsets
	if err := json.Unmarshal([]byte(c.ok("", "offsets", "ev", "--json")), &offsets); err != nil {
		t.Fatal(err)
	}
	for _, o := range offsets {
		if n := len(rows(t, c.ok("", "tail", "ev", "--from", "earliest", "-e", "--bucket", itoa(o.Bucket), "--json"))); int64(n) != o.Records {
			t.Errorf("-e of bucket %d printed %d records, want %d", o.Bucket, n, o.Records)
		}
	}
	c.ok("", "table", "create", "clicks", "-c", "dt:STRING", "-c", "url:STRING", "--partition-key", "dt", "--buckets", "2")
	c.ok(`{"dt": "a", "url": "/1"}`+"\n"+`{"dt": "b", "url": "/2"}`+"\n"+`{"dt": "b", "url": "/3"}`+"\n", "produce", "clicks", "--create-partitions")
	if n := len(rows(t, c.ok("", "tail", "clicks", "--from", "earliest", "-e", "--json"))); n != 3 {
		t.Errorf("-e on a partitioned table printed %d records, want 3", n)
	}
}

// --format prints each record by its template (testdata/tail_format.golden).
func TestTailFormat(t *testing.T) {
	c := newCLI(t)
	c.createShop()
	c.ok(`{"id": 1, "item": "tea", "price": "3.50", "ts": 1767323045678}`+"\n"+`{"id": 1, "item": "green tea"}`+"\n", "produce", "shop.orders")
	out := c.ok("", "tail", "shop.orders", "--from", "earliest", "-e",
		"-f", `%t b=%b o=%o p=%p key=%k item=%{item} price=%{price} 100%%\t%v\n`)
	golden(t, "tail_format.golden", out)
	times := c.ok("", "tail", "shop.orders", "--from", "earliest", "-e", "-f", `%d %T\n`)
	if !regexp.MustCompile(`^(\d{13} \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z\n){3}$`).MatchString(times) {
		t.Errorf("%%d %%T: %q", times)
	}
	c.ok(`{"kind": "click"}`+"\n", "produce", "shop.events")
	if out := c.ok("", "tail", "shop.events", "--from", "earliest", "-e", "-f", `%k|%{kind}|%{at}\n`); out != "{}|click|NULL\n" {
		t.Errorf("log table: %q", out)
	}
	for _, bad := range []string{"%q", "%{nope}", "%{item", "trailing %"} {
		if r := c.run("", "tail", "shop.orders", "-e", "-f", bad); r.code != ExitUsage || !strings.Contains(r.err, "--format") {
			t.Errorf("tail -f %q: exit %d, %q; want a usage error", bad, r.code, r.err)
		}
	}
}
