package options

import (
	"bufio"
	"os"
	"strings"
	"testing"
)

// flussKeys reads testdata/fluss-<version>-options.tsv: key, type, default, alias_of.
func flussKeys(t *testing.T, version string) map[string][]string {
	t.Helper()
	f, err := os.Open("testdata/fluss-" + version + "-options.tsv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string][]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, "key\t") {
			continue
		}
		cols := strings.Split(line, "\t")
		if len(cols) != 4 {
			t.Fatalf("%s: want 4 columns: %q", version, line)
		}
		out[cols[0]] = cols[1:]
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(out) < 150 {
		t.Fatalf("%s: only %d keys read", version, len(out))
	}
	return out
}

// TestRegistryClassifiesEveryFlussKey holds the registry against Fluss's ConfigOptions of
// 0.9.1 and 1.0: every Fluss key is declared (by itself, not by a prefix family) and claims
// that version; every declaration that claims a version is a key of it, unless Fluss reads it
// outside ConfigOptions (FlussSource).
func TestRegistryClassifiesEveryFlussKey(t *testing.T) {
	versions := []struct {
		name string
		bit  Version
	}{{"0.9.1", V091}, {"1.0", V10}}
	for _, v := range versions {
		keys := flussKeys(t, v.name)
		for k, cols := range keys {
			o, ok := byKey[k]
			if !ok {
				t.Errorf("Fluss %s key %s (%s, default %s) is not declared in internal/options", v.name, k, cols[0], cols[1])
				continue
			}
			if o.Versions&v.bit == 0 {
				t.Errorf("%s is a Fluss %s key, but its declaration claims only %s", k, v.name, o.Versions)
			}
			if want := flussType(cols[0]); want != o.Type && !(want == String && o.Type == Password) && !(want == Enum && o.Type == String) {
				t.Errorf("%s: declared %s, Fluss %s has %s", k, o.Type, v.name, cols[0])
			}
		}
		for _, o := range All() {
			if o.Versions&v.bit == 0 || o.FlussSource != "" {
				continue
			}
			if _, ok := keys[o.Key]; !ok {
				t.Errorf("%s claims Fluss %s, which has no such key (set FlussSource if Fluss reads it elsewhere)", o.Key, v.name)
			}
		}
	}
}

func flussType(t string) Type {
	if strings.HasPrefix(t, "list<") {
		return List
	}
	for ty := String; ty <= Password; ty++ {
		if ty.String() == t {
			return ty
		}
	}
	return 255
}

// TestDeclarations checks what every declaration must have.
func TestDeclarations(t *testing.T) {
	for _, o := range All() {
		if o.Desc == "" {
			t.Errorf("%s has no description", o.Key)
		}
		if o.Status != Served && o.Why == "" {
			t.Errorf("%s is %s without a reason", o.Key, o.Status)
		}
		if o.Prefix != strings.HasSuffix(o.Key, ".") {
			t.Errorf("%s: a prefix family's key ends with a dot, and only its", o.Key)
		}
		if (o.Scope == Table) != strings.HasPrefix(o.Key, "table.") {
			t.Errorf("%s: table options are exactly the table.* keys", o.Key)
		}
		if o.Type == Enum && o.Scope == Table && (o.EnumClass == "" || len(o.Enum) == 0) {
			t.Errorf("%s: a table enum needs its class and constants", o.Key)
		}
		if o.Versions == 0 && o.FlussSource != "" {
			t.Errorf("%s: a Strom option has no Fluss source", o.Key)
		}
	}
}

// TestDefaultsParse checks that every typed option's default parses and passes its
// constraints, and that untyped defaults pass their type.
func TestDefaultsParse(t *testing.T) {
	for _, o := range All() {
		if o.Default == "" || strings.HasPrefix(o.Default, "<") || o.Key == "datalake.tiering.binary" {
			continue
		}
		if o.Type == List || o.Type == String || o.Type == Enum || o.Type == Password {
			continue
		}
		if err := o.Check(o.Default); err != nil && o.Default != "unbounded" {
			t.Errorf("%s: default %q: %v", o.Key, o.Default, err)
		}
	}
	if got := DefaultBucketNumber.DefaultValue(); got != 1 {
		t.Errorf("default.bucket.number default = %d", got)
	}
	if got := KvRowCacheSize.DefaultValue(); got != 128<<20 {
		t.Errorf("kv.row-cache-size default = %d", got)
	}
}

