// Package config holds the server configuration. Option names follow Fluss's server.yaml where
// Fluss has one, so an operator's Fluss configuration carries over; Strom-only options are
// named in the same style and documented in docs/configuration.md.
package config

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/stromdb/strom/internal/metadata"
)

// Listener is one bound endpoint of a role.
type Listener struct {
	Name string // e.g. FLUSS, CLIENT
	Host string
	Port int
}

// Addr returns HOST:PORT.
func (l Listener) Addr() string { return fmt.Sprintf("%s:%d", l.Host, l.Port) }

// Config is the whole server configuration.
type Config struct {
	DataDir string // data.dir

	CoordinatorListeners []Listener // bind.listeners
	TabletListeners      []Listener // tablet-server.bind.listeners (default: bind.listeners with port+1)
	TabletServerID       int32      // tablet-server.id
	// Advertised endpoints per listener name, where they differ from the bound ones: what
	// metadata, the cluster's registrations and replication use (behind NAT, a proxy).
	CoordinatorAdvertised []Listener // advertised.listeners
	TabletAdvertised      []Listener // tablet-server.advertised.listeners

	DefaultBucketNumber      int32 // default.bucket.number
	DefaultReplicationFactor int32 // default.replication.factor
	MaxBucketNum             int32 // max.bucket.num
	MaxPartitionNum          int32 // max.partition.num

	SecurityProtocolMap map[string]string // security.protocol.map: listener -> PLAINTEXT|SASL
	SASLMechanisms      []string          // security.sasl.enabled.mechanisms
	PlainJAASConfig     string            // security.sasl.plain.jaas.config
	ListenerJAASConfig  map[string]string // security.sasl.listener.name.<l>.plain.jaas.config

	MaxRequestSize int // netty.server.max-request-size

	// Client limits (docs/security.md). Zero means the wire package's default.
	ConnectionMaxIdleTime   time.Duration // netty.connection.max-idle-time
	MaxConnections          int           // netty.server.max-connections
	MaxConnInflightRequests int           // netty.connection.max-inflight-requests
	MaxConnInflightBytes    int64         // netty.connection.max-inflight-bytes
	MaxInflightRequests     int           // netty.server.max-inflight-requests
	MaxInflightBytes        int64         // netty.server.max-inflight-bytes
	MaxRequestEntries       int           // netty.server.max-request-entries
	FetchMaxResponseSize    int64         // log.fetch.max-response-size
	PreAuthMaxRequestSize   int           // security.sasl.pre-auth.max-request-size
	AuthTimeout             time.Duration // security.sasl.authentication.timeout
	AuthFailureDelay        time.Duration // security.sasl.authentication.failure-delay
	AuthMaxFailures         int           // security.sasl.authentication.max-failures

	LogSegmentBytes       int64         // log.segment.file-size
	LogFlushInterval      time.Duration // log.flush.interval (Strom): 0 = fsync before every acknowledgement
	KvBlockCacheSize      int64         // kv.rocksdb.block.cache-size: Pebble's block cache, shared by all buckets
	KvRowCacheSize        int64         // kv.row-cache-size (Strom option): rows read before writes, shared by all buckets; 0 turns it off
	GoMemoryLimit         int64         // server.go-memory-limit (Strom option): soft limit of the Go runtime's memory; GoMemoryLimitAuto derives it (GoMemoryLimitBytes), 0 sets none
	LogRetentionCheck     time.Duration // log.retention.check-interval
	WriterIDExpiration    time.Duration // server.writer-id.expiration-time
	AutoPartitionInterval time.Duration // auto-partition.check.interval

	// MetricsReporters lists the enabled metric reporters (metrics.reporters). Like Fluss, none
	// by default; "prometheus" starts the HTTP listener serving /metrics, /healthz and /readyz.
	MetricsReporters []string
	// PrometheusPort is the port, or a range "9250-9260" of which the first free port is used,
	// of the Prometheus reporter (metrics.reporter.prometheus.port, Fluss default 9249).
	PrometheusPort string
	// HTTPListen is HOST:PORT of the HTTP listener (http.listen, Strom). Setting it enables the
	// listener even without the prometheus reporter and overrides PrometheusPort.
	HTTPListen string
	// PprofEnabled serves /debug/pprof/ on the HTTP listener (debug.pprof.enabled, Strom).
	PprofEnabled bool
	// HTTP holds the REST API, console and TLS options of the HTTP listener (http.*).
	HTTP HTTP

	// Cluster holds the options of a multi-node deployment (cluster.go).
	Cluster Cluster

	// Raw holds every option as given, for options read elsewhere.
	Raw map[string]string
}

