package metadata

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/options"
)

// systemColumns are column names reserved by Fluss (log metadata columns and changelog
// columns of lake/virtual tables).
var systemColumns = []string{"__offset", "__timestamp", "__bucket", "_change_type", "_log_offset", "_commit_timestamp"}

const keyUnsupportedTypes = "[ARRAY, MAP, ROW]"

// Validate checks a normalised descriptor with defaults applied, as Java's
// TableDescriptorValidation.validateTableDescriptor does, returning the first violation as a
// *ferr.Error with Java's code and message:
//
//   - every property is a known table.* option with a parseable value (39);
//   - a bucket count is set (15) and at most max.bucket.num (49); bucket-key and primary-key
//     columns are not ARRAY/MAP/ROW (15);
//   - table.replication.factor is set and positive (39);
//   - a primary-key table with COMPACTED kv format uses ARROW or COMPACTED logs (39);
//   - the ZSTD level is within 1..22 when set (39);
//   - merge engines only on primary-key tables, versioned needs an INT/BIGINT/TIMESTAMP/
//     TIMESTAMP_LTZ version column, aggregation forbids the WAL changelog and checks each
//     column's aggregate function; other tables may not carry aggregate functions (39);
//   - table.delete.behavior only on primary-key tables, never ALLOW with first_row/versioned (39);
//   - local segments > 0, local TTL ≤ TTL when both positive (39);
//   - historical-partition requirements (39);
//   - partitioning: auto-partition only on partitioned tables (39), supported key types,
//     valid time format, multi-key auto-partition settings, DATE keys with DAY units (15);
//   - no reserved system column names (15);
//   - statistics columns exist and have supported types, log tables only (39);
//   - a datalake-enabled table's format equals the cluster's (39).
//
// Before those, checks Java does not make but without which clients cannot load the table
// (Strom's own limits, docs/protocol.md): at least one column; column and ROW field names
// non-empty, valid UTF-8 without control characters and at most MaxColumnNameBytes; field ids
// in [0, MaxFieldID] (15); property keys and values of bounded size and valid UTF-8 (39);
// the whole descriptor at most MaxDescriptorBytes as JSON (15).
func (d *TableDescriptor) Validate(c ClusterDefaults) error {
	vc := descriptorChecks{d: d}
	steps := []func() error{
		vc.checkColumns,
		vc.checkPropertySizes,
		vc.checkDescriptorSize,
		vc.checkPropertyKeys,
		func() error { return vc.checkDistribution(c.maxBucketNum()) },
		vc.checkPrimaryKeyTypes,
		vc.checkReplicationFactor,
		vc.checkLogFormat,
		vc.checkArrowCompression,
		vc.checkMergeEngine,
		vc.checkDeleteBehavior,
		vc.checkTieredLog,
		vc.checkHistoricalPartition,
		vc.checkPartition,
		vc.checkSystemColumns,
		vc.checkStatistics,
		func() error { return vc.checkLakeFormat(c) },
		vc.checkRefusedProperties,
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return err
		}
	}
	return nil
}

// descriptorChecks are the steps of TableDescriptor.Validate, one rule of CREATE_TABLE (and
// ALTER_TABLE) each, on the descriptor d. They read d and never change it.
type descriptorChecks struct {
	d *TableDescriptor
}

// Limits on table descriptors that Java leaves open (see Validate).
const (
	// MaxColumnNameBytes bounds a column or ROW field name.
	MaxColumnNameBytes = 1024
	// MaxFieldID is the largest column or field id: ids are int32 on the wire and a new
	// column gets the highest id + 1, which must not overflow.
	MaxFieldID = math.MaxInt32 - 1
	// MaxPropertyKeyBytes and MaxPropertyValueBytes bound each table or custom property.
	MaxPropertyKeyBytes   = 1024
	MaxPropertyValueBytes = 64 << 10
	// MaxDescriptorBytes bounds a table descriptor as stored (its table_json).
	MaxDescriptorBytes = 1 << 20
)

