package options

import (
	"fmt"
	"strings"
	"time"
)

// The server options Strom serves, each with its typed accessor. Fluss's keys first (with the
// versions that have them), then Strom's own (Versions 0). Listener lists, the security
// protocol map and the Go memory limit are parsed by server/config with its own types; their
// declarations here are plain and say so in Parser.

// Cluster, listeners and identity.
var (
	DataDir = StringOf(Option{Key: "data.dir", Default: "./strom-data", FlussDefault: "/tmp/fluss-data", Scope: Server, Versions: Both09And10,
		Desc: "metadata (meta/, embedded etcd), bucket logs and primary-key state (tablet/)"})
	TabletServerID = Int32Of(Option{Key: "tablet-server.id", Default: "0", FlussDefault: NoFlussDefault, Scope: Server, Versions: Both09And10,
		Desc: "the tablet server's node id; required, and unique, in a cluster"})
	TabletServerRack = StringOf(Option{Key: "tablet-server.rack", Default: "", FlussDefault: NoFlussDefault, Scope: Server, Versions: Both09And10,
		Desc: "the tablet server's rack: each bucket's replicas go to distinct racks; set on every tablet server or on none (docs/cluster.md)"})
	DefaultBucketNumber = Int32Of(Option{Key: "default.bucket.number", Default: "1", Scope: Server, Versions: Both09And10,
		Desc: "buckets of a table created without a bucket count"}, Positive[int32])
	DefaultReplicationFactor = Int32Of(Option{Key: "default.replication.factor", Default: "1", Scope: Server, Versions: Both09And10,
		Desc: "stored as table.replication.factor; in a cluster, the replicas of each bucket"})
	MaxBucketNum = Int32Of(Option{Key: "max.bucket.num", Default: "128000", Scope: Server, Versions: Both09And10,
		Why:  "Fluss 1.0's default is 4096, 0.9.1's 128000; Strom keeps 0.9.1's so that tables a 0.9.1 cluster accepted are accepted",
		Desc: "largest bucket count of a table; of a partitioned table, summed over its partitions as Fluss 0.9.1 counts it (Fluss 1.0 checks each partition alone) — BUCKET_MAX_NUM_EXCEPTION"})
	MaxPartitionNum = Int32Of(Option{Key: "max.partition.num", Default: "1000", Scope: Server, Versions: Both09And10,
		Desc: "most partitions of one table, as in Fluss — PARTITION_MAX_NUM_EXCEPTION"})
	AllowCreateLogTables = BoolOf(Option{Key: "allow.create.log.tables", Default: "true", Scope: Server, Versions: Both09And10,
		Desc: "false refuses CREATE_TABLE of log tables with INVALID_TABLE_EXCEPTION, as Fluss does"})
	AllowCreateKvTables = BoolOf(Option{Key: "allow.create.kv.tables", Default: "true", Scope: Server, Versions: Both09And10,
		Desc: "false refuses CREATE_TABLE of primary-key tables with INVALID_TABLE_EXCEPTION, as Fluss does"})
	DatalakeFormat = CustomOf(Option{Key: "datalake.format", Dynamic: true, Scope: Server, Versions: Both09And10, See: "lake.md",
		Desc: "iceberg turns on lakehouse tiering in a strom-lake child process; Fluss's other formats are refused at start"}, Enum, parseLakeFormat)
	DatalakeEnabled = BoolOf(Option{Key: "datalake.enabled", Scope: Server, Versions: V10,
		Desc: "unset: datalake.format alone lets tables enable the lake; false: new tables are bound to the format but none may enable the lake yet; true: needs datalake.format"})
	AutoPartitionCheckInterval = DurationOf(Option{Key: "auto-partition.check.interval", Default: "10min", Scope: Server, Versions: Both09And10,
		Desc: "how often automatic partitioning runs"})
	WriterIDExpiration = DurationOf(Option{Key: "server.writer-id.expiration-time", Default: "7d", Scope: Server, Versions: Both09And10,
		Desc: "idle idempotent writers are forgotten after this"})
	KafkaEnabled = BoolOf(Option{Key: "kafka.enabled", Default: "false", Scope: Server, Versions: Both09And10, See: "kafka.md",
		Desc: "serve the Kafka protocol on the tablet server listeners kafka.listener.names"})
	KafkaListenerNames = ListOf(Option{Key: "kafka.listener.names", Default: "KAFKA", Scope: Server, Versions: Both09And10, See: "kafka.md",
		Desc: "tablet server listeners (tablet-server.bind.listeners) that speak the Kafka protocol"})
	KafkaDatabase = StringOf(Option{Key: "kafka.database", Default: "kafka", Scope: Server, Versions: Both09And10, See: "kafka.md",
		Desc: "database whose log tables are the Kafka topics"})
	KafkaConnectionMaxIdleTime = DurationOf(Option{Key: "kafka.connection.max-idle-time", Default: "60s", Scope: Server, Versions: Both09And10, See: "kafka.md",
		Desc: "a Kafka connection without a request for this long is closed (0 never)"})
	ProducerOffsetsTTL = DurationOf(Option{Key: "coordinator.producer-offsets.ttl", Default: "24h", Scope: Server, Versions: Both09And10,
		Desc: "default lifetime of registered producer offsets"})
)