// Default returns the configuration of `strom serve` with no flags.
func Default() Config {
	return Config{
		DataDir:                  "./strom-data",
		CoordinatorListeners:     []Listener{{Name: "FLUSS", Host: "127.0.0.1", Port: 9123}},
		DefaultBucketNumber:      1,
		DefaultReplicationFactor: 1,
		MaxBucketNum:             128000,
		MaxPartitionNum:          1000,
		SecurityProtocolMap:      map[string]string{},
		SASLMechanisms:           []string{"PLAIN"},
		ListenerJAASConfig:       map[string]string{},
		MaxRequestSize:           100 << 20,
		ConnectionMaxIdleTime:    10 * time.Minute,
		MaxConnections:           4096,
		MaxConnInflightRequests:  1000,
		MaxConnInflightBytes:     128 << 20,
		MaxInflightRequests:      20000,
		MaxInflightBytes:         512 << 20,
		MaxRequestEntries:        200000,
		FetchMaxResponseSize:     64 << 20,
		PreAuthMaxRequestSize:    64 << 10,
		AuthTimeout:              10 * time.Second,
		AuthFailureDelay:         time.Second,
		AuthMaxFailures:          3,
		LogSegmentBytes:          1 << 30,
		KvBlockCacheSize:         32 << 20,
		KvRowCacheSize:           128 << 20,
		GoMemoryLimit:            0, // none: a limit near the live heap made the collector eat the upserts' CPU (docs/configuration.md)
		LogRetentionCheck:        5 * time.Minute,
		WriterIDExpiration:       7 * 24 * time.Hour,
		AutoPartitionInterval:    10 * time.Minute,
		PrometheusPort:           "9249",
		Cluster:                  defaultCluster(),
		Raw:                      map[string]string{},
	}
}

// LoadFile reads a YAML file of Fluss-style options (flat `key: value` pairs) over c.
func (c *Config) LoadFile(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("read config: %w", err)
	}
	var raw map[string]any
	if err := yaml.Unmarshal(data, &raw); err != nil {
		return fmt.Errorf("parse config %s: %w", path, err)
	}
	for k, v := range raw {
		if err := c.Set(k, fmt.Sprint(v)); err != nil {
			return fmt.Errorf("config %s: %w", path, err)
		}
	}
	return nil
}

