package metadata

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Table property keys (the `table.*` options of Fluss 1.0's ConfigOptions).
const (
	PropReplicationFactor          = "table.replication.factor"
	PropLogFormat                  = "table.log.format"
	PropArrowCompressionType       = "table.log.arrow.compression.type"
	PropArrowCompressionZstdLevel  = "table.log.arrow.compression.zstd.level"
	PropKvFormat                   = "table.kv.format"
	PropKvFormatVersion            = "table.kv.format-version"
	PropKvStandbyReplicaEnabled    = "table.kv.standby-replica.enabled"
	PropAutoPartitionEnabled       = "table.auto-partition.enabled"
	PropAutoPartitionKey           = "table.auto-partition.key"
	PropAutoPartitionTimeUnit      = "table.auto-partition.time-unit"
	PropAutoPartitionTimeFormat    = "table.auto-partition.time-format"
	PropAutoPartitionTimeZone      = "table.auto-partition.time-zone"
	PropAutoPartitionNumPrecreate  = "table.auto-partition.num-precreate"
	PropAutoPartitionNumRetention  = "table.auto-partition.num-retention"
	PropLogTTL                     = "table.log.ttl"
	PropLogTieredLocalSegments     = "table.log.tiered.local-segments"
	PropLogLocalTTL                = "table.log.local-ttl"
	PropDatalakeEnabled            = "table.datalake.enabled"
	PropDatalakeHistoricalPartEnab = "table.datalake.historical-partition.enabled"
	PropDatalakeFormat             = "table.datalake.format"
	PropDatalakeFreshness          = "table.datalake.freshness"
	PropDatalakeAutoCompaction     = "table.datalake.auto-compaction"
	PropDatalakeAutoExpireSnapshot = "table.datalake.auto-expire-snapshot"
	PropMergeEngine                = "table.merge-engine"
	PropMergeEngineVersionColumn   = "table.merge-engine.versioned.ver-column"
	PropDeleteBehavior             = "table.delete.behavior"
	PropAutoIncrementCacheSize     = "table.auto-increment.cache-size"
	PropChangelogImage             = "table.changelog.image"
	PropStatisticsColumns          = "table.statistics.columns"
)

// TablePropertyPrefix marks table (storage) properties; other keys are custom properties.
const TablePropertyPrefix = "table."

// CurrentKvFormatVersion is the KV key-encoding version new primary-key tables get.
const CurrentKvFormatVersion = 2

type optionKind uint8

const (
	kindString optionKind = iota
	kindInt
	kindLong
	kindBool
	kindDuration
	kindEnum
)

// tableOption describes one known table property: how its value parses and its default.
type tableOption struct {
	kind      optionKind
	enumClass string   // Java class name, for messages
	enum      []string // enum constants as Java's toString prints them
	def       string   // default value text, "" when the option has none
	alterable bool     // may be changed by ALTER TABLE (Fluss 1.0)
}

var tableOptions = map[string]tableOption{
	PropReplicationFactor:          {kind: kindInt},
	PropLogFormat:                  {kind: kindEnum, enumClass: "org.apache.fluss.metadata.LogFormat", enum: []string{"ARROW", "INDEXED", "COMPACTED"}, def: "ARROW"},
	PropArrowCompressionType:       {kind: kindEnum, enumClass: "org.apache.fluss.compression.ArrowCompressionType", enum: []string{"NONE", "LZ4_FRAME", "ZSTD"}, def: "ZSTD"},
	PropArrowCompressionZstdLevel:  {kind: kindInt, def: "3"},
	PropKvFormat:                   {kind: kindEnum, enumClass: "org.apache.fluss.metadata.KvFormat", enum: []string{"COMPACTED", "INDEXED"}, def: "COMPACTED"},
	PropKvFormatVersion:            {kind: kindInt},
	PropKvStandbyReplicaEnabled:    {kind: kindBool, alterable: true},
	PropAutoPartitionEnabled:       {kind: kindBool, def: "false", alterable: true},
	PropAutoPartitionKey:           {kind: kindString},
	PropAutoPartitionTimeUnit:      {kind: kindEnum, enumClass: "org.apache.fluss.config.AutoPartitionTimeUnit", enum: []string{"YEAR", "QUARTER", "MONTH", "DAY", "HOUR"}, def: "DAY"},
	PropAutoPartitionTimeFormat:    {kind: kindString},
	PropAutoPartitionTimeZone:      {kind: kindString},
	PropAutoPartitionNumPrecreate:  {kind: kindInt, def: "2", alterable: true},
	PropAutoPartitionNumRetention:  {kind: kindInt, def: "7", alterable: true},
	PropLogTTL:                     {kind: kindDuration, def: "7d", alterable: true},
	PropLogTieredLocalSegments:     {kind: kindInt, def: "2", alterable: true},
	PropLogLocalTTL:                {kind: kindDuration, alterable: true},
	PropDatalakeEnabled:            {kind: kindBool, def: "false", alterable: true},
	PropDatalakeHistoricalPartEnab: {kind: kindBool, def: "false", alterable: true},
	PropDatalakeFormat:             {kind: kindEnum, enumClass: "org.apache.fluss.metadata.DataLakeFormat", enum: []string{"paimon", "lance", "iceberg", "hudi"}},
	PropDatalakeFreshness:          {kind: kindDuration, def: "3min", alterable: true},
	PropDatalakeAutoCompaction:     {kind: kindBool, def: "false", alterable: true},
	PropDatalakeAutoExpireSnapshot: {kind: kindBool, def: "true"}, // Strom's default; Fluss's is false (docs/lake.md)
	PropMergeEngine:                {kind: kindEnum, enumClass: "org.apache.fluss.metadata.MergeEngineType", enum: []string{"FIRST_ROW", "VERSIONED", "AGGREGATION"}},
	PropMergeEngineVersionColumn:   {kind: kindString},
	PropDeleteBehavior:             {kind: kindEnum, enumClass: "org.apache.fluss.metadata.DeleteBehavior", enum: []string{"ALLOW", "IGNORE", "DISABLE"}, def: "ALLOW"},
	PropAutoIncrementCacheSize:     {kind: kindLong, def: "100000"},
	PropChangelogImage:             {kind: kindEnum, enumClass: "org.apache.fluss.metadata.ChangelogImage", enum: []string{"FULL", "WAL"}, def: "FULL"},
	PropStatisticsColumns:          {kind: kindString, alterable: true},
}

// IsTableProperty reports whether key is a table (storage) property, i.e. starts with
// "table.". Other keys are custom properties.
func IsTableProperty(key string) bool { return strings.HasPrefix(key, TablePropertyPrefix) }

// IsKnownTableProperty reports whether key is a table property this server understands.
func IsKnownTableProperty(key string) bool {
	_, ok := tableOptions[key]
	return ok
}

// IsAlterableTableProperty reports whether ALTER TABLE may set or reset key (Fluss 1.0 list).
func IsAlterableTableProperty(key string) bool { return tableOptions[key].alterable }

// KnownTableProperties returns the known table property keys, sorted.
func KnownTableProperties() []string {
	keys := make([]string, 0, len(tableOptions))
	for k := range tableOptions {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// TablePropertyDefault returns the default value text of a known property and whether it has
// one.
func TablePropertyDefault(key string) (string, bool) {
	o, ok := tableOptions[key]
	if !ok || o.def == "" {
		return "", false
	}
	return o.def, true
}

// checkOptionValue parses value for option o and returns Java's reason text on failure.
func checkOptionValue(o tableOption, value string) string {
	var err error
	switch o.kind {
	case kindInt:
		_, err = parseJavaInt(value, 32)
	case kindLong:
		_, err = parseJavaInt(value, 64)
	case kindBool:
		_, err = parseJavaBool(value)
	case kindDuration:
		_, err = ParseFlussDuration(value)
	case kindEnum:
		_, err = parseJavaEnum(o, value)
	}
	if err != nil {
		return err.Error()
	}
	return ""
}

// parseJavaInt parses like Integer.parseInt/Long.parseLong: optional sign, decimal digits, no
// spaces.
func parseJavaInt(s string, bits int) (int64, error) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || i == 0 && (c == '+' || c == '-') && len(s) > 1) {
			return 0, fmt.Errorf("For input string: %q", s)
		}
	}
	n, err := strconv.ParseInt(s, 10, bits)
	if err != nil {
		return 0, fmt.Errorf("For input string: %q", s)
	}
	return n, nil
}

