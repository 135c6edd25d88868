package metadata

import (
	"strconv"
	"strings"
	"time"
)

// Typed views of the table properties other packages act on. Each accessor returns the
// option's default when the property is absent; values are validated at CREATE_TABLE, so an
// unparseable stored value (which Validate would have rejected) also yields the default.

// TableProperties are a table's properties (TableDescriptor.Properties: the `table.*`
// options Fluss defines, keyed by their option names), with a typed accessor for each one
// the server acts on. A nil TableProperties is empty: every accessor returns its default.
type TableProperties map[string]string

// LogFormat is the record batch format of a table's log (table.log.format).
type LogFormat uint8

// Log formats.
const (
	LogFormatArrow LogFormat = iota
	LogFormatIndexed
	LogFormatCompacted
)

func (f LogFormat) String() string {
	return [...]string{"ARROW", "INDEXED", "COMPACTED"}[min(int(f), 2)]
}

// KvFormat is the row format of a primary-key table's stored values (table.kv.format).
type KvFormat uint8

// KV formats.
const (
	KvFormatCompacted KvFormat = iota
	KvFormatIndexed
)

func (f KvFormat) String() string {
	if f == KvFormatIndexed {
		return "INDEXED"
	}
	return "COMPACTED"
}

// ArrowCompression is the body compression of ARROW batches (table.log.arrow.compression.type).
type ArrowCompression uint8

// Arrow compression codecs.
const (
	CompressionZstd ArrowCompression = iota // the default
	CompressionNone
	CompressionLZ4Frame
)

func (c ArrowCompression) String() string {
	switch c {
	case CompressionNone:
		return "NONE"
	case CompressionLZ4Frame:
		return "LZ4_FRAME"
	}
	return "ZSTD"
}

// ChangelogImage selects what a primary-key table's changelog records (table.changelog.image).
type ChangelogImage uint8

// Changelog image modes.
const (
	ChangelogFull ChangelogImage = iota // -U/+U pairs with full before-images
	ChangelogWAL                        // after-images only
)

func (c ChangelogImage) String() string {
	if c == ChangelogWAL {
		return "WAL"
	}
	return "FULL"
}

// MergeEngine is a primary-key table's merge engine (table.merge-engine).
type MergeEngine uint8

// Merge engines. MergeEngineDefault (no property) keeps the last row.
const (
	MergeEngineDefault MergeEngine = iota
	MergeEngineFirstRow
	MergeEngineVersioned
	MergeEngineAggregation
)

func (m MergeEngine) String() string {
	return [...]string{"DEFAULT", "FIRST_ROW", "VERSIONED", "AGGREGATION"}[min(int(m), 3)]
}

// DeleteBehavior says what deletes do on a primary-key table (table.delete.behavior).
type DeleteBehavior uint8

// Delete behaviours.
const (
	DeleteAllow DeleteBehavior = iota
	DeleteIgnore
	DeleteDisable
)

func (b DeleteBehavior) String() string {
	return [...]string{"ALLOW", "IGNORE", "DISABLE"}[min(int(b), 2)]
}

// TimeUnit is the granularity of automatic partitions (table.auto-partition.time-unit).
type TimeUnit uint8

// Auto-partition time units.
const (
	TimeUnitDay TimeUnit = iota // the default
	TimeUnitYear
	TimeUnitQuarter
	TimeUnitMonth
	TimeUnitHour
)

func (u TimeUnit) String() string {
	return [...]string{"DAY", "YEAR", "QUARTER", "MONTH", "HOUR"}[min(int(u), 4)]
}

// prop returns the enum constant (upper case) of a known enum property, or its default.
func (p TableProperties) enumProp(key string) string {
	o := declared(key)
	if v, ok := p[key]; ok {
		if e, err := parseJavaEnum(o, v); err == nil {
			return e
		}
	}
	return strings.ToUpper(o.Default)
}