// Set applies one option. Unknown options are kept in Raw and ignored, as Fluss ignores
// options it does not know.
func (c *Config) Set(key, value string) error {
	value = strings.TrimSpace(value)
	c.Raw[key] = value
	if known, err := c.setCluster(key, value); known {
		if err != nil {
			return fmt.Errorf("option %s: %w", key, err)
		}
		return nil
	}
	var err error
	switch key {
	case "data.dir":
		c.DataDir = value
	case "bind.listeners":
		c.CoordinatorListeners, err = ParseListeners(value)
	case "tablet-server.bind.listeners":
		c.TabletListeners, err = ParseListeners(value)
	case "advertised.listeners":
		c.CoordinatorAdvertised, err = ParseListeners(value)
	case "tablet-server.advertised.listeners":
		c.TabletAdvertised, err = ParseListeners(value)
	case "tablet-server.id":
		var n int64
		n, err = strconv.ParseInt(value, 10, 32)
		c.TabletServerID = int32(n)
	case "default.bucket.number":
		c.DefaultBucketNumber, err = parseInt32(value)
	case "default.replication.factor":
		c.DefaultReplicationFactor, err = parseInt32(value)
	case "max.bucket.num":
		c.MaxBucketNum, err = parseInt32(value)
	case "max.partition.num":
		c.MaxPartitionNum, err = parseInt32(value)
	case "security.protocol.map":
		c.SecurityProtocolMap, err = parseProtocolMap(value)
	case "security.sasl.enabled.mechanisms":
		c.SASLMechanisms = nil
		for _, m := range strings.Split(value, ",") {
			if m = strings.ToUpper(strings.TrimSpace(m)); m != "" {
				c.SASLMechanisms = append(c.SASLMechanisms, m)
			}
		}
	case "security.sasl.plain.jaas.config":
		c.PlainJAASConfig = value
	case "netty.server.max-request-size":
		var n int64
		n, err = ParseBytes(value)
		c.MaxRequestSize = int(n)
	case "netty.connection.max-idle-time":
		c.ConnectionMaxIdleTime, err = ParseDuration(value)
	case "netty.server.max-connections":
		c.MaxConnections, err = parsePositive(value)
	case "netty.connection.max-inflight-requests":
		c.MaxConnInflightRequests, err = parsePositive(value)
	case "netty.connection.max-inflight-bytes":
		c.MaxConnInflightBytes, err = parsePositiveBytes(value)
	case "netty.server.max-inflight-requests":
		c.MaxInflightRequests, err = parsePositive(value)
	case "netty.server.max-inflight-bytes":
		c.MaxInflightBytes, err = parsePositiveBytes(value)
	case "netty.server.max-request-entries":
		c.MaxRequestEntries, err = parsePositive(value)
	case "log.fetch.max-response-size":
		c.FetchMaxResponseSize, err = parsePositiveBytes(value)
	case "security.sasl.pre-auth.max-request-size":
		var n int64
		n, err = parsePositiveBytes(value)
		c.PreAuthMaxRequestSize = int(n)
	case "security.sasl.authentication.timeout":
		c.AuthTimeout, err = parsePositiveDuration(value)
	case "security.sasl.authentication.failure-delay":
		c.AuthFailureDelay, err = ParseDuration(value)
	case "security.sasl.authentication.max-failures":
		c.AuthMaxFailures, err = parsePositive(value)
	case "log.segment.file-size":
		c.LogSegmentBytes, err = ParseBytes(value)
	case "log.flush.interval":
		c.LogFlushInterval, err = ParseDuration(value)
	case "kv.rocksdb.block.cache-size":
		c.KvBlockCacheSize, err = parsePositiveBytes(value)
	case "kv.row-cache-size":
		c.KvRowCacheSize, err = ParseBytes(value)
		if err == nil && c.KvRowCacheSize < 0 {
			err = fmt.Errorf("must not be negative")
		}
	case "server.go-memory-limit":
		c.GoMemoryLimit, err = parseGoMemoryLimit(value)
	case "log.retention.check-interval":
		c.LogRetentionCheck, err = ParseDuration(value)
	case "server.writer-id.expiration-time":
		c.WriterIDExpiration, err = ParseDuration(value)
	case "auto-partition.check.interval":
		c.AutoPartitionInterval, err = ParseDuration(value)
	case "metrics.reporters":
		c.MetricsReporters = nil
		for _, r := range strings.Split(value, ",") {
			if r = strings.ToLower(strings.TrimSpace(r)); r != "" {
				c.MetricsReporters = append(c.MetricsReporters, r)
			}
		}
	case "metrics.reporter.prometheus.port":
		_, _, err = ParsePortRange(value)
		c.PrometheusPort = value
	case "http.listen":
		if _, err = ParseHostPort(value); err == nil {
			c.HTTPListen = value
		}
	case "debug.pprof.enabled":
		c.PprofEnabled, err = strconv.ParseBool(value)
	case "http.rest.enabled", "http.rest.max-request-size", "http.rest.tokens", "http.tls.cert-file", "http.tls.key-file":
		err = c.HTTP.set(key, value)
	default:
		const s = ".plain.jaas.config"
		if strings.HasPrefix(key, listenerOptionPrefix) && strings.HasSuffix(key, s) {
			c.ListenerJAASConfig[strings.ToUpper(strings.TrimSuffix(strings.TrimPrefix(key, listenerOptionPrefix), s))] = value
		}
	}
	if err != nil {
		return fmt.Errorf("option %s: %w", key, err)
	}
	return nil
}