func TestLookupPrefix(t *testing.T) {
	for key, want := range map[string]string{
		"datalake.iceberg.uri":  "datalake.iceberg.",
		"s3.endpoint":           "s3.endpoint",
		"s3.connection.maximum": "s3.",
		"fs.azure.account.key":  "fs.azure.",
		"fs.s3a.endpoint":       "fs.",
		"security.sasl.listener.name.client.plain.jaas.config": "security.sasl.listener.name.",
	} {
		o, ok := Lookup(key)
		if !ok || o.Key != want {
			t.Errorf("Lookup(%s) = %v, %v; want %s", key, o, ok, want)
		}
	}
	if _, ok := Lookup("default.bucket.numbr"); ok {
		t.Error("a misspelled key is found")
	}
}

func TestSuggest(t *testing.T) {
	for key, want := range map[string]string{
		"default.bucket.numbr":       "default.bucket.number",
		"log.flush.intervall":        "log.flush.interval",
		"kv.snapshot.intervl":        "kv.snapshot.interval",
		"authoriser.enabled":         "authorizer.enabled",
		"completely.different.thing": "",
		"abc":                        "",
	} {
		if got := Suggest(key); got != want {
			t.Errorf("Suggest(%s) = %q, want %q", key, got, want)
		}
	}
}

func TestTypedAccessors(t *testing.T) {
	raw := map[string]string{"default.bucket.number": "4", "log.flush.interval": "1s", "kv.row-cache-size": "1mb"}
	if n, err := DefaultBucketNumber.Get(raw); err != nil || n != 4 {
		t.Errorf("default.bucket.number = %d, %v", n, err)
	}
	if d, err := LogFlushInterval.Get(raw); err != nil || d.Seconds() != 1 {
		t.Errorf("log.flush.interval = %v, %v", d, err)
	}
	if n, err := KvRowCacheSize.Get(raw); err != nil || n != 1<<20 {
		t.Errorf("kv.row-cache-size = %d, %v", n, err)
	}
	if d, err := AuthTimeout.Get(raw); err != nil || d.Seconds() != 10 {
		t.Errorf("unset security.sasl.authentication.timeout = %v, %v; want its default", d, err)
	}
	for key, bad := range map[string]string{"default.bucket.number": "0", "netty.server.max-connections": "-1", "kv.row-cache-size": "-1b", "log.flush.interval": "soon"} {
		o, _ := Lookup(key)
		if err := o.Check(bad); err == nil {
			t.Errorf("%s=%s accepted", key, bad)
		}
	}
	if _, err := DefaultBucketNumber.Get(map[string]string{"default.bucket.number": "x"}); err == nil || !strings.Contains(err.Error(), "default.bucket.number") {
		t.Errorf("bad value: %v, want an error naming the key", err)
	}
}

func TestRefusal(t *testing.T) {
	o, _ := Lookup("kafka.enabled")
	if err := o.Refusal("false"); err != nil {
		t.Errorf("kafka.enabled=false refused: %v", err)
	}
	if err := o.Refusal("true"); err == nil || !strings.Contains(err.Error(), "Kafka") {
		t.Errorf("kafka.enabled=true: %v, want a refusal naming Kafka", err)
	}
	if o, _ := Lookup("default.bucket.number"); o.Refusal("3") != nil {
		t.Error("a served option is refused")
	}
}

