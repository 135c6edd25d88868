package compare

import (
	"math"
	"strings"
	"testing"
)

func TestParseClientOutput(t *testing.T) {
	out := `SLF4J: some library chatter
{"client":"java","mode":"append","rows":1000,"seconds":0.5,"rows_per_sec":2000.0,"cpu_s":0.75}
  {"client":"java","mode":"lookup","rows":40,"seconds":1,"rows_per_sec":40,"cpu_s":0.1,"qps":40,"p50_ms":100.5,"p99_ms":120,"max_ms":130,"misses":0,"truncated":true}
{"mode":"scan","rows_per_sec":3e6,"qps":12,"p50_ms":1,"p99_ms":2,"bytes":5}
`
	m, err := ParseClientOutput(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{
		"append.rows_per_sec": 2000, "append.cpu_s": 0.75, "append.cpu_us_per_row": 750,
		"lookup.rows_per_sec": 40, "lookup.cpu_s": 0.1, "lookup.qps": 40, "lookup.p50_ms": 100.5, "lookup.p99_ms": 120, "lookup.truncated": 1,
		"lookup.cpu_us_per_row": 2500, // per lookup done, not per lookup asked for
		// strom bench -json lines have no cpu_s: the key is absent, not zero.
		"scan.rows_per_sec": 3e6, "scan.qps": 12, "scan.p50_ms": 1, "scan.p99_ms": 2,
	}
	if len(m) != len(want) {
		t.Errorf("got %d metrics %v, want %d", len(m), m, len(want))
	}
	for k, v := range want {
		if got, ok := m[k]; !ok || math.Abs(got-v) > 1e-9*v {
			t.Errorf("%s = %v (present %v), want %v", k, got, ok, v)
		}
	}
}

func TestParseClientOutputErrors(t *testing.T) {
	for name, out := range map[string]string{
		"broken JSON": `{"mode":"append","rows_per_sec":`,
		"no mode":     `{"rows_per_sec":5}`,
		"mode twice":  "{\"mode\":\"append\"}\n{\"mode\":\"append\"}",
		"wrong type":  `{"mode":"append","rows_per_sec":"fast"}`,
	} {
		if _, err := ParseClientOutput(strings.NewReader(out)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	// What came before a bad line is kept, so a failed client still reports its workloads.
	m, err := ParseClientOutput(strings.NewReader("{\"mode\":\"append\",\"rows_per_sec\":7}\n{oops"))
	if err == nil || m["append.rows_per_sec"] != 7 {
		t.Errorf("partial parse: %v, %v", m, err)
	}
}

var testClients = []Client{
	{Name: "go", Label: "Go"},
	{Name: "java", Label: "Java"},
	{Name: "wire", Label: "wire", NoRatio: true},
}

// clientSamples: two servers; on strom three rounds of go and java (java's second round
// failed after append), one of wire; on fluss one round of go only.
func clientSamples() []ClientSample {
	s := func(server, client string, round int, m map[string]float64) ClientSample {
		return ClientSample{Server: server, Sample: Sample{System: client, Round: round, Metrics: m}}
	}
	return []ClientSample{
		s("strom", "go", 1, map[string]float64{"append.rows_per_sec": 3e5, "append.cpu_us_per_row": 2, "lookup.p99_ms": 0.8, "lookup.qps": 1e4}),
		s("strom", "java", 1, map[string]float64{"append.rows_per_sec": 2e5, "append.cpu_us_per_row": 4, "lookup.p99_ms": 120, "lookup.qps": 40, "lookup.truncated": 1, "lookup.cpu_us_per_row": 30}),
		s("strom", "wire", 1, map[string]float64{"append.rows_per_sec": 2e6}),
		s("fluss", "go", 1, map[string]float64{"append.rows_per_sec": 1e5}),
		s("strom", "go", 2, map[string]float64{"append.rows_per_sec": 1e5, "append.cpu_us_per_row": 3}),
		{Server: "strom", Sample: Sample{System: "java", Round: 2, Metrics: map[string]float64{"append.rows_per_sec": 1e5}, Error: "java client: exit status 1\nstack"}},
		s("strom", "go", 3, map[string]float64{"append.rows_per_sec": 5e5, "append.cpu_us_per_row": 1, "process.cpu_s": math.NaN()}),
		s("strom", "java", 3, map[string]float64{"append.rows_per_sec": 4e5, "append.cpu_us_per_row": 2}),
	}
}

func TestClientSummaries(t *testing.T) {
	servers, sums := ClientSummaries(clientSamples())
	if strings.Join(servers, ",") != "strom,fluss" {
		t.Fatalf("servers %v, want strom,fluss in first-seen order", servers)
	}
	st := sums["strom"].Stats["go"]["append.rows_per_sec"]
	if st.Median != 3e5 || st.Min != 1e5 || st.Max != 5e5 || st.N != 3 {
		t.Errorf("strom go append %+v", st)
	}
	if st := sums["strom"].Stats["java"]["append.rows_per_sec"]; st.N != 3 || st.Median != 2e5 {
		t.Errorf("strom java append %+v: the failed round's value counts", st)
	}
	if _, ok := sums["strom"].Stats["go"]["process.cpu_s"]; ok {
		t.Error("NaN kept")
	}
	if _, ok := sums["fluss"].Stats["java"]; ok {
		t.Error("fluss has a java client it never ran")
	}
}

func TestClientMarkdown(t *testing.T) {
	_, sums := ClientSummaries(clientSamples())
	lines := strings.Split(strings.TrimSpace(ClientMarkdown(sums["strom"], testClients)), "\n")
	want := []string{
		"| workload | Go | Java | wire | Go ÷ Java |",
		"|---|---|---|---|---|",
		"| append rows/s | 300.0 k (100.0 k–500.0 k) | 200.0 k (100.0 k–400.0 k) | 2.00 M | 1.50× |",
		"| append: client CPU µs per row | 2.0 (1.0–3.0) | 3.0 (2.0–4.0) | – | 0.67 |",
		"| lookup QPS (1 key, 4 in flight) | 10.0 k | 40 (cut short) | – | 250.00× |",
		"| lookup p99 ms | 0.80 | 120.00 (cut short) | – | 0.01 |",
		// Go measured no CPU for lookups: the cell and the ratio are empty; the per-lookup
		// CPU is normalized, so it is not marked as cut short.
		"| lookup: client CPU µs per lookup | – | 30.0 | – | – |",
	}
	if len(lines) != len(want) {
		t.Fatalf("got %d lines:\n%s", len(lines), strings.Join(lines, "\n"))
	}
	for i := range want {
		if lines[i] != want[i] {
			t.Errorf("line %d:\n got %s\nwant %s", i, lines[i], want[i])
		}
	}
	// A server where only the subject ran: its column alone, no ratio columns.
	fl := ClientMarkdown(sums["fluss"], testClients)
	if !strings.HasPrefix(fl, "| workload | Go |\n|---|---|\n| append rows/s | 100.0 k |") {
		t.Errorf("fluss table:\n%s", fl)
	}
	if ClientMarkdown(Summary{}, testClients) != "" {
		t.Error("a table for no samples")
	}
}

func TestClientFailures(t *testing.T) {
	f := ClientFailures(clientSamples())
	if len(f) != 1 || f[0] != "round 2, java client on strom failed: java client: exit status 1" {
		t.Errorf("failures %q", f)
	}
}