// Finish derives defaults that depend on other options and validates the whole.
func (c *Config) Finish() error {
	if len(c.CoordinatorListeners) == 0 {
		return fmt.Errorf("no coordinator listener configured (bind.listeners)")
	}
	if len(c.TabletListeners) == 0 {
		for _, l := range c.CoordinatorListeners {
			t := l
			if t.Port != 0 {
				t.Port++
			}
			c.TabletListeners = append(c.TabletListeners, t)
		}
	}
	known := map[string]bool{}
	var names []string
	for _, l := range append(append([]Listener(nil), c.CoordinatorListeners...), c.TabletListeners...) {
		if !known[l.Name] {
			known[l.Name] = true
			names = append(names, l.Name)
		}
	}
	if err := checkAdvertised("advertised.listeners", c.CoordinatorAdvertised, c.CoordinatorListeners); err != nil {
		return err
	}
	if err := checkAdvertised("tablet-server.advertised.listeners", c.TabletAdvertised, c.TabletListeners); err != nil {
		return err
	}
	// A misspelled listener name would silently leave that listener with the default
	// (plaintext, or the global users): refuse to start instead.
	for name, proto := range c.SecurityProtocolMap {
		if !known[name] {
			return fmt.Errorf("security.protocol.map: no listener is named %s (listeners: %s)", name, strings.Join(names, ", "))
		}
		if !strings.EqualFold(proto, "PLAINTEXT") && !strings.EqualFold(proto, "SASL") {
			return fmt.Errorf("security.protocol.map: listener %s has unknown protocol %q (PLAINTEXT or SASL)", name, proto)
		}
	}
	for key := range c.Raw {
		if rest, ok := strings.CutPrefix(key, listenerOptionPrefix); ok {
			name, _, _ := strings.Cut(rest, ".")
			if !known[strings.ToUpper(name)] {
				return fmt.Errorf("%s: no listener is named %s (listeners: %s)", key, strings.ToUpper(name), strings.Join(names, ", "))
			}
		}
	}
	if c.PreAuthMaxRequestSize > c.MaxRequestSize {
		c.PreAuthMaxRequestSize = c.MaxRequestSize
	}
	if c.DefaultBucketNumber <= 0 {
		return fmt.Errorf("default.bucket.number must be positive")
	}
	return c.finishCluster()
}

// PrometheusEnabled reports whether metrics.reporters names the prometheus reporter.
func (c *Config) PrometheusEnabled() bool {
	for _, r := range c.MetricsReporters {
		if r == "prometheus" {
			return true
		}
	}
	return false
}

// HTTPEnabled reports whether the HTTP listener (metrics, health, pprof) is to be started.
func (c *Config) HTTPEnabled() bool { return c.PrometheusEnabled() || c.HTTPListen != "" }

// ParsePortRange parses a port "9249" or an inclusive range "9250-9260".
func ParsePortRange(s string) (lo, hi int, err error) {
	a, b, isRange := strings.Cut(strings.TrimSpace(s), "-")
	if lo, err = strconv.Atoi(strings.TrimSpace(a)); err != nil || lo < 0 || lo > 65535 {
		return 0, 0, fmt.Errorf("bad port %q", s)
	}
	hi = lo
	if isRange {
		if hi, err = strconv.Atoi(strings.TrimSpace(b)); err != nil || hi < lo || hi > 65535 {
			return 0, 0, fmt.Errorf("bad port range %q", s)
		}
	}
	return lo, hi, nil
}

// checkAdvertised refuses an advertised endpoint that names no bound listener of its role, or
// that has no concrete host and port (a client cannot dial a wildcard or port 0).
func checkAdvertised(key string, adv, bound []Listener) error {
	for _, a := range adv {
		found := false
		for _, b := range bound {
			found = found || b.Name == a.Name
		}
		if !found {
			return fmt.Errorf("%s: no listener of this role is named %s", key, a.Name)
		}
		if ip := net.ParseIP(a.Host); a.Host == "" || (ip != nil && ip.IsUnspecified()) || a.Port == 0 {
			return fmt.Errorf("%s: %s://%s: advertise a concrete host and port", key, a.Name, a.Addr())
		}
	}
	return nil
}

// Advertised returns the advertised endpoint of the listener named name among adv, if any.
func Advertised(adv []Listener, name string) (Listener, bool) {
	for _, a := range adv {
		if a.Name == name {
			return a, true
		}
	}
	return Listener{}, false
}

// IsSASL reports whether listener name uses SASL authentication.
func (c *Config) IsSASL(listener string) bool {
	return strings.EqualFold(c.SecurityProtocolMap[strings.ToUpper(listener)], "SASL")
}

// ParseListeners parses Fluss's `NAME://host:port, ...` listener list. A bare `host:port`
// gets the name FLUSS.
func ParseListeners(s string) ([]Listener, error) {
	var out []Listener
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name := "FLUSS"
		if i := strings.Index(part, "://"); i >= 0 {
			name, part = strings.ToUpper(part[:i]), part[i+3:]
		}
		l, err := ParseHostPort(part)
		if err != nil {
			return nil, err
		}
		l.Name = name
		out = append(out, l)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("empty listener list")
	}
	return out, nil
}