func (p TableProperties) intProp(key string, def int64, bits int) int64 {
	if v, ok := p[key]; ok {
		if n, err := parseJavaInt(v, bits); err == nil {
			return n
		}
	}
	return def
}

func (p TableProperties) boolProp(key string, def bool) bool {
	if v, ok := p[key]; ok {
		if b, err := parseJavaBool(v); err == nil {
			return b
		}
	}
	return def
}

func (p TableProperties) durationProp(key string) (time.Duration, bool) {
	if v, ok := p[key]; ok {
		if dur, err := ParseFlussDuration(v); err == nil {
			return dur, true
		}
	}
	if def, ok := TablePropertyDefault(key); ok {
		dur, err := ParseFlussDuration(def)
		return dur, err == nil
	}
	return 0, false
}

// ReplicationFactor returns table.replication.factor (0 if unset; set on every stored table).
func (p TableProperties) ReplicationFactor() int32 {
	return int32(p.intProp(PropReplicationFactor, 0, 32))
}

// LogFormat returns table.log.format (default ARROW).
func (p TableProperties) LogFormat() LogFormat {
	switch p.enumProp(PropLogFormat) {
	case "INDEXED":
		return LogFormatIndexed
	case "COMPACTED":
		return LogFormatCompacted
	}
	return LogFormatArrow
}

// KvFormat returns table.kv.format (default COMPACTED).
func (p TableProperties) KvFormat() KvFormat {
	if p.enumProp(PropKvFormat) == "INDEXED" {
		return KvFormatIndexed
	}
	return KvFormatCompacted
}

// KvFormatVersion returns table.kv.format-version, 0 when absent (tables created before
// versioning, which use version 1 key encoding).
func (p TableProperties) KvFormatVersion() int {
	return int(p.intProp(PropKvFormatVersion, 0, 32))
}

// ArrowCompression returns table.log.arrow.compression.type (default ZSTD) and the ZSTD level
// (table.log.arrow.compression.zstd.level, default 3).
func (p TableProperties) ArrowCompression() (ArrowCompression, int) {
	level := int(p.intProp(PropArrowCompressionZstdLevel, 3, 32))
	switch p.enumProp(PropArrowCompressionType) {
	case "NONE":
		return CompressionNone, level
	case "LZ4_FRAME":
		return CompressionLZ4Frame, level
	}
	return CompressionZstd, level
}

// ChangelogImage returns table.changelog.image (default FULL).
func (p TableProperties) ChangelogImage() ChangelogImage {
	if p.enumProp(PropChangelogImage) == "WAL" {
		return ChangelogWAL
	}
	return ChangelogFull
}

// MergeEngine returns table.merge-engine and, for VERSIONED, the version column name
// (table.merge-engine.versioned.ver-column).
func (p TableProperties) MergeEngine() (MergeEngine, string) {
	switch p.enumProp(PropMergeEngine) {
	case "FIRST_ROW":
		return MergeEngineFirstRow, ""
	case "VERSIONED":
		return MergeEngineVersioned, p[PropMergeEngineVersionColumn]
	case "AGGREGATION":
		return MergeEngineAggregation, ""
	}
	return MergeEngineDefault, ""
}

// DeleteBehavior returns table.delete.behavior (default ALLOW; the coordinator stores IGNORE
// for the first_row, versioned and aggregation merge engines unless set).
func (p TableProperties) DeleteBehavior() DeleteBehavior {
	switch p.enumProp(PropDeleteBehavior) {
	case "IGNORE":
		return DeleteIgnore
	case "DISABLE":
		return DeleteDisable
	}
	return DeleteAllow
}

// LogTTL returns table.log.ttl (default 7 days). Zero means segments are never deleted by age.
func (p TableProperties) LogTTL() time.Duration {
	ttl, _ := p.durationProp(PropLogTTL)
	return ttl
}

// LogLocalTTL returns table.log.local-ttl and whether it is set (unset: falls back to LogTTL).
func (p TableProperties) LogLocalTTL() (time.Duration, bool) { return p.durationProp(PropLogLocalTTL) }

