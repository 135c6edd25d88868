package fluss

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/internal/wire"
)

// Config configures a Connection. The zero value of a field means its default; FromProperties
// builds a Config from the option names the official clients use.
type Config struct {
	// BootstrapServers is a comma-separated list of host:port (bootstrap.servers). Default
	// "127.0.0.1:9123".
	BootstrapServers string

	// RequestTimeout bounds every RPC that has no earlier context deadline (a Fluss server may
	// silently drop malformed requests). Default 30s.
	RequestTimeout time.Duration
	// ConnectTimeout bounds dialing and the connection handshake (connect-timeout). Default 30s.
	ConnectTimeout time.Duration

	// WriterRequestMaxSize caps the size of one produce/put request (writer.request-max-size).
	// Default 10 MiB.
	WriterRequestMaxSize int
	// WriterBatchSize is the size at which a bucket's batch is closed and sent
	// (writer.batch-size). Default 2 MiB.
	WriterBatchSize int
	// WriterBatchTimeout is how long a non-full batch lingers before it is sent
	// (writer.batch-timeout-ms). Default 100ms.
	WriterBatchTimeout time.Duration
	// WriterBufferMemorySize bounds the bytes buffered by one writer; Append/Upsert block
	// (backpressure) until earlier batches are acknowledged (writer.buffer.memory-size).
	// Default 64 MiB.
	WriterBufferMemorySize int
	// WriterAcks is "all" (or "-1"), "0" or "1" (writer.acks). Default "all".
	WriterAcks string
	// WriterRetries is how many times a batch failing with a retriable error is resent
	// (writer.retries). Default: practically unbounded (math.MaxInt32); negative means 0.
	WriterRetries int
	// WriterDisableIdempotence turns off idempotent writes (writer.enable-idempotence=false).
	// With idempotence on (the default) every writer obtains a writer id and numbers its
	// batches per bucket so that resent batches are not applied twice.
	WriterDisableIdempotence bool

	// ScannerFetchMaxBytes bounds one FETCH_LOG response (scanner.log.fetch.max-bytes).
	// Default 16 MiB.
	ScannerFetchMaxBytes int
	// ScannerFetchMaxBytesForBucket bounds one bucket in a fetch
	// (scanner.log.fetch.max-bytes-for-bucket). Default 1 MiB.
	ScannerFetchMaxBytesForBucket int
	// ScannerFetchMaxWait is the server-side long-poll wait (scanner.log.fetch.wait-max-time-ms).
	// Default 500ms.
	ScannerFetchMaxWait time.Duration

	// WriterDisableDynamicPartitionCreation stops writers from creating the partition a row
	// targets when it does not exist yet; such writes then fail with PARTITION_NOT_EXISTS
	// (writer.dynamic-create-partition.enabled=false). By default a write to a missing
	// partition creates it, as the Java client does.
	WriterDisableDynamicPartitionCreation bool
	// WriterBackpressureBackoff is the first retry delay of a batch the server rejected with
	// STORAGE_BACKPRESSURE_EXCEPTION; later retries double it up to 4x
	// (writer.kv-backpressure.max-throttle). Default 3s, as the Java client.
	WriterBackpressureBackoff time.Duration

	// LookupMaxBatchSize caps the keys merged into one LOOKUP request per bucket
	// (lookup.max-batch-size). Default 128.
	LookupMaxBatchSize int
	// LookupMaxInflightRequests caps the LOOKUP requests of one table in flight to one
	// tablet server; lookups arriving meanwhile queue and are merged into the next request
	// (lookup.max-inflight-requests). A lookup never waits for a batch to fill: merging
	// happens only under concurrency. Default 16 (the Java client allows 128 per client but
	// also lingers up to lookup.batch-timeout to fill a batch; this client does not linger).
	LookupMaxInflightRequests int

	// MaxResponseSize bounds one response frame from a server; a larger frame is treated as a
	// protocol error and closes the connection. Default 100 MiB (a Fluss server's own request
	// limit); raise it together with ScannerFetchMaxBytes.
	MaxResponseSize int

	// SecurityProtocol is "PLAINTEXT" (default) or "sasl" (security.protocol).
	SecurityProtocol string
	// SASLMechanism must be "PLAIN" (security.sasl.mechanism).
	SASLMechanism string
	// SASLUsername and SASLPassword are the SASL/PLAIN credentials
	// (security.sasl.username, security.sasl.password).
	SASLUsername, SASLPassword string
}

