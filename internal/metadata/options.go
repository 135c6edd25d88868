package metadata

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/stromdb/strom/internal/options"
)

// Table property keys (the `table.*` options of Fluss 1.0's ConfigOptions). Their types,
// defaults, enum constants, alterability and status are declared in the option registry
// (internal/options/table.go); this package validates and reads them from there.
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

// tableOption returns the registry's declaration of a table property, and whether there is
// one.
func tableOption(key string) (*options.Option, bool) {
	o, ok := options.Lookup(key)
	if !ok || o.Scope != options.Table {
		return nil, false
	}
	return o, true
}

// declared returns the declaration of a property this package reads by its constant; each
// constant above is declared in the registry (TestKnownTableProperties).
func declared(key string) *options.Option {
	if o, ok := tableOption(key); ok {
		return o
	}
	return &options.Option{Key: key, Scope: options.Table}
}

// IsTableProperty reports whether key is a table (storage) property, i.e. starts with
// "table.". Other keys are custom properties.
func IsTableProperty(key string) bool { return strings.HasPrefix(key, TablePropertyPrefix) }

// IsKnownTableProperty reports whether key is a table property this server understands.
func IsKnownTableProperty(key string) bool {
	_, ok := tableOption(key)
	return ok
}

// IsAlterableTableProperty reports whether ALTER TABLE may set or reset key (Fluss 1.0 list).
func IsAlterableTableProperty(key string) bool {
	o, ok := tableOption(key)
	return ok && o.Alterable
}

// KnownTableProperties returns the known table property keys, sorted.
func KnownTableProperties() []string {
	var keys []string
	for _, o := range options.All() {
		if o.Scope == options.Table {
			keys = append(keys, o.Key)
		}
	}
	sort.Strings(keys)
	return keys
}

// TablePropertyDefault returns the default value text of a known property and whether it has
// one.
func TablePropertyDefault(key string) (string, bool) {
	o, ok := tableOption(key)
	if !ok || o.Default == "" {
		return "", false
	}
	return o.Default, true
}

// checkOptionValue parses value for option o and returns Java's reason text on failure.
func checkOptionValue(o *options.Option, value string) string {
	var err error
	switch o.Type {
	case options.Int:
		_, err = parseJavaInt(value, 32)
	case options.Long:
		_, err = parseJavaInt(value, 64)
	case options.Bool:
		_, err = parseJavaBool(value)
	case options.Duration:
		_, err = ParseFlussDuration(value)
	case options.Enum:
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
func parseJavaEnum(o *options.Option, value string) (string, error) {
	up := strings.ToUpper(value)
	for _, e := range o.Enum {
		if strings.ToUpper(e) == up {
			return strings.ToUpper(e), nil
		}
	}
	return "", fmt.Errorf("Could not parse value for enum class %s. Expected one of: [[%s]]",
		o.EnumClass, strings.Join(o.Enum, ", "))
}

// ParseFlussDuration parses a Fluss duration option value such as "7d", "3min", "500 ms" or
// "10 s" (Java TimeUtils.parseDuration), as options.ParseFlussDuration does.
func ParseFlussDuration(text string) (time.Duration, error) { return options.ParseFlussDuration(text) }