// Listeners (parsed by server/config into its Listener type), and served options that other
// packages parse (Parser).
var _ = registerAll([]Option{
	{Key: "bind.listeners", Type: String, Default: "FLUSS://127.0.0.1:9123", FlussDefault: NoFlussDefault, Scope: Server, Versions: Both09And10, Parser: "server/config",
		Desc: "coordinator listeners, NAME://host:port, ..."},
	{Key: "advertised.listeners", Type: String, Scope: Server, Versions: Both09And10, Parser: "server/config",
		See: "cluster.md", Desc: "NAME://host:port per coordinator listener to announce instead of the bound address"},
	{Key: "tablet-server.bind.listeners", Type: String, Scope: Server, Parser: "server/config",
		Desc: "tablet server listeners (default: each bind.listeners entry with port + 1); one process hosts both roles, so each has its own list"},
	{Key: "tablet-server.advertised.listeners", Type: String, Scope: Server, Parser: "server/config",
		See: "cluster.md", Desc: "NAME://host:port per tablet server listener to announce instead of the bound address"},
	{Key: "security.protocol.map", Type: Map, Scope: Server, Versions: Both09And10, Parser: "server/config",
		Desc: "LISTENER:protocol, ...; protocol PLAINTEXT or sasl"},
	{Key: "security.sasl.listener.name.", Prefix: true, Type: String, Scope: Server, Versions: Both09And10, Parser: "server/config",
		FlussSource: "read by prefix by fluss-common SaslServerAuthenticator",
		Desc:        "security.sasl.listener.name.<listener>.plain.jaas.config: users of one listener, overriding the global ones"},
	{Key: "datalake.iceberg.", Prefix: true, Type: String, Scope: Server, Versions: Both09And10, Parser: "server/lakeconf",
		FlussSource: "read by prefix by the lake catalogs (datalake.<format>.*)",
		See:         "lake.md", Desc: "Iceberg catalog options, prefix stripped: type (jdbc, alias sql, the default; hadoop, a local file-system warehouse; rest; hive and glue are refused at start), name, uri, warehouse (required for hadoop), ..."},
	{Key: "datalake.paimon.", Prefix: true, Type: String, Scope: Server, Versions: Both09And10, Status: NoEffect,
		FlussSource: "read by prefix by the lake catalogs (datalake.<format>.*)",
		Why:         "Strom's lake is Iceberg only (datalake.format: paimon is refused at start)",
		Desc:        "Paimon catalog options"},
	{Key: "remote.data.dir", Type: String, Default: "<data dir>/remote", FlussDefault: NoFlussDefault, Scope: Server, Versions: Both09And10, Parser: "server/remote",
		See: "tiered-storage.md", Desc: "remote storage, where KV snapshot files live: a local directory, a file:// URL or s3://bucket/prefix (other schemes are refused at start); in a cluster an S3 bucket or a directory every node shares at the same path. Set explicitly, it also turns on log tiering: closed segments move there and local disks keep table.log.tiered.local-segments per bucket"},
	{Key: "remote.log.task-interval-duration", Type: Duration, Default: "1min", Scope: Server, Versions: Both09And10, Parser: "server/remotelog",
		See: "tiered-storage.md", Desc: "with remote.data.dir set, how often each bucket's leader copies its closed log segments to remote storage; 0 turns log tiering off, what is tiered is still read"},
	{Key: "remote.log.data-transfer-thread-num", Type: Int, Default: "4", Scope: Server, Versions: Both09And10, Parser: "server/remotelog",
		Desc: "buckets tiered at once per server"},
	{Key: "kv.snapshot.interval", Dynamic: true, Type: Duration, Default: "10min", Scope: Server, Versions: Both09And10, Parser: "server/kvsnap",
		See: "kv-snapshots.md", Desc: "how often each primary-key bucket whose state changed gets a KV snapshot"},
	{Key: "kv.snapshot.num-retained", Type: Int, Default: "2", Scope: Server, Versions: Both09And10, Parser: "server/kvsnap",
		Desc: "newest KV snapshots kept per bucket, besides leased ones"},
	{Key: "server.go-memory-limit", Type: Memory, Default: "0", Scope: Server, Parser: "server/config",
		See: "#memory-budget", Desc: "soft limit of the Go runtime's memory: 0 none, auto (64 MiB plus a quarter of kv.row-cache-size), or a size of at least 32mb"},
	{Key: "metrics.reporter.prometheus.port", Type: String, Default: "9249", Scope: Server, Versions: Both09And10, Parser: "server/config",
		Desc: "port of the HTTP listener of the prometheus reporter, or a range 9250-9260 (the first free port)"},
	{Key: "http.rest.enabled", Type: Bool, Default: "true", Scope: Server, Parser: "server/config",
		See: "rest.md", Desc: "the REST API (/api/v1/) and the web console (/console/) on the HTTP listener"},
	{Key: "http.rest.max-request-size", Type: Memory, Default: "8mb", Scope: Server, Parser: "server/config",
		See: "rest.md", Desc: "largest REST request body (at least 1kb); a bigger one is refused with 413"},
	{Key: "http.rest.tokens", Type: String, Scope: Server, Parser: "server/config",
		See: "rest.md", Desc: "bearer tokens of the REST API as USER:SHA256-of-token, comma-separated; a token logs in as its SASL user"},
	{Key: "http.tls.cert-file", Type: String, Scope: Server, Parser: "server/config",
		See: "rest.md", Desc: "PEM certificate chain: with http.tls.key-file the HTTP listener serves HTTPS only"},
	{Key: "http.tls.key-file", Type: String, Scope: Server, Parser: "server/config",
		See: "rest.md", Desc: "PEM private key of http.tls.cert-file"},
	{Key: "server.roles", Type: List, Default: "coordinator,tablet-server", Scope: Server, Parser: "server/config",
		See: "cluster.md#configuration", Desc: "the roles of this process in a cluster; a role alone needs etcd keys"},
	{Key: "etcd.endpoints", Type: List, Scope: Server, Parser: "server/config",
		See: "cluster.md#configuration", Desc: "client URLs of an external etcd; the process then embeds no etcd member"},
	{Key: "etcd.join-endpoints", Type: List, Scope: Server, Parser: "server/config",
		See: "cluster.md#replacing-a-lost-disk", Desc: "running members through which a member without etcd data rejoins"},
	{Key: "etcd.name", Type: String, Scope: Server, Parser: "server/config", See: "cluster.md#configuration", Desc: "name of this process's embedded etcd member"},
	{Key: "etcd.initial-cluster", Type: String, Scope: Server, Parser: "server/config", Desc: "the embedded members, name=peer-url, ..."},
	{Key: "etcd.listen-peer-urls", Type: List, Scope: Server, Parser: "server/config", Desc: "where the member listens for its peers"},
	{Key: "etcd.advertise-peer-urls", Type: List, Scope: Server, Parser: "server/config", Desc: "the member's peer URLs as the others dial them"},
	{Key: "etcd.listen-client-urls", Type: List, Scope: Server, Parser: "server/config", Desc: "where the member serves etcd clients"},
	{Key: "etcd.advertise-client-urls", Type: List, Scope: Server, Parser: "server/config", Desc: "the member's client URLs as clients dial them"},
	{Key: "etcd.initial-cluster-state", Type: Enum, Default: "new", Scope: Server, Parser: "server/config", Desc: "new or existing"},
	{Key: "etcd.peer-cert-file", Type: String, Scope: Server, Parser: "server/config", See: "cluster.md#on-three-machines", Desc: "certificate for TLS between members"},
	{Key: "etcd.peer-key-file", Type: String, Scope: Server, Parser: "server/config", Desc: "its key"},
	{Key: "etcd.peer-trusted-ca-file", Type: String, Scope: Server, Parser: "server/config", Desc: "CA a peer's certificate must be signed by"},
	{Key: "etcd.client-cert-file", Type: String, Scope: Server, Parser: "server/config", See: "cluster.md#on-three-machines", Desc: "certificate for TLS on etcd's client URLs"},
	{Key: "etcd.client-key-file", Type: String, Scope: Server, Parser: "server/config", Desc: "its key"},
	{Key: "etcd.client-trusted-ca-file", Type: String, Scope: Server, Parser: "server/config", Desc: "CA a client's certificate must be signed by"},
	{Key: "cluster.secret-file", Type: String, Scope: Server, Parser: "server/config", See: "security.md#cluster-authentication",
		Desc: "file holding a secret shared by the cluster's processes; each derives the cluster CA from it and issues its own certificate: mutual TLS for etcd peer and client traffic (URLs must be https://) and on the internal listener. Required in a cluster unless cluster.allow-insecure; a lone first member without it generates <data.dir>/cluster-secret"},
})

