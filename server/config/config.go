// Package config holds the server configuration. Option names follow Fluss's server.yaml where
// Fluss has one, so an operator's Fluss configuration carries over; Strom-only options are
// named in the same style and documented in docs/configuration.md.
package config

import (
	"fmt"
	"maps"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/stromdb/strom/internal/options"
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
	TabletServerRack     string     // tablet-server.rack ("" for none)
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
	FetchZeroCopy           bool          // log.fetch.zero-copy
	PreAuthMaxRequestSize   int           // security.sasl.pre-auth.max-request-size
	AuthTimeout             time.Duration // security.sasl.authentication.timeout
	AuthFailureDelay        time.Duration // security.sasl.authentication.failure-delay
	AuthMaxFailures         int           // security.sasl.authentication.max-failures

	LogSegmentBytes       int64         // log.segment.file-size
	LogFlushInterval      time.Duration // log.flush.interval (Strom): 0 = fsync before every acknowledgement
	LogJournal            bool          // log.journal.mode (Strom): auto = small appends go through the server-wide journal
	LogJournalMaxBytes    int64         // log.journal.max-batch-size (Strom)
	LogJournalMinInFlight int           // log.journal.min-in-flight (Strom)
	KvBlockCacheSize      int64         // kv.rocksdb.block.cache-size: Pebble's block cache, shared by all buckets
	KvWriteBufferSize     int64         // kv.rocksdb.writebuffer.size: one Pebble memtable (at most two exist)
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

	// noted are the keys set that Strom does not act on (unknown, not served, table or
	// client options), in the order set, for Warnings.
	noted []string
}