// checkJSONText refuses a descriptor that is not valid UTF-8 (Java's JSON parser refuses it
// too); Go's decoder would silently turn the bad bytes into U+FFFD, storing names the client
// never sent.
func checkJSONText(data []byte) error {
	if !utf8.Valid(data) {
		return fmt.Errorf("Failed to parse table descriptor: the JSON is not valid UTF-8")
	}
	return nil
}

// checkName returns why name cannot be a column or field name, or "".
func checkName(name string) string {
	switch {
	case name == "":
		return "must not be empty"
	case len(name) > MaxColumnNameBytes:
		return fmt.Sprintf("is %d bytes long; the limit is %d", len(name), MaxColumnNameBytes)
	case !utf8.ValidString(name):
		return "is not valid UTF-8"
	}
	for _, r := range name {
		if unicode.IsControl(r) {
			return fmt.Sprintf("contains the control character %U", r)
		}
	}
	return ""
}

func (vc descriptorChecks) checkColumns() error {
	d := vc.d
	if len(d.Schema.Columns) == 0 {
		return invalidTable("A table must have at least one column.")
	}
	if d.Schema.HighestFieldID < -1 || d.Schema.HighestFieldID > MaxFieldID {
		return invalidTable("Highest field ID %d is out of range [0, %d].", d.Schema.HighestFieldID, MaxFieldID)
	}
	for i := range d.Schema.Columns {
		col := &d.Schema.Columns[i]
		if why := checkName(col.Name); why != "" {
			return invalidTable("Column name %q (column %d) %s.", col.Name, i, why)
		}
		if col.ID != UnknownID && (col.ID < 0 || col.ID > MaxFieldID) {
			return invalidTable("Column %q has field ID %d, out of range [0, %d].", col.Name, col.ID, MaxFieldID)
		}
		if err := checkFieldNames(col.Name, &col.Type); err != nil {
			return err
		}
	}
	return nil
}

// checkFieldNames applies the column name and id rules to the ROW fields nested in t.
func checkFieldNames(path string, t *DataType) error {
	if t.Elem != nil {
		if err := checkFieldNames(path, t.Elem); err != nil {
			return err
		}
	}
	if t.Value != nil {
		if err := checkFieldNames(path, t.Value); err != nil {
			return err
		}
	}
	for i := range t.Fields {
		f := &t.Fields[i]
		if why := checkName(f.Name); why != "" {
			return invalidTable("Field name %q in column %q %s.", f.Name, path, why)
		}
		if f.ID != UnknownID && (f.ID < 0 || f.ID > MaxFieldID) {
			return invalidTable("Field %q in column %q has field ID %d, out of range [0, %d].", f.Name, path, f.ID, MaxFieldID)
		}
		if err := checkFieldNames(path+"."+f.Name, &f.Type); err != nil {
			return err
		}
	}
	return nil
}

func (vc descriptorChecks) checkPropertySizes() error {
	d := vc.d
	for _, props := range []map[string]string{d.Properties, d.CustomProperties} {
		for k, v := range props {
			switch {
			case k == "" || len(k) > MaxPropertyKeyBytes || !utf8.ValidString(k):
				return invalidConfig("Property key %.64q is empty, longer than %d bytes or not valid UTF-8.", k, MaxPropertyKeyBytes)
			case len(v) > MaxPropertyValueBytes || !utf8.ValidString(v):
				return invalidConfig("The value of property '%.64s' has %d bytes or is not valid UTF-8; the limit is %d bytes.", k, len(v), MaxPropertyValueBytes)
			}
		}
	}
	return nil
}

func (vc descriptorChecks) checkDescriptorSize() error {
	d := vc.d
	if n := len(d.JSON()); n > MaxDescriptorBytes {
		return invalidTable("The table descriptor is %d bytes as JSON; the limit is %d.", n, MaxDescriptorBytes)
	}
	return nil
}