func parseJavaBool(s string) (bool, error) {
	switch strings.ToUpper(s) {
	case "TRUE":
		return true, nil
	case "FALSE":
		return false, nil
	}
	return false, fmt.Errorf("Unrecognized option for boolean: %s. Expected either true or false(case insensitive)", s)
}

// parseJavaEnum matches value case-insensitively against the enum constants and returns the
// constant in upper case.
func parseJavaEnum(o tableOption, value string) (string, error) {
	up := strings.ToUpper(value)
	for _, e := range o.enum {
		if strings.ToUpper(e) == up {
			return strings.ToUpper(e), nil
		}
	}
	return "", fmt.Errorf("Could not parse value for enum class %s. Expected one of: [[%s]]",
		o.enumClass, strings.Join(o.enum, ", "))
}

// durationUnits maps Fluss's duration unit labels (TimeUtils) to Go units.
var durationUnits = map[string]time.Duration{
	"d": 24 * time.Hour, "day": 24 * time.Hour, "days": 24 * time.Hour,
	"h": time.Hour, "hour": time.Hour, "hours": time.Hour,
	"min": time.Minute, "m": time.Minute, "minute": time.Minute, "minutes": time.Minute,
	"s": time.Second, "sec": time.Second, "secs": time.Second, "second": time.Second, "seconds": time.Second,
	"ms": time.Millisecond, "milli": time.Millisecond, "millis": time.Millisecond,
	"millisecond": time.Millisecond, "milliseconds": time.Millisecond,
	"µs": time.Microsecond, "micro": time.Microsecond, "micros": time.Microsecond,
	"microsecond": time.Microsecond, "microseconds": time.Microsecond,
	"ns": time.Nanosecond, "nano": time.Nanosecond, "nanos": time.Nanosecond,
	"nanosecond": time.Nanosecond, "nanoseconds": time.Nanosecond,
}