// Security.
var (
	SASLEnabledMechanisms = ListOf(Option{Key: "security.sasl.enabled.mechanisms", Default: "PLAIN", FlussDefault: NoFlussDefault, Scope: Server, Versions: Both09And10,
		Desc: "SASL mechanisms; PLAIN is the only one, another is refused at start"}, onlyPlain)
	PlainJAASConfig = StringOf(Option{Key: "security.sasl.plain.jaas.config", Type: Password, Scope: Server, Versions: V10,
		Why: "Fluss 0.9.1 reads it too (SaslServerAuthenticator) without declaring it",
		See: "#saslplain", Desc: "users of SASL listeners, as a JAAS string"})
	AuthorizerEnabled = BoolOf(Option{Key: "authorizer.enabled", Default: "false", Scope: Server, Versions: Both09And10,
		See: "#authorization-acls", Desc: "authorise every request with ACLs"})
	AuthorizerType = StringOf(Option{Key: "authorizer.type", Default: "default", Scope: Server, Versions: Both09And10,
		Desc: "the authorizer; default is the only one"}, oneOf("default"))
	InternalListenerName = StringOf(Option{Key: "internal.listener.name", Default: "FLUSS", Scope: Server, Versions: Both09And10,
		Desc: "requests on this listener are never authorised (Fluss's inter-server listener)"})
	SuperUsers = StringOf(Option{Key: "super.users", Scope: Server, Versions: Both09And10,
		Desc: "User:admin;User:bob: principals allowed everything"})
	ACLIgnoreCase = BoolOf(Option{Key: "security.acl.principal.ignore-case", Default: "false", Scope: Server, Versions: V10,
		Desc: "match principal names and types case-insensitively"})
	PreAuthMaxRequestSize = BytesOf(Option{Key: "security.sasl.pre-auth.max-request-size", Default: "64kb", Scope: Server,
		Desc: "largest frame on a SASL listener before the connection has authenticated"}, Positive[int64])
	AuthTimeout = DurationOf(Option{Key: "security.sasl.authentication.timeout", Default: "10s", Scope: Server,
		Desc: "a SASL connection not authenticated this long after it was accepted is closed"}, Positive[time.Duration])
	AuthFailureDelay = DurationOf(Option{Key: "security.sasl.authentication.failure-delay", Default: "1s", Scope: Server,
		Desc: "a failed AUTHENTICATE is answered after this delay (0 disables)"})
	AuthMaxFailures = IntOf(Option{Key: "security.sasl.authentication.max-failures", Default: "3", Scope: Server,
		Desc: "the connection is closed after answering this many failed AUTHENTICATEs"}, Positive[int])
)