func invalidConfig(format string, args ...any) error {
	return ferr.New(ferr.InvalidConfigException, format, args...)
}

func invalidTable(format string, args ...any) error {
	return ferr.New(ferr.InvalidTableException, format, args...)
}

func (vc descriptorChecks) checkPropertyKeys() error {
	d := vc.d
	keys := make([]string, 0, len(d.Properties))
	for k := range d.Properties {
		keys = append(keys, k)
	}
	sort.Strings(keys) // deterministic choice of the reported key
	for _, k := range keys {
		o, ok := tableOption(k)
		if !ok {
			if IsTableProperty(k) {
				return invalidConfig("'%s' is not a recognized Fluss table property in the current cluster version. "+
					"You may be using an older Fluss cluster that does not support this property.", k)
			}
			return invalidConfig("'%s' is not a Fluss table property. Please use '.customProperty(..)' to set custom properties.", k)
		}
		if reason := checkOptionValue(o, d.Properties[k]); reason != "" {
			return invalidConfig("Invalid value for config '%s'. Reason: %s", k, reason)
		}
	}
	return nil
}

// checkRefusedProperties refuses a table property that the registry declares Refused
// (internal/options/table.go) when it is set to anything but its default: Strom does not
// implement it, and ignoring it would change what the table does. It runs after Fluss's own
// checks, so that a property Fluss would refuse gets Fluss's message.
func (vc descriptorChecks) checkRefusedProperties() error {
	d := vc.d
	for _, k := range slices.Sorted(maps.Keys(d.Properties)) {
		if o, ok := tableOption(k); ok && o.Status == options.Refused && !o.IsDefault(d.Properties[k]) {
			return invalidConfig("'%s' is not supported by this server (Strom): %s.", k, o.Why)
		}
	}
	return nil
}

func (vc descriptorChecks) checkDistribution(maxBuckets int32) error {
	d := vc.d
	if d.BucketCount <= 0 {
		return invalidTable("Bucket number must be set.")
	}
	if d.BucketCount > maxBuckets {
		return ferr.New(ferr.BucketMaxNumException,
			"Bucket count %d exceeds the maximum limit %d for a non-partitioned table or partition.",
			d.BucketCount, maxBuckets)
	}
	for _, k := range d.BucketKeys {
		if c := d.Schema.Column(k); c != nil && c.Type.IsNested() {
			return invalidTable("Bucket key column '%s' has unsupported data type %s. "+
				"Currently, bucket key column does not support types: %s.", k, c.Type, keyUnsupportedTypes)
		}
	}
	return nil
}

func (vc descriptorChecks) checkPrimaryKeyTypes() error {
	d := vc.d
	for _, k := range d.Schema.PrimaryKey {
		if c := d.Schema.Column(k); c != nil && c.Type.IsNested() {
			return invalidTable("Primary key column '%s' has unsupported data type %s. "+
				"Currently, primary key column does not support types: %s.", k, c.Type, keyUnsupportedTypes)
		}
	}
	return nil
}

func (vc descriptorChecks) checkReplicationFactor() error {
	d := vc.d
	if _, ok := d.Properties[PropReplicationFactor]; !ok {
		return invalidConfig("Missing required table property '%s'.", PropReplicationFactor)
	}
	if d.Properties.ReplicationFactor() <= 0 {
		return invalidConfig("'%s' must be greater than 0.", PropReplicationFactor)
	}
	return nil
}

func (vc descriptorChecks) checkLogFormat() error {
	d := vc.d
	if d.HasPrimaryKey() && d.Properties.KvFormat() == KvFormatCompacted {
		if lf := d.Properties.LogFormat(); lf != LogFormatArrow && lf != LogFormatCompacted {
			return invalidConfig("Currently, Primary Key Table supports ARROW or COMPACTED log format when kv format is COMPACTED.")
		}
	}
	return nil
}