// TestDocUpToDate fails when docs/configuration.md's generated tables differ from the
// registry: run `go generate ./internal/options` after changing a declaration.
func TestDocUpToDate(t *testing.T) {
	doc, err := os.ReadFile("../../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	want, err := SpliceDoc(string(doc), Markdown())
	if err != nil {
		t.Fatal(err)
	}
	if string(doc) != want {
		t.Fatal("docs/configuration.md is out of date: run `go generate ./internal/options`")
	}
}

// TestDynamicOptions holds the dynamic options to Fluss 1.0's DynamicServerConfig list.
func TestDynamicOptions(t *testing.T) {
	want := []string{"datalake.format", "kv.leader-replica.memory-reserved", "kv.rocksdb.shared-rate-limiter.bytes-per-sec",
		"kv.snapshot.interval", "log.replica.min-in-sync-replicas-number", "log.retention.roll-active-segment.enabled",
		"remote.data.dirs", "remote.data.dirs.strategy", "remote.data.dirs.weights", "security.sasl.plain.credentials",
		"server.data-disk.write-limit-ratio", "server.data-disk.write-recover-ratio",
		"server.historical-partition.lookup-cache.max-disk-ratio", "server.historical-partition.lookuper-cache.expire-after-access"}
	var got []string
	for _, o := range All() {
		if o.Dynamic {
			got = append(got, o.Key)
		}
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("dynamic options\n%v\nwant\n%v", got, want)
	}
}

func TestCheckDynamic(t *testing.T) {
	if err := CheckDynamic("kv.snapshot.interval", "5min"); err != nil {
		t.Errorf("kv.snapshot.interval=5min: %v", err)
	}
	if err := CheckDynamic("kv.snapshot.interval", "soon"); err == nil {
		t.Error("a bad duration accepted")
	}
	if err := CheckDynamic("default.bucket.number", "3"); err == nil {
		t.Error("a static option accepted as dynamic")
	}
	if err := CheckDynamic("server.data-disk.write-limit-ratio", "x"); err == nil {
		t.Error("a bad double accepted")
	}
}

func TestSensitive(t *testing.T) {
	for key, want := range map[string]bool{
		"security.sasl.plain.jaas.config":                      true,
		"security.sasl.listener.name.client.plain.jaas.config": true,
		"security.sasl.plain.credentials":                      true,
		"s3.secret-key":                                        true,
		"s3.access-key":                                        true,
		"fs.s3a.access.key":                                    true,
		"datalake.iceberg.jdbc.password":                       true,
		"metrics.reporter.influxdb.token":                      true,
		"metrics.reporter.prometheus-push.password":            true,
		"default.bucket.number":                                false,
		"datalake.iceberg.uri":                                 false,
		"kv.rocksdb.block.cache-index-and-filter-blocks":       false,
		"bind.listeners":                                       false,
	} {
		if got := Sensitive(key); got != want {
			t.Errorf("Sensitive(%s) = %v, want %v", key, got, want)
		}
	}
}

// TestDefaultsMatchFluss checks that a declaration's default is Fluss's (of 1.0, else 0.9.1),
// or that FlussDefault records Fluss's where Strom's differs.
func TestDefaultsMatchFluss(t *testing.T) {
	old, cur := flussKeys(t, "0.9.1"), flussKeys(t, "1.0")
	for _, o := range All() {
		cols, ok := cur[o.Key]
		if !ok {
			if cols, ok = old[o.Key]; !ok {
				continue
			}
		}
		fluss := cols[1]
		if fluss == "-" {
			fluss = ""
		}
		if strings.HasPrefix(fluss, "(") && o.Default == "" {
			continue // computed by Java at run time, e.g. the system time zone
		}
		want := o.Default
		switch o.FlussDefault {
		case "":
		case NoFlussDefault:
			want = ""
		default:
			want = o.FlussDefault
		}
		if o.Versions == Both09And10 && old[o.Key][1] != cur[o.Key][1] {
			continue // the versions differ (max.bucket.num): Why says which Strom keeps
		}
		if !strings.EqualFold(want, fluss) {
			t.Errorf("%s: default %q, Fluss's is %q", o.Key, want, fluss)
		}
	}
}