// Network and client limits (docs/security.md).
var (
	MaxRequestSize = BytesOf(Option{Key: "netty.server.max-request-size", Default: "100mb", Scope: Server, Versions: Both09And10,
		Desc: "largest request frame; a bigger one closes the connection"})
	ConnectionMaxIdleTime = DurationOf(Option{Key: "netty.connection.max-idle-time", Default: "10min", Scope: Server, Versions: Both09And10,
		Desc: "a connection idle this long, or whose responses go unread this long, is closed (0 disables)"})
	MaxConnections = IntOf(Option{Key: "netty.server.max-connections", Default: "4096", Scope: Server,
		See: "security.md", Desc: "open client connections over all listeners (Fluss and Kafka); more are accepted and closed at once. Capped by the file-descriptor budget (server.fd.reserved)"}, Positive[int])
	FDReserved = IntOf(Option{Key: "server.fd.reserved", Default: "0", Scope: Server, See: "operations.md#file-descriptors",
		Desc: "file descriptors kept for storage, etcd, replication and the lake child; client connections get the rest of RLIMIT_NOFILE (0: max(512, half the limit))"}, NonNegative[int])
	MaxConnInflightRequests = IntOf(Option{Key: "netty.connection.max-inflight-requests", Default: "1000", Scope: Server,
		Desc: "requests of one connection read but not answered; past it the server stops reading that connection"}, Positive[int])
	MaxConnInflightBytes = BytesOf(Option{Key: "netty.connection.max-inflight-bytes", Default: "128mb", Scope: Server,
		Desc: "request bytes of one connection read but not answered; past it the server stops reading that connection"}, Positive[int64])
	MaxInflightRequests = IntOf(Option{Key: "netty.server.max-inflight-requests", Default: "20000", Scope: Server,
		Desc: "requests read but not answered over all connections"}, Positive[int])
	MaxInflightBytes = BytesOf(Option{Key: "netty.server.max-inflight-bytes", Default: "512mb", Scope: Server,
		Desc: "request bytes read but not answered over all connections"}, Positive[int64])
	MaxRequestEntries = IntOf(Option{Key: "netty.server.max-request-entries", Default: "200000", Scope: Server,
		Desc: "nested messages and list elements in one request; more is CORRUPT_MESSAGE before decoding"}, Positive[int])
	FetchMaxResponseSize = BytesOf(Option{Key: "log.fetch.max-response-size", Default: "64mb", Scope: Server,
		Desc: "record bytes in one FETCH_LOG response, whatever the request's max_bytes (the first batch is whole)"}, Positive[int64])
	FetchZeroCopy = BoolOf(Option{Key: "log.fetch.zero-copy", Default: "true", Scope: Server, See: "architecture.md",
		Desc: "FETCH_LOG sends unprojected records from the segment files with sendfile(2) (a bounded copy on wrapped connections); false reads them into each response frame"})
)