func (vc descriptorChecks) checkArrowCompression() error {
	d := vc.d
	if _, ok := d.Properties[PropArrowCompressionZstdLevel]; ok {
		if _, level := d.Properties.ArrowCompression(); level < 1 || level > 22 {
			return invalidConfig("Invalid ZSTD compression level: %d. Expected a value between 1 and 22.", level)
		}
	}
	return nil
}

func (vc descriptorChecks) checkMergeEngine() error {
	d := vc.d
	engine, verCol := d.Properties.MergeEngine()
	if engine != MergeEngineAggregation {
		for i := range d.Schema.Columns {
			col := &d.Schema.Columns[i]
			if col.AggFunction != nil {
				return invalidConfig("Aggregation function is only supported for aggregation merge engine table, "+
					"but column '%s' has aggregation function '%s'.", col.Name, aggString(col.AggFunction))
			}
		}
	}
	if engine == MergeEngineDefault {
		return nil
	}
	if !d.HasPrimaryKey() {
		return invalidConfig("Merge engine is only supported in primary key table.")
	}
	switch engine {
	case MergeEngineVersioned:
		if _, ok := d.Properties[PropMergeEngineVersionColumn]; !ok {
			return invalidConfig("'%s' must be set for versioned merge engine.", PropMergeEngineVersionColumn)
		}
		col := d.Schema.Column(verCol)
		if col == nil {
			return invalidConfig("The version column '%s' for versioned merge engine doesn't exist in schema.", verCol)
		}
		switch col.Type.Root {
		case Int, BigInt, Timestamp, TimestampLTZ:
		default:
			return invalidConfig("The version column '%s' for versioned merge engine must be one type of "+
				"[INT, BIGINT, TIMESTAMP, TIMESTAMP_LTZ], but got %s.", verCol, col.Type)
		}
	case MergeEngineAggregation:
		if d.Properties.ChangelogImage() == ChangelogWAL {
			return invalidConfig("Table with 'AGGREGATION' merge engine does not support 'WAL' changelog image mode. "+
				"Aggregation merge engine tables require FULL changelog image mode for correct UNDO recovery. "+
				"Please set '%s' to 'FULL' or remove the setting.", PropChangelogImage)
		}
		return ValidateAggFunctions(&d.Schema)
	}
	return nil
}

// ValidateAggFunctions checks the aggregate function of every non-primary-key column of an
// aggregation merge-engine table (also used when such a table gains a column). Violations are
// code 39.
func ValidateAggFunctions(s *Schema) error {
	for i := range s.Columns {
		col := &s.Columns[i]
		if col.AggFunction == nil || slices.Contains(s.PrimaryKey, col.Name) {
			continue
		}
		if _, ok := CanonicalAggFunction(col.AggFunction.Type); !ok {
			return invalidConfig("Invalid aggregation function for column '%s': unknown aggregation function '%s'",
				col.Name, col.AggFunction.Type)
		}
		if err := col.AggFunction.Validate(col.Type); err != nil {
			return invalidConfig("Invalid aggregation function for column '%s': %s", col.Name, err.Error())
		}
	}
	return nil
}

// aggString renders an aggregate function as Java's AggFunction.toString: name or
// name{k=v}.
func aggString(a *AggFunction) string {
	if len(a.Parameters) == 0 {
		return a.Type
	}
	keys := make([]string, 0, len(a.Parameters))
	for k := range a.Parameters {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + a.Parameters[k]
	}
	return a.Type + "{" + strings.Join(parts, ", ") + "}"
}

func (vc descriptorChecks) checkDeleteBehavior() error {
	d := vc.d
	_, set := d.Properties[PropDeleteBehavior]
	if !d.HasPrimaryKey() && set {
		return invalidConfig("The 'table.delete.behavior' configuration is only supported for primary key tables.")
	}
	engine, _ := d.Properties.MergeEngine()
	if set && d.Properties.DeleteBehavior() == DeleteAllow &&
		(engine == MergeEngineFirstRow || engine == MergeEngineVersioned) {
		return invalidConfig("Table with '%s' merge engine does not support delete operations. "+
			"The 'table.delete.behavior' config must be set to 'ignore' or 'disable', but got 'allow'.", engine)
	}
	return nil
}