// ParseHostPort parses HOST:PORT (HOST may be empty, meaning all interfaces).
func ParseHostPort(s string) (Listener, error) {
	i := strings.LastIndex(s, ":")
	if i < 0 {
		return Listener{}, fmt.Errorf("listener %q: want HOST:PORT", s)
	}
	port, err := strconv.Atoi(s[i+1:])
	if err != nil || port < 0 || port > 65535 {
		return Listener{}, fmt.Errorf("listener %q: bad port", s)
	}
	host := strings.Trim(s[:i], "[]")
	if host == "" {
		host = "0.0.0.0"
	}
	return Listener{Host: host, Port: port}, nil
}

func parseProtocolMap(s string) (map[string]string, error) {
	m := map[string]string{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		k, v, ok := strings.Cut(part, ":")
		if !ok {
			return nil, fmt.Errorf("entry %q: want LISTENER:PROTOCOL", part)
		}
		m[strings.ToUpper(strings.TrimSpace(k))] = strings.ToUpper(strings.TrimSpace(v))
	}
	return m, nil
}

// listenerOptionPrefix starts options that apply to one listener, named after it.
const listenerOptionPrefix = "security.sasl.listener.name."

func parsePositive(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err == nil && n <= 0 {
		err = fmt.Errorf("must be positive")
	}
	return n, err
}

func parsePositiveBytes(s string) (int64, error) {
	n, err := ParseBytes(s)
	if err == nil && n <= 0 {
		err = fmt.Errorf("must be positive")
	}
	return n, err
}

// GoMemoryLimitAuto is server.go-memory-limit's `auto`: the limit follows the row cache's size.
const GoMemoryLimitAuto = -1

// goMemoryLimitBase is the Go runtime's share of the memory budget besides the row cache's
// index: request and response buffers, the tablets' pre-write buffers and key filters,
// metadata. minGoMemoryLimit is the smallest limit accepted: below it the garbage collector
// would run nearly all the time for a server's ordinary live heap.
const (
	goMemoryLimitBase = 64 << 20
	minGoMemoryLimit  = 32 << 20
)

// GoMemoryLimitBytes returns the soft memory limit for the Go runtime (runtime/debug
// SetMemoryLimit), 0 for none (the default). With `auto` it is goMemoryLimitBase plus a quarter
// of the row cache: the row cache keeps its rows outside the Go heap, but its index (fastcache's
// per-bucket maps, ~36 bytes per entry) is on it, ~28% of the cache for the benchmark's
// ~120-byte rows (docs/benchmarks.md, "Resident memory: who holds it").
func (c *Config) GoMemoryLimitBytes() int64 {
	if c.GoMemoryLimit != GoMemoryLimitAuto {
		return c.GoMemoryLimit
	}
	return goMemoryLimitBase + c.KvRowCacheSize/4
}

func parseGoMemoryLimit(s string) (int64, error) {
	if strings.EqualFold(strings.TrimSpace(s), "auto") {
		return GoMemoryLimitAuto, nil
	}
	n, err := ParseBytes(s)
	if err == nil && n != 0 && n < minGoMemoryLimit {
		err = fmt.Errorf("must be auto, 0 (no limit) or at least %dmb, got %d bytes", minGoMemoryLimit>>20, n)
	}
	return n, err
}

func parsePositiveDuration(s string) (time.Duration, error) {
	d, err := ParseDuration(s)
	if err == nil && d <= 0 {
		err = fmt.Errorf("must be positive")
	}
	return d, err
}

func parseInt32(s string) (int32, error) {
	n, err := strconv.ParseInt(s, 10, 32)
	return int32(n), err
}

// ParseBytes parses a Fluss memory size such as 100mb, 1gb, 4k or 1024.
func ParseBytes(s string) (int64, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"kb", 1 << 10}, {"mb", 1 << 20}, {"gb", 1 << 30}, {"tb", 1 << 40}, {"k", 1 << 10}, {"m", 1 << 20}, {"g", 1 << 30}, {"t", 1 << 40}, {"b", 1}} {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("bad size %q", s)
	}
	return n * mult, nil
}

// ParseDuration parses a Fluss duration: a number with a unit (ms, s, min, h, d, ... as
// metadata.ParseFlussDuration accepts), or a bare number of milliseconds as Fluss's server
// options allow.
func ParseDuration(s string) (time.Duration, error) {
	t := strings.TrimSpace(s)
	if n, err := strconv.ParseInt(t, 10, 64); err == nil {
		if n < 0 {
			return 0, fmt.Errorf("bad duration %q", s)
		}
		return time.Duration(n) * time.Millisecond, nil
	}
	d, err := metadata.ParseFlussDuration(t)
	if err != nil {
		return 0, fmt.Errorf("bad duration %q: %w", s, err)
	}
	return d, nil
}
