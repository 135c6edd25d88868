package bench

import (
	"fmt"
	"strings"
	"time"

	"github.com/stromdb/strom/cmd/strom/progress"
	"github.com/stromdb/strom/internal/arrowlog"
	"github.com/stromdb/strom/internal/metadata"
)

// Mode names a measurement.
type Mode string

// The modes, in the order Run performs them when several are asked for.
const (
	ModeAppend Mode = "append" // PRODUCE_LOG to a log table
	ModeScan   Mode = "scan"   // FETCH_LOG of the whole log table from the earliest offset
	ModeUpsert Mode = "upsert" // PUT_KV to a primary-key table
	ModeLookup Mode = "lookup" // LOOKUP of random existing keys

	ModeUpdate        Mode = "update"         // PUT_KV of new values for every upserted key
	ModePartialUpdate Mode = "partial-update" // PUT_KV with target_columns over every upserted key
	ModeMixed         Mode = "mixed"          // updates and lookups interleaved on the same connections
	ModePrefixLookup  Mode = "prefix-lookup"  // PREFIX_LOOKUP of random ids of a composite-key table
)

// AllModes lists every mode in run order.
var AllModes = []Mode{ModeAppend, ModeScan, ModeUpsert, ModeUpdate, ModePartialUpdate, ModeLookup, ModeMixed, ModePrefixLookup, ModeTiering}

// ParseMode maps a mode name to a Mode.
func ParseMode(s string) (Mode, error) {
	for _, m := range AllModes {
		if string(m) == strings.ToLower(s) {
			return m, nil
		}
	}
	names := make([]string, len(AllModes))
	for i, m := range AllModes {
		names[i] = string(m)
	}
	return "", fmt.Errorf("unknown mode %q (want one of %s)", s, strings.Join(names, ", "))
}

// Config describes one benchmark run. The zero value is not usable; start from
// DefaultConfig.
type Config struct {
	Bootstrap string // coordinator HOST:PORT
	Username  string // SASL/PLAIN user; empty for none
	Password  string

	Database string // created if missing; dropped at the end if this run created it
	Table    string // base name; the log table is Table+"_log", the PK table Table+"_kv"
	Keep     bool   // keep the tables (and database) after the run

	Rows        int // rows to write (append, upsert) and to load before scan/lookup
	LogRows     int // rows of the log-table workloads (append, scan) when not Rows; 0 means Rows
	Columns     int // total columns including the BIGINT key column "id"; at least 1
	StringBytes int // bytes of each STRING column; 0 makes every column BIGINT
	BatchRows   int // rows per batch (one batch per request)
	Buckets     int
	Concurrency int // requests in flight
	Conns       int // connections per tablet server shared by the workers; 0 = one per worker

	Compression arrowlog.Compression // Arrow body compression of the log batches
	ZstdLevel   int

	Projection []int // scan: column indexes to fetch; nil = all columns
	FetchBytes int   // scan: max_fetch_bytes per bucket

	Lookups     int // lookup: number of LOOKUP requests
	LookupBatch int // lookup: keys per LOOKUP request

	PartialColumns int // partial-update: the first PartialColumns columns (key included) are written
	PrefixFanout   int // prefix-lookup: rows per id (primary-key prefix)

	LakeFreshness string        // tiering: table.datalake.freshness of the lake table
	LakePoll      time.Duration // tiering: interval of the GET_LAKE_SNAPSHOT polls
	AppendRate    int           // tiering: rows/s the appends are paced to; 0 = as fast as they go

	Acks        int32
	MaxDuration time.Duration // upper bound of each timed section
	Seed        uint64

	// Progress, when set, starts a progress bar for each timed section, given its label and
	// the rows it will process; Run advances it as requests complete and finishes it.
	Progress func(label string, totalRows int64) *progress.Bar `json:"-"`

	// ServerCPU, when set, returns the CPU time (user + system) the server's processes have
	// used so far. Run reads it right before and right after every timed section, so each
	// Result's ServerCPUSeconds is the server's cost of exactly the work that was timed.
	ServerCPU func() (time.Duration, error) `json:"-"`
}

// DefaultConfig returns the defaults of `strom bench`.
func DefaultConfig() Config {
	return Config{
		Bootstrap:      "127.0.0.1:9123",
		Database:       "strom_bench",
		Table:          "bench",
		Rows:           1_000_000,
		Columns:        10,
		StringBytes:    16,
		BatchRows:      10_000,
		Buckets:        1,
		Concurrency:    4,
		Compression:    arrowlog.CompressionNone,
		ZstdLevel:      arrowlog.DefaultZstdLevel,
		FetchBytes:     1 << 20,
		Lookups:        100_000,
		LookupBatch:    1,
		PartialColumns: 2,
		PrefixFanout:   10,
		LakeFreshness:  "1s",
		LakePoll:       50 * time.Millisecond,
		Acks:           -1,
		MaxDuration:    2 * time.Minute,
		Seed:           1,
	}
}