// ParseFlussDuration parses a Fluss duration option value such as "7d", "3min", "500 ms" or
// "10 s" (Java TimeUtils.parseDuration: a non-negative integer, optional spaces, a unit label,
// case-insensitive). Values that do not fit in a time.Duration (about 292 years) are rejected.
func ParseFlussDuration(text string) (time.Duration, error) {
	s := strings.TrimSpace(text)
	if s == "" {
		return 0, fmt.Errorf("argument is an empty- or whitespace-only string")
	}
	pos := 0
	for pos < len(s) && s[pos] >= '0' && s[pos] <= '9' {
		pos++
	}
	number := s[:pos]
	label := strings.ToLower(strings.TrimSpace(s[pos:]))
	if number == "" {
		return 0, fmt.Errorf("text does not start with a number")
	}
	v, err := strconv.ParseInt(number, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("The value '%s' cannot be re represented as 64bit number (numeric overflow).", number)
	}
	if label == "" {
		return 0, fmt.Errorf("The time value '%s' does not specify a time unit. Time must be specified with "+
			"units milliseconds (ms), seconds (s), minutes (min), hour (h), or day (d). E.g. 50ms, 100s, 3h.", text)
	}
	unit, ok := durationUnits[label]
	if !ok {
		return 0, fmt.Errorf("Time interval unit label '%s' does not match any of the recognized units: "+
			"DAYS: (d | day | days), HOURS: (h | hour | hours), MINUTES: (min | m | minute | minutes), "+
			"SECONDS: (s | sec | secs | second | seconds), MILLISECONDS: (ms | milli | millis | millisecond | milliseconds), "+
			"MICROSECONDS: (µs | micro | micros | microsecond | microseconds), "+
			"NANOSECONDS: (ns | nano | nanos | nanosecond | nanoseconds)", label)
	}
	if v > math.MaxInt64/int64(unit) {
		return 0, fmt.Errorf("The duration '%s' is too large", text)
	}
	return time.Duration(v) * unit, nil
}