// Storage.
var (
	LogSegmentFileSize = BytesOf(Option{Key: "log.segment.file-size", Default: "1024m", Scope: Server, Versions: Both09And10,
		Desc: "segment roll size"})
	LogFlushInterval = DurationOf(Option{Key: "log.flush.interval", Default: "0", Scope: Server,
		See: "durability.md", Desc: "0 fsyncs before every acknowledgement; a duration acknowledges after write(2) and fsyncs on that interval"})
	LogJournalMode = StringOf(Option{Key: "log.journal.mode", Default: "off", Scope: Server, See: "durability.md#the-journal",
		Desc: "auto acknowledges appends of at most log.journal.max-batch-size once they are fdatasync'ed in one server-wide group-commit journal (segments synced in the background); off keeps every bucket's own fdatasync. Only with log.flush.interval 0"}, oneOf("auto", "off"))
	LogJournalMaxBatchSize = BytesOf(Option{Key: "log.journal.max-batch-size", Default: "16kb", Scope: Server, See: "durability.md#the-journal",
		Desc: "the largest append (its batches' bytes) routed through the journal; larger ones keep their segment's fdatasync"}, Positive[int64])
	LogJournalMinInFlight = IntOf(Option{Key: "log.journal.min-in-flight", Default: "8", Scope: Server, See: "durability.md#the-journal",
		Desc: "the fewest fsync-per-ack appends in flight on the server (the append included) for a small one to go through the journal; with fewer, the buckets' own fdatasyncs run in parallel and win"}, Positive[int])
	LogRetentionCheckInterval = DurationOf(Option{Key: "log.retention.check-interval", Default: "5min", Scope: Server, Versions: V10,
		Desc: "how often table.log.ttl retention runs"})
	KvBlockCacheSize = BytesOf(Option{Key: "kv.rocksdb.block.cache-size", Default: "32mb", FlussDefault: "8mb", Scope: Server, Versions: Both09And10,
		Why: "one Pebble cache shared by every bucket (Fluss sizes one RocksDB cache per bucket)",
		See: "#memory-budget", Desc: "block cache of the primary-key state"}, Positive[int64])
	KvWriteBufferSize = BytesOf(Option{Key: "kv.rocksdb.writebuffer.size", Default: "8mb", FlussDefault: "64mb", Scope: Server, Versions: Both09And10,
		Why: "one Pebble memtable size for every bucket, at most two memtables at a time (Fluss has kv.rocksdb.writebuffer.count buffers per bucket)",
		See: "#memory-budget", Desc: "memtable size of the primary-key state"}, Positive[int64], memTableLimit)
	KvRowCacheSize = BytesOf(Option{Key: "kv.row-cache-size", Default: "128mb", Scope: Server,
		See: "#memory-budget", Desc: "row cache of the primary-key state, shared by every bucket; 0 turns it off"}, NonNegative[int64])
	TieringBinary = StringOf(Option{Key: "datalake.tiering.binary", Scope: Server,
		See: "lake.md#the-tiering-process", Desc: "the tiering program a lake-enabled server starts (unset: strom-lake next to strom, else on $PATH); missing, the server does not start"})
)

