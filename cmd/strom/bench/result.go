package bench

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Result is the outcome of one mode. Byte counts are record bytes on the wire (batches sent
// or received, compressed when the table compresses); RawBytes counts the uncompressed
// values (8 bytes per BIGINT plus string payloads) of the rows moved.
type Result struct {
	Mode     Mode    `json:"mode"`
	Rows     int64   `json:"rows"`
	Requests int64   `json:"requests"`
	Bytes    int64   `json:"bytes"`
	RawBytes int64   `json:"raw_bytes"`
	Seconds  float64 `json:"seconds"`

	RowsPerSec  float64 `json:"rows_per_sec"`
	MBPerSec    float64 `json:"mb_per_sec"`     // Bytes / Seconds / 1e6
	RawMBPerSec float64 `json:"raw_mb_per_sec"` // RawBytes / Seconds / 1e6
	QPS         float64 `json:"qps"`            // requests per second

	// Request latency percentiles in milliseconds (time from send to decoded answer).
	P50Ms  float64 `json:"p50_ms"`
	P99Ms  float64 `json:"p99_ms"`
	P999Ms float64 `json:"p999_ms"`
	MaxMs  float64 `json:"max_ms"`

	// ClientCPUUsPerRequest is the CPU time (user + system) of the bench process over the
	// timed section per request, in microseconds: the client's cost, which on a machine
	// shared with the server is taken from the server's cores.
	ClientCPUUsPerRequest float64 `json:"client_cpu_us_per_request,omitempty"`

	// ServerCPUSeconds is the CPU time (user + system) of the server's processes over the
	// timed section, when Config.ServerCPU says how to read it; 0 when not measured (or less
	// than the kernel's accounting resolution, 10 ms).
	ServerCPUSeconds float64 `json:"server_cpu_s,omitempty"`

	Misses    int64 `json:"misses,omitempty"`    // lookup: keys that came back absent
	Truncated bool  `json:"truncated,omitempty"` // stopped by MaxDuration before all work was done

	Table       string `json:"table"`
	Columns     int    `json:"columns"`
	StringBytes int    `json:"string_bytes"`
	BatchRows   int    `json:"batch_rows,omitempty"`
	Buckets     int    `json:"buckets"`
	Concurrency int    `json:"concurrency"`
	Compression string `json:"compression,omitempty"`
	Projection  []int  `json:"projection,omitempty"`
	LookupBatch int    `json:"lookup_batch,omitempty"`

	TargetColumns []int `json:"target_columns,omitempty"` // partial-update: the columns written
	PrefixFanout  int   `json:"prefix_fanout,omitempty"`  // prefix-lookup: rows per prefix

	// mixed: latency of the PUT_KVs (the P*Ms fields are the lookups').
	WriteP50Ms float64 `json:"write_p50_ms,omitempty"`
	WriteP99Ms float64 `json:"write_p99_ms,omitempty"`

	// tiering: RowsPerSec is rows into Iceberg per second; these are the appends' own rate,
	// the time from an append's acknowledgement to its rows in the lake snapshot, and the
	// number of distinct lake snapshots seen.
	AppendRowsPerSec float64 `json:"append_rows_per_sec,omitempty"`
	FreshnessP50Ms   float64 `json:"freshness_p50_ms,omitempty"`
	FreshnessP99Ms   float64 `json:"freshness_p99_ms,omitempty"`
	FreshnessMaxMs   float64 `json:"freshness_max_ms,omitempty"`
	LakeSnapshots    int     `json:"lake_snapshots,omitempty"`
}

// String is the one-line human summary.
func (r Result) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-6s %d rows in %.2fs: %s rows/s", r.Mode, r.Rows, r.Seconds, human(r.RowsPerSec))
	switch r.Mode {
	case ModeLookup, ModePrefixLookup:
		fmt.Fprintf(&b, ", %s QPS", human(r.QPS))
	case ModeMixed:
		fmt.Fprintf(&b, " written, %s lookup QPS; write latency p50 %s p99 %s; lookup", human(r.QPS), ms(r.WriteP50Ms), ms(r.WriteP99Ms))
	case ModeTiering:
		fmt.Fprintf(&b, " into Iceberg (appends %s rows/s); freshness p50 %s p99 %s max %s over %d lake snapshots; append",
			human(r.AppendRowsPerSec), ms(r.FreshnessP50Ms), ms(r.FreshnessP99Ms), ms(r.FreshnessMaxMs), r.LakeSnapshots)
	default:
		fmt.Fprintf(&b, ", %.1f MB/s (raw %.1f MB/s)", r.MBPerSec, r.RawMBPerSec)
	}
	fmt.Fprintf(&b, "; %d requests, latency p50 %s p99 %s p99.9 %s max %s", r.Requests, ms(r.P50Ms), ms(r.P99Ms), ms(r.P999Ms), ms(r.MaxMs))
	if r.ClientCPUUsPerRequest > 0 {
		fmt.Fprintf(&b, "; client CPU %.1f µs/request", r.ClientCPUUsPerRequest)
	}
	if r.ServerCPUSeconds > 0 {
		fmt.Fprintf(&b, "; server CPU %.2fs", r.ServerCPUSeconds)
	}
	if r.Misses > 0 {
		fmt.Fprintf(&b, "; %d MISSES", r.Misses)
	}
	if r.Truncated {
		b.WriteString("; TRUNCATED by -max-duration")
	}
	fmt.Fprintf(&b, " [%d cols, %dB strings", r.Columns, r.StringBytes)
	if r.BatchRows > 0 {
		fmt.Fprintf(&b, ", %d rows/batch", r.BatchRows)
	}
	if r.LookupBatch > 0 {
		fmt.Fprintf(&b, ", %d keys/request", r.LookupBatch)
	}
	fmt.Fprintf(&b, ", %d buckets, %d in flight", r.Buckets, r.Concurrency)
	if r.Compression != "" {
		fmt.Fprintf(&b, ", %s", r.Compression)
	}
	if len(r.Projection) > 0 {
		fmt.Fprintf(&b, ", projection %v", r.Projection)
	}
	if r.PrefixFanout > 0 {
		fmt.Fprintf(&b, ", %d rows/prefix", r.PrefixFanout)
	}
	if len(r.TargetColumns) > 0 {
		fmt.Fprintf(&b, ", target columns %v", r.TargetColumns)
	}
	b.WriteString("]")
	return b.String()
}