// TieredLogLocalSegments returns table.log.tiered.local-segments (default 2).
func (p TableProperties) TieredLogLocalSegments() int {
	return int(p.intProp(PropLogTieredLocalSegments, 2, 32))
}

// DataLakeEnabled returns table.datalake.enabled (default false).
func (p TableProperties) DataLakeEnabled() bool { return p.boolProp(PropDatalakeEnabled, false) }

// DataLakeFormat returns table.datalake.format in lower case ("paimon", ...), or "".
func (p TableProperties) DataLakeFormat() string {
	if v, ok := p[PropDatalakeFormat]; ok {
		if e, err := parseJavaEnum(declared(PropDatalakeFormat), v); err == nil {
			return strings.ToLower(e)
		}
	}
	return ""
}

// StandbyReplicaEnabled returns table.kv.standby-replica.enabled (false when absent).
func (p TableProperties) StandbyReplicaEnabled() bool {
	return p.boolProp(PropKvStandbyReplicaEnabled, false)
}

// AutoIncrementCacheSize returns table.auto-increment.cache-size (default 100000).
func (p TableProperties) AutoIncrementCacheSize() int64 {
	return p.intProp(PropAutoIncrementCacheSize, 100000, 64)
}

// StatisticsColumns returns the columns table.statistics.columns asks batch statistics for:
// all (true, nil) for "*", the listed names otherwise, and (false, nil) when unset.
func (p TableProperties) StatisticsColumns() (all bool, columns []string) {
	v, ok := p[PropStatisticsColumns]
	if !ok {
		return false, nil
	}
	if v == "*" {
		return true, nil
	}
	for _, c := range strings.Split(v, ",") {
		if c = strings.TrimSpace(c); c != "" {
			columns = append(columns, c)
		}
	}
	return false, columns
}

// AutoPartition holds a table's automatic partitioning settings.
type AutoPartition struct {
	Enabled      bool
	Key          string // table.auto-partition.key; "" means the first partition key
	TimeUnit     TimeUnit
	TimeFormat   string // explicit table.auto-partition.time-format, or ""
	NumPrecreate int
	NumRetention int    // negative: never drop
	TimeZoneID   string // as configured, "" when unset (server local zone)
	Location     *time.Location
}

// EffectiveKey returns the partition key holding the time value: Key, or the first partition
// key of d.
func (a AutoPartition) EffectiveKey(d *TableDescriptor) string {
	if strings.TrimSpace(a.Key) != "" {
		return a.Key
	}
	if len(d.PartitionKeys) > 0 {
		return d.PartitionKeys[0]
	}
	return ""
}

// Format returns the time format partitions are named with: TimeFormat if set, else the
// unit's default (yyyy, yyyyQ, yyyyMM, yyyyMMdd, yyyyMMddHH).
func (a AutoPartition) Format() string {
	if a.TimeFormat != "" {
		return a.TimeFormat
	}
	return DefaultTimeFormat(a.TimeUnit)
}

// AutoPartition returns the table.auto-partition.* settings with their defaults (disabled,
// DAY, num-precreate 2, num-retention 7, the server's local time zone).
func (p TableProperties) AutoPartition() AutoPartition {
	a := AutoPartition{
		Enabled:      p.boolProp(PropAutoPartitionEnabled, false),
		Key:          p[PropAutoPartitionKey],
		TimeFormat:   p[PropAutoPartitionTimeFormat],
		NumPrecreate: int(p.intProp(PropAutoPartitionNumPrecreate, 2, 32)),
		NumRetention: int(p.intProp(PropAutoPartitionNumRetention, 7, 32)),
		TimeZoneID:   p[PropAutoPartitionTimeZone],
	}
	switch p.enumProp(PropAutoPartitionTimeUnit) {
	case "YEAR":
		a.TimeUnit = TimeUnitYear
	case "QUARTER":
		a.TimeUnit = TimeUnitQuarter
	case "MONTH":
		a.TimeUnit = TimeUnitMonth
	case "HOUR":
		a.TimeUnit = TimeUnitHour
	default:
		a.TimeUnit = TimeUnitDay
	}
	a.Location = LoadTimeZone(a.TimeZoneID)
	return a
}