// Metrics and the HTTP listener.
var (
	MetricsReporters = ListOf(Option{Key: "metrics.reporters", Scope: Server, Versions: Both09And10,
		See: "operations.md", Desc: "prometheus starts the HTTP listener with /metrics, /healthz, /readyz"})
	HTTPListen = StringOf(Option{Key: "http.listen", Scope: Server,
		Desc: "HOST:PORT of the HTTP listener; enables it even without metrics.reporters"})
	PprofEnabled = BoolOf(Option{Key: "debug.pprof.enabled", Default: "false", Scope: Server,
		Desc: "serve Go's profiles under /debug/pprof/ on the HTTP listener"})
)

// Cluster timings (docs/cluster.md).
var (
	TabletServerLeaseTTL = DurationOf(Option{Key: "tablet-server.lease-ttl", Default: "5s", Scope: Server,
		See: "cluster.md#timings", Desc: "a tablet server that stops renewing its registration this long is dead (whole seconds)"}, wholeSeconds)
	CoordinatorLeaseTTL = DurationOf(Option{Key: "coordinator.lease-ttl", Default: "5s", Scope: Server,
		Desc: "lease of the coordinator election (whole seconds)"}, wholeSeconds)
	// MinInSyncReplicas and ReplicaMaxLagTime are also read from the raw map by
	// server/tablet's replicaOptions, when its Options leave them zero.
	MinInSyncReplicas = Int32Of(Option{Key: "log.replica.min-in-sync-replicas-number", Dynamic: true, Default: "1", Scope: Server, Versions: Both09And10,
		Desc: "the fewest in-sync replicas an acks=-1 write needs"}, atLeastOne)
	ReplicaMaxLagTime = DurationOf(Option{Key: "log.replica.max-lag-time", Default: "30s", Scope: Server, Versions: Both09And10,
		Desc: "a follower that has not caught up for this long leaves the ISR"}, Positive[time.Duration])
	LivenessProbeInterval = DurationOf(Option{Key: "coordinator.liveness-probe.interval", Default: "200ms", Scope: Server,
		See: "cluster.md#failover-in-under-2-s", Desc: "how often the active coordinator dials every tablet server; one refusing connections twice in a row (its process is gone) is failed over at once instead of when its lease expires; 0 turns it off"}, NonNegative[time.Duration])
	HeartbeatInterval = DurationOf(Option{Key: "coordinator.heartbeat.interval", Default: "200ms", Scope: Server,
		See: "cluster.md#failover-in-under-2-s", Desc: "how often the active coordinator sends every tablet server a heartbeat over the internal listener; 0 turns heartbeat fencing off (paused and cut-off servers then fail over when their lease expires)"}, NonNegative[time.Duration])
	HeartbeatFenceAfter = DurationOf(Option{Key: "coordinator.heartbeat.fence-after", Default: "800ms", Scope: Server,
		See: "cluster.md#failover-in-under-2-s", Desc: "a tablet server that answers none of the heartbeats sent to it for this long is fenced and, after its tablet-server.fence-check.grace, failed over"}, Positive[time.Duration])
	HeartbeatStandbys = BoolOf(Option{Key: "coordinator.heartbeat.standbys", Default: "true", Scope: Server,
		See: "cluster.md#a-paused-active-coordinator", Desc: "whether standby coordinators send the active coordinator heartbeats and, once more than half of them found it silent for coordinator.heartbeat.fence-after, revoke its election lease; false leaves a paused or cut-off active coordinator to its coordinator.lease-ttl"})
	FenceCheckInterval = DurationOf(Option{Key: "tablet-server.fence-check.interval", Default: "150ms", Scope: Server,
		See: "cluster.md#failover-in-under-2-s", Desc: "how often a tablet server of a cluster reads from etcd whether the active coordinator fenced it"}, Positive[time.Duration])
	FenceCheckGrace = DurationOf(Option{Key: "tablet-server.fence-check.grace", Default: "500ms", Scope: Server,
		See: "cluster.md#failover-in-under-2-s", Desc: "how long one fence read that found no fence lets a tablet server acknowledge; the coordinator waits this long (/0.9, +100 ms) between a fence and the failover; at least twice tablet-server.fence-check.interval; 0 opts this server out of heartbeat fencing"}, NonNegative[time.Duration])
	ClusterAllowInsecure = BoolOf(Option{Key: "cluster.allow-insecure", Default: "false", Scope: Server, See: "security.md#cluster-authentication",
		Desc: "run a cluster without cluster.secret-file: etcd over plain HTTP and a plaintext internal listener that anyone who reaches it can use as a server (tests and development on a trusted machine; WARNed at every start)"})
	LogFlushMaxStallTime = DurationOf(Option{Key: "log.flush.max-stall-time", Default: "5s", Scope: Server,
		See: "cluster.md#gray-failures", Desc: "a tablet server of a cluster whose log fdatasync has not returned for this long leaves the cluster until it does (its leaderships move, it leaves every ISR); 0 turns it off"}, NonNegative[time.Duration])
)