// FromProperties builds a Config from Fluss client option names, as accepted by the
// official clients' Config(dict): bootstrap.servers, writer.request-max-size, writer.acks,
// writer.retries, writer.batch-size, writer.batch-timeout-ms, writer.buffer.memory-size,
// writer.enable-idempotence, scanner.log.fetch.max-bytes,
// scanner.log.fetch.max-bytes-for-bucket, scanner.log.fetch.wait-max-time-ms, connect-timeout
// (ms), request-timeout (ms), writer.dynamic-create-partition.enabled,
// writer.kv-backpressure.max-throttle (a Fluss duration such as "3s"), lookup.max-batch-size,
// lookup.max-inflight-requests, max-response-size, security.protocol,
// security.sasl.mechanism, security.sasl.username, security.sasl.password. Sizes are Fluss
// memory sizes ("64mb", "1 gb", "4096"). Unknown keys are an error.
func FromProperties(props map[string]string) (Config, error) {
	var c Config
	for k, v := range props {
		var err error
		switch k {
		case "bootstrap.servers":
			c.BootstrapServers = v
		case "writer.request-max-size":
			c.WriterRequestMaxSize, err = parseSize(v)
		case "writer.acks":
			c.WriterAcks = v
		case "writer.retries":
			c.WriterRetries, err = strconv.Atoi(v)
		case "writer.batch-size":
			c.WriterBatchSize, err = parseSize(v)
		case "writer.batch-timeout-ms":
			c.WriterBatchTimeout, err = parseMillis(v)
		case "writer.buffer.memory-size":
			c.WriterBufferMemorySize, err = parseSize(v)
		case "writer.enable-idempotence":
			var b bool
			b, err = strconv.ParseBool(v)
			c.WriterDisableIdempotence = !b
		case "scanner.log.fetch.max-bytes":
			c.ScannerFetchMaxBytes, err = parseSize(v)
		case "scanner.log.fetch.max-bytes-for-bucket":
			c.ScannerFetchMaxBytesForBucket, err = parseSize(v)
		case "scanner.log.fetch.wait-max-time-ms":
			c.ScannerFetchMaxWait, err = parseMillis(v)
		case "connect-timeout":
			c.ConnectTimeout, err = parseMillis(v)
		case "request-timeout":
			c.RequestTimeout, err = parseMillis(v)
		case "writer.dynamic-create-partition.enabled":
			var b bool
			b, err = strconv.ParseBool(v)
			c.WriterDisableDynamicPartitionCreation = !b
		case "writer.kv-backpressure.max-throttle":
			c.WriterBackpressureBackoff, err = metadata.ParseFlussDuration(v)
		case "lookup.max-batch-size":
			c.LookupMaxBatchSize, err = strconv.Atoi(v)
		case "lookup.max-inflight-requests":
			c.LookupMaxInflightRequests, err = strconv.Atoi(v)
		case "max-response-size":
			c.MaxResponseSize, err = parseSize(v)
		case "security.protocol":
			c.SecurityProtocol = v
		case "security.sasl.mechanism":
			c.SASLMechanism = v
		case "security.sasl.username":
			c.SASLUsername = v
		case "security.sasl.password":
			c.SASLPassword = v
		default:
			return Config{}, fmt.Errorf("fluss: unknown property %q", k)
		}
		if err != nil {
			return Config{}, fmt.Errorf("fluss: property %s=%q: %w", k, v, err)
		}
	}
	return c, nil
}

// parseSize parses a Fluss memory size ("64mb", "1 gb", "4096") that must fit in an int.
func parseSize(s string) (int, error) {
	n, err := metadata.ParseFlussMemorySize(s)
	if err != nil {
		return 0, err
	}
	if n > math.MaxInt {
		return 0, fmt.Errorf("size %s is too large", s)
	}
	return int(n), nil
}

func parseMillis(s string) (time.Duration, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("invalid milliseconds")
	}
	return time.Duration(n) * time.Millisecond, nil
}

// withDefaults returns c with zero fields replaced by defaults, or an error for invalid
// settings.
func (c Config) withDefaults() (Config, error) {
	if c.BootstrapServers == "" {
		c.BootstrapServers = "127.0.0.1:9123"
	}
	setDur := func(d *time.Duration, def time.Duration) {
		if *d <= 0 {
			*d = def
		}
	}
	setInt := func(n *int, def int) {
		if *n <= 0 {
			*n = def
		}
	}
	setDur(&c.RequestTimeout, 30*time.Second)
	setDur(&c.ConnectTimeout, 30*time.Second)
	setDur(&c.WriterBatchTimeout, 100*time.Millisecond)
	setDur(&c.ScannerFetchMaxWait, 500*time.Millisecond)
	setInt(&c.WriterRequestMaxSize, 10<<20)
	setInt(&c.WriterBatchSize, 2<<20)
	setInt(&c.WriterBufferMemorySize, 64<<20)
	setInt(&c.ScannerFetchMaxBytes, 16<<20)
	setInt(&c.ScannerFetchMaxBytesForBucket, 1<<20)
	setInt(&c.LookupMaxBatchSize, 128)
	setInt(&c.LookupMaxInflightRequests, 16)
	setInt(&c.MaxResponseSize, wire.DefaultMaxFrameSize)
	setDur(&c.WriterBackpressureBackoff, 3*time.Second)
	if c.WriterRetries == 0 {
		c.WriterRetries = math.MaxInt32
	} else if c.WriterRetries < 0 {
		c.WriterRetries = 0
	}
	if c.WriterAcks == "" {
		c.WriterAcks = "all"
	}
	if _, err := c.acks(); err != nil {
		return c, err
	}
	switch strings.ToLower(c.SecurityProtocol) {
	case "", "plaintext":
	case "sasl":
		if c.SASLMechanism != "" && !strings.EqualFold(c.SASLMechanism, "PLAIN") {
			return c, fmt.Errorf("fluss: unsupported SASL mechanism %q (only PLAIN)", c.SASLMechanism)
		}
		if c.SASLUsername == "" || c.SASLPassword == "" {
			return c, fmt.Errorf("fluss: security.protocol=sasl needs a username and a password")
		}
	default:
		return c, fmt.Errorf("fluss: unsupported security protocol %q", c.SecurityProtocol)
	}
	return c, nil
}

// acks returns the wire value of WriterAcks.
func (c Config) acks() (int32, error) {
	switch strings.ToLower(c.WriterAcks) {
	case "all", "-1":
		return -1, nil
	case "0":
		return 0, nil
	case "1":
		return 1, nil
	}
	return 0, fmt.Errorf("fluss: invalid writer.acks %q (want all, -1, 0 or 1)", c.WriterAcks)
}

// sasl reports whether SASL authentication is configured.
func (c Config) sasl() bool { return strings.EqualFold(c.SecurityProtocol, "sasl") }
