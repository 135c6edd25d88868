package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParseDurationAndBytes(t *testing.T) {
	for in, want := range map[string]time.Duration{"0": 0, "500": 500 * time.Millisecond, "500ms": 500 * time.Millisecond, "1s": time.Second, "10min": 10 * time.Minute, "7d": 7 * 24 * time.Hour, " 2 h ": 2 * time.Hour} {
		if got, err := ParseDuration(in); err != nil || got != want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "-1", "5 parsecs", "s"} {
		if _, err := ParseDuration(bad); err == nil {
			t.Errorf("ParseDuration(%q) accepted", bad)
		}
	}
	for in, want := range map[string]int64{"100mb": 100 << 20, "1024m": 1 << 30, "4k": 4 << 10, "10": 10} {
		if got, err := ParseBytes(in); err != nil || got != want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
}

func TestListenersAndDefaults(t *testing.T) {
	c := Default()
	if err := c.Set("bind.listeners", "CLIENT://127.0.0.1:9123, PLAIN_CLIENT://:9223"); err != nil {
		t.Fatal(err)
	}
	if err := c.Set("security.protocol.map", "CLIENT:sasl"); err != nil {
		t.Fatal(err)
	}
	if err := c.Finish(); err != nil {
		t.Fatal(err)
	}
	if len(c.TabletListeners) != 2 || c.TabletListeners[0].Port != 9124 || c.TabletListeners[1].Port != 9224 || c.TabletListeners[1].Host != "0.0.0.0" {
		t.Fatalf("tablet listeners %+v", c.TabletListeners)
	}
	if !c.IsSASL("client") || c.IsSASL("PLAIN_CLIENT") {
		t.Fatal("SASL listener mapping wrong")
	}
	if err := c.Set("security.protocol.map", "X:tls"); err == nil {
		if err := c.Finish(); err == nil {
			t.Fatal("unknown protocol accepted")
		}
	}
}

func TestMetricsOptions(t *testing.T) {
	c := Default()
	if c.HTTPEnabled() || c.PrometheusPort != "9249" {
		t.Fatalf("default: enabled %v, port %q; want off and Fluss's 9249", c.HTTPEnabled(), c.PrometheusPort)
	}
	if err := c.Set("metrics.reporters", "jmx, Prometheus"); err != nil {
		t.Fatal(err)
	}
	if !c.PrometheusEnabled() || !c.HTTPEnabled() {
		t.Error("metrics.reporters naming prometheus does not enable the listener")
	}
	if err := c.Set("metrics.reporter.prometheus.port", "9250-9260"); err != nil {
		t.Fatal(err)
	}
	if lo, hi, err := ParsePortRange(c.PrometheusPort); lo != 9250 || hi != 9260 || err != nil {
		t.Errorf("range = %d-%d, %v", lo, hi, err)
	}
	for _, bad := range []string{"x", "9260-9250", "70000", "1-"} {
		if err := c.Set("metrics.reporter.prometheus.port", bad); err == nil {
			t.Errorf("port %q accepted", bad)
		}
	}
	d := Default()
	if err := d.Set("http.listen", "127.0.0.1:0"); err != nil || !d.HTTPEnabled() {
		t.Errorf("http.listen: %v, enabled %v", err, d.HTTPEnabled())
	}
	if err := d.Set("http.listen", "nonsense"); err == nil {
		t.Error("http.listen without a port accepted")
	}
	if err := d.Set("debug.pprof.enabled", "true"); err != nil || !d.PprofEnabled {
		t.Errorf("debug.pprof.enabled: %v %v", err, d.PprofEnabled)
	}
}

func TestUnknownListenerNamesAreStartupErrors(t *testing.T) {
	base := func() Config {
		c := Default()
		if err := c.Set("bind.listeners", "CLIENT://127.0.0.1:9123, PLAIN_CLIENT://:9223"); err != nil {
			t.Fatal(err)
		}
		return c
	}
	for key, value := range map[string]string{
		"security.protocol.map":                                "CLIENT:sasl, CLINET:sasl",
		"security.sasl.listener.name.clinet.plain.jaas.config": `PlainLoginModule required user_a="b";`,
	} {
		c := base()
		if err := c.Set(key, value); err != nil {
			t.Fatal(err)
		}
		err := c.Finish()
		if err == nil || !strings.Contains(err.Error(), "CLINET") || !strings.Contains(err.Error(), "PLAIN_CLIENT") {
			t.Errorf("%s: %s: got %v, want an error naming the unknown and the known listeners", key, value, err)
		}
	}
	c := base()
	c.Set("security.protocol.map", "client:SASL")
	c.Set("security.sasl.listener.name.client.plain.jaas.config", `PlainLoginModule required user_a="b";`)
	if err := c.Finish(); err != nil {
		t.Fatalf("known listener names refused: %v", err)
	}
}

func TestClientLimitOptions(t *testing.T) {
	c := Default()
	for k, v := range map[string]string{
		"netty.connection.max-idle-time":             "30s",
		"netty.server.max-connections":               "10",
		"netty.connection.max-inflight-requests":     "5",
		"netty.connection.max-inflight-bytes":        "1mb",
		"netty.server.max-inflight-requests":         "50",
		"netty.server.max-inflight-bytes":            "8mb",
		"netty.server.max-request-entries":           "1000",
		"log.fetch.max-response-size":                "2mb",
		"security.sasl.pre-auth.max-request-size":    "4kb",
		"security.sasl.authentication.timeout":       "2s",
		"security.sasl.authentication.failure-delay": "0",
		"security.sasl.authentication.max-failures":  "1",
	} {
		if err := c.Set(k, v); err != nil {
			t.Fatal(err)
		}
	}
	want := Config{ConnectionMaxIdleTime: 30 * time.Second, MaxConnections: 10, MaxConnInflightRequests: 5, MaxConnInflightBytes: 1 << 20,
		MaxInflightRequests: 50, MaxInflightBytes: 8 << 20, MaxRequestEntries: 1000, FetchMaxResponseSize: 2 << 20,
		PreAuthMaxRequestSize: 4 << 10, AuthTimeout: 2 * time.Second, AuthFailureDelay: 0, AuthMaxFailures: 1}
	got := Config{ConnectionMaxIdleTime: c.ConnectionMaxIdleTime, MaxConnections: c.MaxConnections, MaxConnInflightRequests: c.MaxConnInflightRequests,
		MaxConnInflightBytes: c.MaxConnInflightBytes, MaxInflightRequests: c.MaxInflightRequests, MaxInflightBytes: c.MaxInflightBytes,
		MaxRequestEntries: c.MaxRequestEntries, FetchMaxResponseSize: c.FetchMaxResponseSize, PreAuthMaxRequestSize: c.PreAuthMaxRequestSize,
		AuthTimeout: c.AuthTimeout, AuthFailureDelay: c.AuthFailureDelay, AuthMaxFailures: c.AuthMaxFailures}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
	for _, bad := range []string{"netty.server.max-connections=0", "netty.server.max-inflight-bytes=-1", "security.sasl.authentication.timeout=0"} {
		k, v, _ := strings.Cut(bad, "=")
		if err := c.Set(k, v); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

func TestKvBlockCacheSize(t *testing.T) {
	c := Default()
	if c.KvBlockCacheSize != 32<<20 {
		t.Fatalf("default block cache %d, want 32 MiB", c.KvBlockCacheSize)
	}
	if err := c.Set("kv.rocksdb.block.cache-size", "256mb"); err != nil || c.KvBlockCacheSize != 256<<20 {
		t.Fatalf("256mb: %d %v", c.KvBlockCacheSize, err)
	}
	for _, bad := range []string{"0", "-1mb", "lots"} {
		if err := c.Set("kv.rocksdb.block.cache-size", bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestKvRowCacheSize(t *testing.T) {
	c := Default()
	if c.KvRowCacheSize != 128<<20 {
		t.Fatalf("default row cache %d, want 128 MiB", c.KvRowCacheSize)
	}
	for in, want := range map[string]int64{"256mb": 256 << 20, "0": 0} {
		if err := c.Set("kv.row-cache-size", in); err != nil || c.KvRowCacheSize != want {
			t.Fatalf("%s: %d %v", in, c.KvRowCacheSize, err)
		}
	}
	for _, bad := range []string{"-1mb", "lots"} {
		if err := c.Set("kv.row-cache-size", bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestGoMemoryLimit(t *testing.T) {
	c := Default()
	if got := c.GoMemoryLimitBytes(); got != 0 {
		t.Fatalf("default limit %d, want none", got)
	}
	if err := c.Set("server.go-memory-limit", "auto"); err != nil {
		t.Fatal(err)
	}
	if got := c.GoMemoryLimitBytes(); got != 96<<20 {
		t.Fatalf("auto limit %d, want 96 MiB (64 MiB + a quarter of the 128 MiB row cache)", got)
	}
	if err := c.Set("kv.row-cache-size", "0"); err != nil {
		t.Fatal(err)
	}
	if got := c.GoMemoryLimitBytes(); got != 64<<20 {
		t.Fatalf("limit without a row cache %d, want 64 MiB", got)
	}
	for in, want := range map[string]int64{"256mb": 256 << 20, "0": 0, "32mb": 32 << 20, "AUTO": 64 << 20} {
		if err := c.Set("server.go-memory-limit", in); err != nil || c.GoMemoryLimitBytes() != want {
			t.Fatalf("%s: %d %v", in, c.GoMemoryLimitBytes(), err)
		}
	}
	for _, bad := range []string{"-1mb", "16mb", "1", "lots", ""} {
		err := c.Set("server.go-memory-limit", bad)
		if err == nil {
			t.Errorf("%q accepted", bad)
		} else if !strings.Contains(err.Error(), "server.go-memory-limit") {
			t.Errorf("%q: error %q does not name the option", bad, err)
		}
	}
}

func TestAdvertisedListeners(t *testing.T) {
	for _, tc := range []struct {
		key, value, err string
	}{
		{"tablet-server.advertised.listeners", "FLUSS://10.0.0.7:19124", ""},
		{"advertised.listeners", "FLUSS://db.example.com:9123", ""},
		{"tablet-server.advertised.listeners", "OTHER://10.0.0.7:19124", "no listener of this role is named OTHER"},
		{"advertised.listeners", "FLUSS://0.0.0.0:9123", "advertise a concrete host and port"},
		{"advertised.listeners", "FLUSS://db.example.com:0", "advertise a concrete host and port"},
	} {
		c := Default()
		if err := c.Set(tc.key, tc.value); err != nil {
			t.Fatalf("%s=%s: %v", tc.key, tc.value, err)
		}
		err := c.Finish()
		if tc.err == "" && err != nil {
			t.Errorf("%s=%s: %v", tc.key, tc.value, err)
		}
		if tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("%s=%s: error %v, want %q", tc.key, tc.value, err, tc.err)
		}
	}
	c := Default()
	c.Set("tablet-server.advertised.listeners", "FLUSS://10.0.0.7:19124")
	if err := c.Finish(); err != nil {
		t.Fatal(err)
	}
	if a, ok := Advertised(c.TabletAdvertised, "FLUSS"); !ok || a.Addr() != "10.0.0.7:19124" {
		t.Fatalf("advertised FLUSS: %v %v", a, ok)
	}
	if _, ok := Advertised(c.CoordinatorAdvertised, "FLUSS"); ok {
		t.Fatal("the coordinator advertises what only the tablet server was given")
	}
}

// TestUnknownAndUnservedOptionsWarn checks that a misspelled key (from the YAML file or
// --set) is accepted, as Fluss accepts it, and reported with the declared key it is closest
// to; that unserved Fluss options, table options and client options are reported with why.
func TestUnknownAndUnservedOptionsWarn(t *testing.T) {
	path := filepath.Join(t.TempDir(), "server.yaml")
	yaml := "default.bucket.numbr: 4\nzookeeper.address: localhost:2181\ntable.log.ttl: 1d\nclient.id: x\ndefault.replication.factor: 1\n"
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	c := Default()
	if err := c.LoadFile(path); err != nil {
		t.Fatal(err)
	}
	if err := c.Set("log.flush.intervall", "1s"); err != nil {
		t.Fatal(err)
	}
	if err := c.Set("metrics.reporters", "prometheus,jmx"); err != nil {
		t.Fatal(err)
	}
	if err := c.Finish(); err != nil {
		t.Fatal(err)
	}
	if c.DefaultBucketNumber != 1 || c.LogFlushInterval != 0 {
		t.Fatalf("misspelled options took effect: buckets %d, flush %v", c.DefaultBucketNumber, c.LogFlushInterval)
	}
	got := strings.Join(c.Warnings(), "\n")
	for _, want := range []string{
		"option default.bucket.numbr is unknown and is ignored (did you mean default.bucket.number?)",
		"option log.flush.intervall is unknown and is ignored (did you mean log.flush.interval?)",
		"option zookeeper.address has no effect in Strom: Strom keeps its metadata in etcd",
		"option table.log.ttl is a table option",
		"option client.id is a client option",
		"reporter jmx is not served",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("warnings lack %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "default.replication.factor") {
		t.Errorf("a served option is warned about:\n%s", got)
	}
}

// TestKafkaRefused checks that a Kafka listener cannot be configured until Strom has one:
// kafka.enabled: true and a listener named KAFKA (or after kafka.listener.names) fail at
// start instead of serving the Fluss protocol to Kafka clients.
func TestKafkaRefused(t *testing.T) {
	c := Default()
	if err := c.Set("kafka.enabled", "false"); err != nil {
		t.Fatalf("kafka.enabled=false: %v", err)
	}
	if err := c.Set("kafka.enabled", "true"); err == nil || !strings.Contains(err.Error(), "Kafka") {
		t.Fatalf("kafka.enabled=true: %v, want a refusal", err)
	}
	for _, tc := range []struct{ names, listeners string }{
		{"", "FLUSS://127.0.0.1:9123, KAFKA://127.0.0.1:9092"},
		{"K1", "FLUSS://127.0.0.1:9123, K1://127.0.0.1:9092"},
	} {
		c := Default()
		if tc.names != "" {
			if err := c.Set("kafka.listener.names", tc.names); err != nil {
				t.Fatal(err)
			}
		}
		if err := c.Set("bind.listeners", tc.listeners); err != nil {
			t.Fatal(err)
		}
		if err := c.Finish(); err == nil || !strings.Contains(err.Error(), "Kafka") {
			t.Errorf("listeners %s: Finish = %v, want a refusal naming Kafka", tc.listeners, err)
		}
	}
}

// TestRefusedFlussOptions checks options whose silent absence would change what a Fluss user
// gets.
func TestRefusedFlussOptions(t *testing.T) {
	for key, value := range map[string]string{
		"config.providers":                 "env",
		"coordinator.port":                 "9999",
		"security.sasl.plain.credentials":  "admin:secret",
		"security.sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256",
	} {
		c := Default()
		if err := c.Set(key, value); err == nil {
			t.Errorf("%s=%s accepted", key, value)
		}
	}
	c := Default()
	if err := c.Set("kafka.enabled", "FALSE"); err != nil {
		t.Errorf("kafka.enabled at its default: %v", err)
	}
}

// tablet-server.rack is read (it was accepted with no effect before): its value reaches the
// config, and an unset rack is "".
func TestTabletServerRack(t *testing.T) {
	c := Default()
	if c.TabletServerRack != "" {
		t.Fatalf("default rack %q", c.TabletServerRack)
	}
	if err := c.Set("tablet-server.rack", "cn-hangzhou-a"); err != nil {
		t.Fatal(err)
	}
	if c.TabletServerRack != "cn-hangzhou-a" {
		t.Fatalf("rack %q", c.TabletServerRack)
	}
}