// parseLakeFormat reads datalake.format in lower case: iceberg, the one lake Strom tiers to.
// Fluss's other formats are refused, so that a cluster never accepts lake tables it would not
// tier.
func parseLakeFormat(s string) (string, error) {
	f := strings.ToLower(strings.TrimSpace(s))
	switch f {
	case "iceberg":
		return f, nil
	case "paimon", "lance", "hudi":
		return "", fmt.Errorf("%q is not supported by Strom (only iceberg)", s)
	}
	return "", fmt.Errorf("%q is not a lake format (Fluss's are paimon, iceberg, lance and hudi; Strom tiers to iceberg)", s)
}

// onlyPlain refuses a SASL mechanism Strom does not implement: clients configured for it
// could not log in, so the server does not start.
func onlyPlain(ms []string) error {
	for _, m := range ms {
		if !strings.EqualFold(m, "PLAIN") {
			return fmt.Errorf("SASL mechanism %s is not supported (only PLAIN)", m)
		}
	}
	return nil
}

func atLeastOne(n int32) error {
	if n < 1 {
		return fmt.Errorf("must be at least 1")
	}
	return nil
}

// wholeSeconds refuses a lease that etcd cannot express: etcd leases count whole seconds.
func wholeSeconds(d time.Duration) error {
	if d < time.Second || d%time.Second != 0 {
		return fmt.Errorf("must be a whole number of seconds, at least 1s (etcd leases count seconds)")
	}
	return nil
}

// memTableLimit refuses memtables of 4 GiB and more, which Pebble cannot address.
func memTableLimit(v int64) error {
	if v >= 4<<30 {
		return fmt.Errorf("must be below 4gb")
	}
	return nil
}