// LoadTimeZone resolves a Java time-zone id. "" means the server's local zone. IANA names and
// UTC/GMT work as in Java; "GMT+8", "GMT+08:00", "UTC-5" style offsets become fixed zones. Like
// Java's TimeZone.getTimeZone, an unknown id falls back to GMT.
func LoadTimeZone(id string) *time.Location {
	if id == "" {
		return time.Local
	}
	if loc, err := time.LoadLocation(id); err == nil {
		return loc
	}
	for _, p := range []string{"GMT", "UTC"} {
		if rest, ok := strings.CutPrefix(id, p); ok && len(rest) > 1 && (rest[0] == '+' || rest[0] == '-') {
			if off, ok := parseZoneOffset(rest[1:]); ok {
				if rest[0] == '-' {
					off = -off
				}
				return time.FixedZone(id, off)
			}
		}
	}
	return time.UTC
}

// parseZoneOffset parses "H", "HH", "HHMM" or "HH:MM" into seconds (hours ≤ 23, minutes ≤ 59).
func parseZoneOffset(s string) (int, bool) {
	hh, mm := s, "0"
	if h, m, ok := strings.Cut(s, ":"); ok {
		hh, mm = h, m
	} else if len(s) == 4 {
		hh, mm = s[:2], s[2:]
	}
	if len(hh) == 0 || len(hh) > 2 || len(mm) == 0 || len(mm) > 2 {
		return 0, false
	}
	h, err1 := strconv.Atoi(hh)
	m, err2 := strconv.Atoi(mm)
	if err1 != nil || err2 != nil || h > 23 || m > 59 || h < 0 || m < 0 {
		return 0, false
	}
	return h*3600 + m*60, true
}

// TableConfig is the typed form of a table's properties, computed once (Config) so hot paths
// do not re-parse strings.
type TableConfig struct {
	ReplicationFactor   int32
	LogFormat           LogFormat
	KvFormat            KvFormat
	KvFormatVersion     int
	Compression         ArrowCompression
	ZstdLevel           int
	ChangelogImage      ChangelogImage
	MergeEngine         MergeEngine
	VersionColumn       string // VERSIONED merge engine only
	DeleteBehavior      DeleteBehavior
	LogTTL              time.Duration
	AutoPartition       AutoPartition
	DataLakeEnabled     bool
	DataLakeFormat      string
	StatisticsAll       bool
	StatisticsColumns   []string
	AutoIncrementCache  int64
	TieredLocalSegments int
}

// Config returns the typed view of all properties the server acts on.
func (p TableProperties) Config() TableConfig {
	c := TableConfig{
		ReplicationFactor:   p.ReplicationFactor(),
		LogFormat:           p.LogFormat(),
		KvFormat:            p.KvFormat(),
		KvFormatVersion:     p.KvFormatVersion(),
		ChangelogImage:      p.ChangelogImage(),
		DeleteBehavior:      p.DeleteBehavior(),
		LogTTL:              p.LogTTL(),
		AutoPartition:       p.AutoPartition(),
		DataLakeEnabled:     p.DataLakeEnabled(),
		DataLakeFormat:      p.DataLakeFormat(),
		AutoIncrementCache:  p.AutoIncrementCacheSize(),
		TieredLocalSegments: p.TieredLogLocalSegments(),
	}
	c.Compression, c.ZstdLevel = p.ArrowCompression()
	c.MergeEngine, c.VersionColumn = p.MergeEngine()
	c.StatisticsAll, c.StatisticsColumns = p.StatisticsColumns()
	return c
}