// Default returns the configuration of `strom serve` with no flags: the registry's defaults
// (internal/options).
func Default() Config {
	return Config{
		DataDir:                  options.DataDir.DefaultValue(),
		CoordinatorListeners:     []Listener{{Name: "FLUSS", Host: "127.0.0.1", Port: 9123}},
		DefaultBucketNumber:      options.DefaultBucketNumber.DefaultValue(),
		DefaultReplicationFactor: options.DefaultReplicationFactor.DefaultValue(),
		MaxBucketNum:             options.MaxBucketNum.DefaultValue(),
		MaxPartitionNum:          options.MaxPartitionNum.DefaultValue(),
		SecurityProtocolMap:      map[string]string{},
		SASLMechanisms:           options.SASLEnabledMechanisms.DefaultValue(),
		ListenerJAASConfig:       map[string]string{},
		MaxRequestSize:           int(options.MaxRequestSize.DefaultValue()),
		ConnectionMaxIdleTime:    options.ConnectionMaxIdleTime.DefaultValue(),
		MaxConnections:           options.MaxConnections.DefaultValue(),
		MaxConnInflightRequests:  options.MaxConnInflightRequests.DefaultValue(),
		MaxConnInflightBytes:     options.MaxConnInflightBytes.DefaultValue(),
		MaxInflightRequests:      options.MaxInflightRequests.DefaultValue(),
		MaxInflightBytes:         options.MaxInflightBytes.DefaultValue(),
		MaxRequestEntries:        options.MaxRequestEntries.DefaultValue(),
		FetchMaxResponseSize:     options.FetchMaxResponseSize.DefaultValue(),
		FetchZeroCopy:            options.FetchZeroCopy.DefaultValue(),
		PreAuthMaxRequestSize:    int(options.PreAuthMaxRequestSize.DefaultValue()),
		AuthTimeout:              options.AuthTimeout.DefaultValue(),
		AuthFailureDelay:         options.AuthFailureDelay.DefaultValue(),
		AuthMaxFailures:          options.AuthMaxFailures.DefaultValue(),
		LogSegmentBytes:          options.LogSegmentFileSize.DefaultValue(),
		LogFlushInterval:         options.LogFlushInterval.DefaultValue(),
		LogJournal:               strings.EqualFold(options.LogJournalMode.DefaultValue(), "auto"),
		LogJournalMaxBytes:       options.LogJournalMaxBatchSize.DefaultValue(),
		LogJournalMinInFlight:    options.LogJournalMinInFlight.DefaultValue(),
		KvBlockCacheSize:         options.KvBlockCacheSize.DefaultValue(),
		KvWriteBufferSize:        options.KvWriteBufferSize.DefaultValue(),
		KvRowCacheSize:           options.KvRowCacheSize.DefaultValue(),
		GoMemoryLimit:            0, // none: a limit near the live heap made the collector eat the upserts' CPU (docs/configuration.md)
		LogRetentionCheck:        options.LogRetentionCheckInterval.DefaultValue(),
		WriterIDExpiration:       options.WriterIDExpiration.DefaultValue(),
		AutoPartitionInterval:    options.AutoPartitionCheckInterval.DefaultValue(),
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
	for _, k := range slices.Sorted(maps.Keys(raw)) { // deterministic order of errors and warnings
		if err := c.Set(k, fmt.Sprint(raw[k])); err != nil {
			return fmt.Errorf("config %s: %w", path, err)
		}
	}
	return nil
}

// Set applies one option. Every key is looked up in the registry (internal/options): a
// refused option set to anything but its default is an error; a served option is parsed by
// its accessor; an option Strom does not serve, a table or client option, and a key nothing
// declares are kept in Raw and reported by Warnings (Fluss ignores unknown keys silently).
func (c *Config) Set(key, value string) error {
	value = strings.TrimSpace(value)
	c.Raw[key] = value
	if known, err := c.setCluster(key, value); known {
		if err != nil {
			return fmt.Errorf("option %s: %w", key, err)
		}
		return nil
	}
	o, ok := options.Lookup(key)
	if !ok {
		c.note(key, "unknown")
		return nil
	}
	if err := o.Refusal(value); err != nil {
		return err
	}
	if o.Scope == options.Table || o.Scope == options.Client || o.Status != options.Served {
		c.note(key, "")
		return nil
	}
	var err error
	switch key {
	case "data.dir":
		c.DataDir, err = options.DataDir.Parse(value)
	case "bind.listeners":
		c.CoordinatorListeners, err = ParseListeners(value)
	case "tablet-server.bind.listeners":
		c.TabletListeners, err = ParseListeners(value)
	case "advertised.listeners":
		c.CoordinatorAdvertised, err = ParseListeners(value)
	case "tablet-server.advertised.listeners":
		c.TabletAdvertised, err = ParseListeners(value)
	case "tablet-server.id":
		c.TabletServerID, err = options.TabletServerID.Parse(value)
	case "tablet-server.rack":
		c.TabletServerRack, err = options.TabletServerRack.Parse(value)
	case "default.bucket.number":
		c.DefaultBucketNumber, err = options.DefaultBucketNumber.Parse(value)
	case "default.replication.factor":
		c.DefaultReplicationFactor, err = options.DefaultReplicationFactor.Parse(value)
	case "max.bucket.num":
		c.MaxBucketNum, err = options.MaxBucketNum.Parse(value)
	case "max.partition.num":
		c.MaxPartitionNum, err = options.MaxPartitionNum.Parse(value)
	case "security.protocol.map":
		c.SecurityProtocolMap, err = parseProtocolMap(value)
	case "security.sasl.enabled.mechanisms":
		var ms []string
		ms, err = options.SASLEnabledMechanisms.Parse(value)
		c.SASLMechanisms = nil
		for _, m := range ms {
			c.SASLMechanisms = append(c.SASLMechanisms, strings.ToUpper(m))
		}
	case "security.sasl.plain.jaas.config":
		c.PlainJAASConfig, err = options.PlainJAASConfig.Parse(value)
	case "netty.server.max-request-size":
		var n int64
		n, err = options.MaxRequestSize.Parse(value)
		c.MaxRequestSize = int(n)
	case "netty.connection.max-idle-time":
		c.ConnectionMaxIdleTime, err = options.ConnectionMaxIdleTime.Parse(value)
	case "netty.server.max-connections":
		c.MaxConnections, err = options.MaxConnections.Parse(value)
	case "netty.connection.max-inflight-requests":
		c.MaxConnInflightRequests, err = options.MaxConnInflightRequests.Parse(value)
	case "netty.connection.max-inflight-bytes":
		c.MaxConnInflightBytes, err = options.MaxConnInflightBytes.Parse(value)
	case "netty.server.max-inflight-requests":
		c.MaxInflightRequests, err = options.MaxInflightRequests.Parse(value)
	case "netty.server.max-inflight-bytes":
		c.MaxInflightBytes, err = options.MaxInflightBytes.Parse(value)
	case "netty.server.max-request-entries":
		c.MaxRequestEntries, err = options.MaxRequestEntries.Parse(value)
	case "log.fetch.max-response-size":
		c.FetchMaxResponseSize, err = options.FetchMaxResponseSize.Parse(value)
	case "log.fetch.zero-copy":
		c.FetchZeroCopy, err = options.FetchZeroCopy.Parse(value)
	case "security.sasl.pre-auth.max-request-size":
		var n int64
		n, err = options.PreAuthMaxRequestSize.Parse(value)
		c.PreAuthMaxRequestSize = int(n)
	case "security.sasl.authentication.timeout":
		c.AuthTimeout, err = options.AuthTimeout.Parse(value)
	case "security.sasl.authentication.failure-delay":
		c.AuthFailureDelay, err = options.AuthFailureDelay.Parse(value)
	case "security.sasl.authentication.max-failures":
		c.AuthMaxFailures, err = options.AuthMaxFailures.Parse(value)
	case "log.segment.file-size":
		c.LogSegmentBytes, err = options.LogSegmentFileSize.Parse(value)
	case "log.flush.interval":
		c.LogFlushInterval, err = options.LogFlushInterval.Parse(value)
	case "log.journal.mode":
		var m string
		m, err = options.LogJournalMode.Parse(value)
		c.LogJournal = strings.EqualFold(m, "auto")
	case "log.journal.max-batch-size":
		c.LogJournalMaxBytes, err = options.LogJournalMaxBatchSize.Parse(value)
	case "log.journal.min-in-flight":
		c.LogJournalMinInFlight, err = options.LogJournalMinInFlight.Parse(value)
	case "kv.rocksdb.block.cache-size":
		c.KvBlockCacheSize, err = options.KvBlockCacheSize.Parse(value)
	case "kv.rocksdb.writebuffer.size":
		c.KvWriteBufferSize, err = options.KvWriteBufferSize.Parse(value)
	case "kv.row-cache-size":
		c.KvRowCacheSize, err = options.KvRowCacheSize.Parse(value)
	case "server.go-memory-limit":
		c.GoMemoryLimit, err = parseGoMemoryLimit(value)
	case "log.retention.check-interval":
		c.LogRetentionCheck, err = options.LogRetentionCheckInterval.Parse(value)
	case "server.writer-id.expiration-time":
		c.WriterIDExpiration, err = options.WriterIDExpiration.Parse(value)
	case "auto-partition.check.interval":
		c.AutoPartitionInterval, err = options.AutoPartitionCheckInterval.Parse(value)
	case "metrics.reporters":
		var rs []string
		rs, err = options.MetricsReporters.Parse(value)
		c.MetricsReporters = nil
		for _, r := range rs {
			c.MetricsReporters = append(c.MetricsReporters, strings.ToLower(r))
		}
	case "metrics.reporter.prometheus.port":
		_, _, err = ParsePortRange(value)
		c.PrometheusPort = value
	case "http.listen":
		if _, err = ParseHostPort(value); err == nil {
			c.HTTPListen, err = options.HTTPListen.Parse(value)
		}
	case "debug.pprof.enabled":
		c.PprofEnabled, err = options.PprofEnabled.Parse(value)
	case "http.rest.enabled", "http.rest.max-request-size", "http.rest.tokens", "http.tls.cert-file", "http.tls.key-file":
		err = c.HTTP.set(key, value)
	default:
		const s = ".plain.jaas.config"
		if strings.HasPrefix(key, listenerOptionPrefix) && strings.HasSuffix(key, s) {
			c.ListenerJAASConfig[strings.ToUpper(strings.TrimSuffix(strings.TrimPrefix(key, listenerOptionPrefix), s))] = value
		} else if o.Parser == "" {
			// A served option read through its accessor by another package (authorizer,
			// lake, snapshots): its value is checked here, so a bad value fails at start.
			err = o.Check(value)
		}
	}
	if err != nil {
		return fmt.Errorf("option %s: %w", key, err)
	}
	return nil
}

// note records a key Set accepted without acting on it.
func (c *Config) note(key, _ string) {
	if !slices.Contains(c.noted, key) {
		c.noted = append(c.noted, key)
	}
}

// Warnings returns one line per option that was set and that Strom does not act on: a key no
// option declares (with the closest declared key as a suggestion), a Fluss option Strom does
// not serve (and why), a table or client option. Fluss ignores unknown keys silently; Strom
// logs these lines at start so that a misspelling or an unserved option is seen.
func (c *Config) Warnings() []string {
	var out []string
	for _, k := range c.noted {
		o, ok := options.Lookup(k)
		switch {
		case !ok:
			msg := fmt.Sprintf("option %s is unknown and is ignored", k)
			if s := options.Suggest(k); s != "" {
				msg += fmt.Sprintf(" (did you mean %s?)", s)
			}
			out = append(out, msg)
		case o.Scope == options.Table:
			out = append(out, fmt.Sprintf("option %s is a table option: a server configuration does not set it (set it on the table)", k))
		case o.Scope == options.Client:
			out = append(out, fmt.Sprintf("option %s is a client option: the server ignores it", k))
		default:
			msg := fmt.Sprintf("option %s has no effect in Strom: %s", k, o.Why)
			if err := o.Check(c.Raw[k]); err != nil {
				msg += fmt.Sprintf(" (and its value is not valid: %v)", err)
			}
			out = append(out, msg)
		}
	}
	for _, r := range c.MetricsReporters {
		if r != "prometheus" {
			out = append(out, fmt.Sprintf("option metrics.reporters: reporter %s is not served (Strom has the prometheus reporter only) and is ignored", r))
		}
	}
	return out
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
	if err := c.checkKafka(); err != nil {
		return err
	}
	if c.PreAuthMaxRequestSize > c.MaxRequestSize {
		c.PreAuthMaxRequestSize = c.MaxRequestSize
	}
	if c.DefaultBucketNumber <= 0 {
		return fmt.Errorf("default.bucket.number must be positive")
	}
	return c.finishCluster()
}

// checkKafka checks the Kafka listeners (kafka.listener.names, default KAFKA). Without
// kafka.enabled a listener of such a name is refused, as it would speak the Fluss protocol to
// Kafka clients; with it, each name must be a tablet server listener (the coordinator skips a
// listener of that name: Kafka is served by tablet servers, docs/kafka.md).
func (c *Config) checkKafka() error {
	enabled, err := options.KafkaEnabled.Get(c.Raw)
	if err != nil {
		return err
	}
	names, err := options.KafkaListenerNames.Get(c.Raw)
	if err != nil {
		return err
	}
	for i := range names {
		names[i] = strings.ToUpper(names[i])
	}
	if !enabled {
		for _, l := range append(append([]Listener(nil), c.CoordinatorListeners...), c.TabletListeners...) {
			if slices.Contains(names, l.Name) {
				return fmt.Errorf("listener %s://%s is a Kafka listener (kafka.listener.names) but kafka.enabled is false; set kafka.enabled: true or rename it", l.Name, l.Addr())
			}
		}
		return nil
	}
	for _, name := range names {
		if !slices.ContainsFunc(c.TabletListeners, func(l Listener) bool { return l.Name == name }) {
			return fmt.Errorf("kafka.listener.names: %s is not a tablet server listener (tablet-server.bind.listeners); add %s://HOST:PORT there", name, name)
		}
	}
	return nil
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
// of the row cache. The quarter was the row cache's index when it lived on the Go heap
// (fastcache's maps, ~36 bytes per row); the index is now off the heap (internal/rowcache), so
// it is headroom for large PUT_KVs, whose collector cost made a tight limit slow
// (docs/benchmarks.md, "Resident memory: who holds it").
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

// ParseBytes parses a Fluss memory size such as 100mb, 1gb, 4k or 1024 (options.ParseBytes).
func ParseBytes(s string) (int64, error) { return options.ParseBytes(s) }

// ParseDuration parses a server option's duration: a number with a unit, or a bare number of
// milliseconds as Fluss's server options allow (options.ParseDuration).
func ParseDuration(s string) (time.Duration, error) { return options.ParseDuration(s) }