func (vc descriptorChecks) checkTieredLog() error {
	d := vc.d
	if d.Properties.TieredLogLocalSegments() <= 0 {
		return invalidConfig("'%s' must be greater than 0.", PropLogTieredLocalSegments)
	}
	local, ok := d.Properties.LogLocalTTL()
	if !ok {
		return nil
	}
	if ttl := d.Properties.LogTTL(); local > 0 && ttl > 0 && local > ttl {
		return invalidConfig("'%s' must be less than or equal to '%s'.", PropLogLocalTTL, PropLogTTL)
	}
	return nil
}

func (vc descriptorChecks) checkHistoricalPartition() error {
	d := vc.d
	if !d.Properties.boolProp(PropDatalakeHistoricalPartEnab, false) {
		return nil
	}
	var unmet []string
	if !d.Properties.AutoPartition().Enabled {
		unmet = append(unmet, "'"+PropAutoPartitionEnabled+"' must be set to true")
	}
	if !d.Properties.DataLakeEnabled() {
		unmet = append(unmet, "'"+PropDatalakeEnabled+"' must be set to true")
	}
	switch f := d.Properties.DataLakeFormat(); f {
	case "":
		unmet = append(unmet, "'"+PropDatalakeFormat+"' must be set to 'paimon' (currently not set)")
	case "paimon":
	default:
		unmet = append(unmet, "'"+PropDatalakeFormat+"' must be set to 'paimon' (currently '"+f+"')")
	}
	if !d.HasPrimaryKey() {
		unmet = append(unmet, "the table must define a primary key")
	}
	if n := len(d.PartitionKeys); n != 1 {
		unmet = append(unmet, "the table must define exactly one partition key (found "+strconv.Itoa(n)+")")
	}
	if len(unmet) > 0 {
		return invalidConfig("'%s' has unmet requirements: %s.", PropDatalakeHistoricalPartEnab, strings.Join(unmet, "; "))
	}
	return nil
}

func (vc descriptorChecks) checkPartition() error {
	d := vc.d
	ap := d.Properties.AutoPartition()
	if !d.IsPartitioned() {
		if ap.Enabled {
			return invalidConfig("Currently, auto partition is only supported for partitioned table, "+
				"please set table property '%s' to false.", PropAutoPartitionEnabled)
		}
		return nil
	}
	for _, k := range d.PartitionKeys {
		c := d.Schema.Column(k)
		if c == nil {
			return invalidTable("Partition key '%s' does not exist in the schema.", k)
		}
		if !PartitionKeyTypeSupported(c.Type.Root) {
			return invalidTable("Currently, partitioned table supported partition key type are %s, "+
				"but got partition key '%s' with data type %s.", partitionKeyTypeNames, k, c.Type)
		}
	}
	if _, ok := d.Properties[PropAutoPartitionTimeFormat]; ok {
		if err := ValidateTimeFormat(ap.TimeFormat, ap.TimeUnit, ap.Location); err != nil {
			return invalidTable("Invalid table property '%s': %s", PropAutoPartitionTimeFormat, err.Error())
		}
	}
	if !ap.Enabled {
		return nil
	}
	key := strings.TrimSpace(ap.Key)
	if len(d.PartitionKeys) > 1 {
		if key == "" {
			return invalidTable("Currently, auto partitioned table must set one auto partition key when it "+
				"has multiple partition keys. Please set table property '%s'.", PropAutoPartitionKey)
		}
		if !slices.Contains(d.PartitionKeys, ap.Key) {
			return invalidTable("The specified key for auto partitioned table is not a partition key. "+
				"Your key '%s' is not in key list %s", ap.Key, listString(d.PartitionKeys))
		}
		if ap.NumPrecreate > 0 {
			return invalidTable("For a partitioned table with multiple partition keys, auto pre-create is "+
				"unsupported and this value must be set to 0, but is %d", ap.NumPrecreate)
		}
	}
	autoKey := d.PartitionKeys[0]
	if key != "" {
		autoKey = ap.Key
	}
	c := d.Schema.Column(autoKey)
	if c == nil {
		return invalidTable("The specified key for auto partitioned table is not a partition key. "+
			"Your key '%s' is not in key list %s", autoKey, listString(d.PartitionKeys))
	}
	if c.Type.Root == Date {
		if ap.TimeUnit != TimeUnitDay {
			return invalidTable("Table property '%s' must be '%s' when auto partition key '%s' has DATE type.",
				PropAutoPartitionTimeUnit, TimeUnitDay, autoKey)
		}
		if ap.TimeFormat != "yyyy-MM-dd" {
			return invalidTable("Table property '%s' must be '%s' when auto partition key '%s' has DATE type.",
				PropAutoPartitionTimeFormat, "yyyy-MM-dd", autoKey)
		}
	}
	return nil
}