// logRows is how many rows the log-table workloads append: LogRows, or Rows when it is 0, so a
// steady-state run can hold more log rows than primary keys.
func (c *Config) logRows() int {
	if c.LogRows > 0 {
		return c.LogRows
	}
	return c.Rows
}

// Validate reports the first unusable setting.
func (c *Config) Validate() error {
	switch {
	case c.Bootstrap == "":
		return fmt.Errorf("bench: no bootstrap address")
	case c.Rows < 1:
		return fmt.Errorf("bench: rows %d must be positive", c.Rows)
	case c.LogRows < 0:
		return fmt.Errorf("bench: log rows %d must not be negative", c.LogRows)
	case c.Columns < 1:
		return fmt.Errorf("bench: columns %d must be at least 1 (the key)", c.Columns)
	case c.StringBytes < 0:
		return fmt.Errorf("bench: string bytes %d must not be negative", c.StringBytes)
	case c.BatchRows < 1:
		return fmt.Errorf("bench: batch rows %d must be positive", c.BatchRows)
	case c.Buckets < 1:
		return fmt.Errorf("bench: buckets %d must be positive", c.Buckets)
	case c.Concurrency < 1:
		return fmt.Errorf("bench: concurrency %d must be positive", c.Concurrency)
	case c.Conns < 0:
		return fmt.Errorf("bench: conns %d must not be negative", c.Conns)
	case c.FetchBytes < 1:
		return fmt.Errorf("bench: fetch bytes %d must be positive", c.FetchBytes)
	case c.Lookups < 1 || c.LookupBatch < 1:
		return fmt.Errorf("bench: lookups %d and lookup batch %d must be positive", c.Lookups, c.LookupBatch)
	case c.PartialColumns < 2:
		return fmt.Errorf("bench: partial columns %d must be at least 2 (the key and one value)", c.PartialColumns)
	case c.PrefixFanout < 1:
		return fmt.Errorf("bench: prefix fanout %d must be positive", c.PrefixFanout)
	case c.LakePoll <= 0 || c.AppendRate < 0:
		return fmt.Errorf("bench: lake poll interval %v must be positive and append rate %d not negative", c.LakePoll, c.AppendRate)
	case c.MaxDuration <= 0:
		return fmt.Errorf("bench: max duration must be positive")
	}
	if err := metadata.ValidateTablePath(c.Database, c.Table+"_log"); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	for i, p := range c.Projection {
		if p < 0 || p >= c.Columns || (i > 0 && p <= c.Projection[i-1]) {
			return fmt.Errorf("bench: projection %v must be increasing column indexes below %d", c.Projection, c.Columns)
		}
	}
	return nil
}

// columns returns the benchmark schema: "id" BIGINT NOT NULL, then for i >= 1 a STRING column
// "s<i>" at odd i (when StringBytes > 0) and a BIGINT column "v<i>" otherwise.
func (c *Config) columns() []metadata.Column {
	cols := make([]metadata.Column, c.Columns)
	cols[0] = metadata.Column{Name: "id", Type: metadata.DataType{Root: metadata.BigInt, NotNull: true}, ID: metadata.UnknownID}
	for i := 1; i < c.Columns; i++ {
		if c.isString(i) {
			cols[i] = metadata.Column{Name: fmt.Sprintf("s%d", i), Type: metadata.DataType{Root: metadata.String}, ID: metadata.UnknownID}
		} else {
			cols[i] = metadata.Column{Name: fmt.Sprintf("v%d", i), Type: metadata.DataType{Root: metadata.BigInt}, ID: metadata.UnknownID}
		}
	}
	return cols
}

func (c *Config) isString(col int) bool { return col > 0 && c.StringBytes > 0 && col%2 == 1 }

// rawRowBytes is the uncompressed value size of one row: 8 per BIGINT plus the string
// payloads. It is the basis of the "raw MB/s" figures, comparable across compressions.
func (c *Config) rawRowBytes(cols []int) int64 {
	var n int64
	for _, i := range cols {
		if c.isString(i) {
			n += int64(c.StringBytes)
		} else {
			n += 8
		}
	}
	return n
}

func (c *Config) allColumns() []int {
	out := make([]int, c.Columns)
	for i := range out {
		out[i] = i
	}
	return out
}

// descriptor returns the table descriptor of the log table (pk false) or the PK table.
func (c *Config) descriptor(pk bool) metadata.TableDescriptor {
	d := metadata.TableDescriptor{
		Schema:      metadata.Schema{Columns: c.columns()},
		BucketCount: int32(c.Buckets),
		Properties: map[string]string{
			metadata.PropArrowCompressionType: c.Compression.String(),
		},
		CustomProperties: map[string]string{},
	}
	if c.Compression == arrowlog.CompressionZstd {
		d.Properties[metadata.PropArrowCompressionZstdLevel] = fmt.Sprint(c.ZstdLevel)
	}
	if pk {
		d.Schema.PrimaryKey = []string{"id"}
		d.BucketKeys = []string{"id"}
	}
	d.Schema.AssignFieldIDs()
	return d
}