func human(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%.2fM", v/1e6)
	case v >= 1e4:
		return fmt.Sprintf("%.1fk", v/1e3)
	}
	return fmt.Sprintf("%.0f", v)
}

func ms(v float64) string {
	if v < 1 {
		return fmt.Sprintf("%.0fµs", v*1000)
	}
	return fmt.Sprintf("%.2fms", v)
}

// tally accumulates one mode's counters. Each worker owns one tally; merge combines them.
type tally struct {
	rows, requests, bytes, raw, misses int64
	lat                                []time.Duration
	cpu                                time.Duration // CPU time of this process over the timed section
	serverCPU                          time.Duration // CPU time of the server over it; 0 = not measured
}

func (t *tally) merge(o *tally) {
	t.rows += o.rows
	t.requests += o.requests
	t.bytes += o.bytes
	t.raw += o.raw
	t.misses += o.misses
	t.lat = append(t.lat, o.lat...)
}

// result turns the merged tally into a Result with rates over elapsed.
func (t *tally) result(mode Mode, elapsed time.Duration) Result {
	r := Result{Mode: mode, Rows: t.rows, Requests: t.requests, Bytes: t.bytes, RawBytes: t.raw, Misses: t.misses, Seconds: elapsed.Seconds()}
	if t.requests > 0 {
		r.ClientCPUUsPerRequest = float64(t.cpu.Microseconds()) / float64(t.requests)
	}
	r.ServerCPUSeconds = t.serverCPU.Seconds()
	if s := elapsed.Seconds(); s > 0 {
		r.RowsPerSec = float64(t.rows) / s
		r.MBPerSec = float64(t.bytes) / s / 1e6
		r.RawMBPerSec = float64(t.raw) / s / 1e6
		r.QPS = float64(t.requests) / s
	}
	if len(t.lat) > 0 {
		slices.Sort(t.lat)
		r.P50Ms = quantileMs(t.lat, 0.50)
		r.P99Ms = quantileMs(t.lat, 0.99)
		r.P999Ms = quantileMs(t.lat, 0.999)
		r.MaxMs = float64(t.lat[len(t.lat)-1]) / 1e6
	}
	return r
}

// quantileMs returns the q-quantile (nearest rank) of sorted latencies, in milliseconds.
func quantileMs(sorted []time.Duration, q float64) float64 {
	i := int(q*float64(len(sorted))+0.5) - 1
	i = max(0, min(i, len(sorted)-1))
	return float64(sorted[i]) / 1e6
}