func (vc descriptorChecks) checkSystemColumns() error {
	d := vc.d
	var bad []string
	for i := range d.Schema.Columns {
		if slices.Contains(systemColumns, d.Schema.Columns[i].Name) {
			bad = append(bad, d.Schema.Columns[i].Name)
		}
	}
	if len(bad) > 0 {
		return invalidTable("%s cannot be used as column names, because they are reserved system columns in Fluss. "+
			"Please use other names for these columns. The reserved system columns are: %s",
			strings.Join(bad, ", "), strings.Join(systemColumns, ", "))
	}
	return nil
}

func (vc descriptorChecks) checkStatistics() error {
	d := vc.d
	raw, ok := d.Properties[PropStatisticsColumns]
	if !ok {
		return nil
	}
	if d.HasPrimaryKey() {
		return invalidConfig("Statistics columns are not supported for primary key tables. "+
			"Please remove the '%s' property.", PropStatisticsColumns)
	}
	if strings.TrimSpace(raw) == "*" {
		return nil
	}
	all, cols := d.Properties.StatisticsColumns()
	if all {
		return nil
	}
	if len(cols) == 0 {
		return invalidConfig("Statistics columns configuration cannot be empty. " +
			"Use '*' to collect statistics for all supported columns, " +
			"or remove the property to disable statistics collection.")
	}
	for _, name := range cols {
		c := d.Schema.Column(name)
		if c == nil {
			return invalidConfig("Column '%s' specified in statistics collection does not exist in table schema", name)
		}
		if !StatisticsTypeSupported(c.Type.Root) {
			return invalidConfig("Column '%s' of type '%s' is not supported for statistics collection. "+
				"Supported types are: BOOLEAN, TINYINT, SMALLINT, INTEGER, BIGINT, FLOAT, DOUBLE, STRING, CHAR, "+
				"DECIMAL, DATE, TIME, TIMESTAMP, and TIMESTAMP_LTZ.", name, c.Type)
		}
	}
	return nil
}

// StatisticsTypeSupported reports whether batch statistics can be collected for a column type.
func StatisticsTypeSupported(r TypeRoot) bool { return r.Valid() && statisticsRoots[r] }

func (vc descriptorChecks) checkLakeFormat(c ClusterDefaults) error {
	d := vc.d
	if c.DataLakeFormat == "" || !d.Properties.DataLakeEnabled() {
		return nil
	}
	if f := d.Properties.DataLakeFormat(); f != "" && f != strings.ToLower(c.DataLakeFormat) {
		return invalidConfig("'%s' ('%s') must match cluster '%s' ('%s') when '%s' is enabled.",
			PropDatalakeFormat, f, "datalake.format", strings.ToLower(c.DataLakeFormat), PropDatalakeEnabled)
	}
	return nil
}
