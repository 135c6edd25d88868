package metadata

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stromdb/strom/internal/ferr"
)

// tableJSON builds a table_json with the given columns JSON, primary key, partition keys,
// bucket part and properties (JSON fragments).
func tableJSON(cols, pk, partition, bucket, props string) string {
	s := `{"version":1,"schema":{"version":1,"columns":` + cols
	if pk != "" {
		s += `,"primary_key":` + pk
	}
	s += `},"partition_key":` + partition
	if bucket != "" {
		s += `,` + bucket
	}
	return s + `,"properties":` + props + `,"custom_properties":{"owner":"me"}}`
}

const (
	colsKV   = `[{"name":"id","data_type":{"type":"INTEGER"}},{"name":"name","data_type":{"type":"STRING"}},{"name":"ts","data_type":{"type":"BIGINT"}}]`
	colsPart = `[{"name":"id","data_type":{"type":"INTEGER"}},{"name":"dt","data_type":{"type":"STRING"}},{"name":"region","data_type":{"type":"STRING"}},{"name":"v","data_type":{"type":"DOUBLE"}}]`
)

func prepare(t *testing.T, js string, c ClusterDefaults) (TableDescriptor, error) {
	t.Helper()
	d, err := ParseTableDescriptor([]byte(js))
	if err != nil {
		return TableDescriptor{}, err
	}
	return PrepareCreateTable(&d, c)
}

func TestPrepareCreateTableDefaults(t *testing.T) {
	cases := []struct {
		name      string
		js        string
		c         ClusterDefaults
		buckets   int32
		bucketKey []string
		props     map[string]string
	}{
		{
			name:      "log table, cluster defaults",
			js:        tableJSON(colsKV, "", `[]`, "", `{}`),
			buckets:   1,
			bucketKey: []string{},
			props:     map[string]string{PropReplicationFactor: "1"},
		},
		{
			name:      "log table with configured defaults",
			js:        tableJSON(colsKV, "", `[]`, `"bucket_key":[]`, `{"table.log.format":"indexed"}`),
			c:         ClusterDefaults{BucketNumber: 5, ReplicationFactor: 3},
			buckets:   5,
			bucketKey: []string{},
			props:     map[string]string{PropReplicationFactor: "3", PropLogFormat: "indexed"},
		},
		{
			name:      "pk table gets kv format version and standby replica",
			js:        tableJSON(colsKV, `["id"]`, `[]`, `"bucket_count":3`, `{"table.replication.factor":"1"}`),
			buckets:   3,
			bucketKey: []string{"id"},
			props: map[string]string{PropReplicationFactor: "1", PropKvFormatVersion: "2",
				PropKvStandbyReplicaEnabled: "true"},
		},
		{
			name:      "pk table as 0.9.1 (no standby default), explicit format version 1 kept",
			js:        tableJSON(colsKV, `["id"]`, `[]`, "", `{"table.kv.format-version":"1"}`),
			c:         ClusterDefaults{NoStandbyReplicaDefault: true},
			buckets:   1,
			bucketKey: []string{"id"},
			props:     map[string]string{PropReplicationFactor: "1", PropKvFormatVersion: "1"},
		},
		{
			name:      "merge engine gets delete behavior IGNORE",
			js:        tableJSON(colsKV, `["id"]`, `[]`, "", `{"table.merge-engine":"first_row"}`),
			buckets:   1,
			bucketKey: []string{"id"},
			props: map[string]string{PropReplicationFactor: "1", PropKvFormatVersion: "2",
				PropKvStandbyReplicaEnabled: "true", PropMergeEngine: "first_row", PropDeleteBehavior: "IGNORE"},
		},
		{
			name:      "versioned merge engine keeps explicit delete behavior",
			js:        tableJSON(colsKV, `["id"]`, `[]`, "", `{"table.merge-engine":"VERSIONED","table.merge-engine.versioned.ver-column":"ts","table.delete.behavior":"disable"}`),
			buckets:   1,
			bucketKey: []string{"id"},
			props: map[string]string{PropReplicationFactor: "1", PropKvFormatVersion: "2", PropKvStandbyReplicaEnabled: "true",
				PropMergeEngine: "VERSIONED", PropMergeEngineVersionColumn: "ts", PropDeleteBehavior: "disable"},
		},
		{
			name: "multi-key auto partition gets num-precreate 0",
			js: tableJSON(colsPart, `["id","dt","region"]`, `["dt","region"]`, `"bucket_count":3,"bucket_key":["id"]`,
				`{"table.auto-partition.enabled":"true","table.auto-partition.key":"dt","table.auto-partition.time-unit":"day"}`),
			buckets:   3,
			bucketKey: []string{"id"},
			props: map[string]string{PropReplicationFactor: "1", PropKvFormatVersion: "2", PropKvStandbyReplicaEnabled: "true",
				PropAutoPartitionEnabled: "true", PropAutoPartitionKey: "dt", PropAutoPartitionTimeUnit: "day",
				PropAutoPartitionNumPrecreate: "0"},
		},
		{
			name:      "pk minus partition keys becomes the bucket key",
			js:        tableJSON(colsPart, `["id","dt"]`, `["dt"]`, "", `{}`),
			buckets:   1,
			bucketKey: []string{"id"},
			props:     map[string]string{PropReplicationFactor: "1", PropKvFormatVersion: "2", PropKvStandbyReplicaEnabled: "true"},
		},
		{
			name:      "cluster lake format is recorded",
			js:        tableJSON(colsKV, "", `[]`, "", `{"table.datalake.enabled":"true"}`),
			c:         ClusterDefaults{DataLakeFormat: "paimon", DataLakeEnabled: true},
			buckets:   1,
			bucketKey: []string{},
			props:     map[string]string{PropReplicationFactor: "1", PropDatalakeEnabled: "true", PropDatalakeFormat: "paimon"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d, err := prepare(t, tc.js, tc.c)
			if err != nil {
				t.Fatal(err)
			}
			if d.BucketCount != tc.buckets || !reflect.DeepEqual(d.BucketKeys, tc.bucketKey) {
				t.Fatalf("distribution %d %v, want %d %v", d.BucketCount, d.BucketKeys, tc.buckets, tc.bucketKey)
			}
			if !reflect.DeepEqual(map[string]string(d.Properties), tc.props) {
				t.Fatalf("properties\n got %v\nwant %v", d.Properties, tc.props)
			}
			if !reflect.DeepEqual(d.CustomProperties, map[string]string{"owner": "me"}) {
				t.Fatalf("custom properties %v", d.CustomProperties)
			}
			for _, k := range d.Schema.PrimaryKey {
				if !d.Schema.Column(k).Type.NotNull {
					t.Fatalf("pk column %s nullable", k)
				}
			}
			js := d.JSON()
			checkRustParsable(t, js)
			again, err := ParseTableDescriptor(js)
			if err != nil || !reflect.DeepEqual(again, d) {
				t.Fatalf("stored form does not re-parse: %v", err)
			}
			// Re-preparing the stored form changes nothing.
			if twice, err := PrepareCreateTable(&again, tc.c); err != nil || !reflect.DeepEqual(twice, d) {
				t.Fatalf("not idempotent: %v", err)
			}
		})
	}
}

func TestPrepareCreateTablePyfluss(t *testing.T) {
	d, err := prepare(t, pyflussCreateTable, ClusterDefaults{})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"version":1,"schema":{"version":1,"columns":[{"name":"id","data_type":{"type":"INTEGER","nullable":false},"id":0},` +
		`{"name":"name","data_type":{"type":"STRING"},"id":1},{"name":"age","data_type":{"type":"INTEGER"},"id":2},` +
		`{"name":"email","data_type":{"type":"STRING"},"id":3}],"primary_key":["id"],"highest_field_id":3},` +
		`"comment":"Test table for user data (id, name, age, email)","partition_key":[],"bucket_key":["id"],"bucket_count":3,` +
		`"properties":{"table.kv.format":"INDEXED","table.kv.format-version":"2","table.kv.standby-replica.enabled":"true",` +
		`"table.log.format":"ARROW","table.replication.factor":"1"},"custom_properties":{}}`
	if got := string(d.JSON()); got != want {
		t.Fatalf("stored JSON\n got %s\nwant %s", got, want)
	}
}

func TestPrepareCreateTableErrors(t *testing.T) {
	arrCols := `[{"name":"id","data_type":{"type":"INTEGER"}},{"name":"arr","data_type":{"type":"ARRAY","element_type":{"type":"INTEGER"}}},{"name":"d","data_type":{"type":"DATE"}},{"name":"m","data_type":{"type":"MAP","key_type":{"type":"INTEGER"},"value_type":{"type":"INTEGER"}}}]`
	aggCols := func(fn string) string {
		return `[{"name":"id","data_type":{"type":"INTEGER"}},{"name":"v","data_type":{"type":"STRING"},"agg_function":` + fn + `}]`
	}
	cases := []struct {
		name string
		js   string
		c    ClusterDefaults
		code ferr.Code
		msg  string // substring of the message
	}{
		{"unknown table property", tableJSON(colsKV, "", `[]`, "", `{"table.nope":"1"}`), ClusterDefaults{}, ferr.InvalidConfigException, "is not a recognized Fluss table property"},
		{"custom key in properties", tableJSON(colsKV, "", `[]`, "", `{"owner":"1"}`), ClusterDefaults{}, ferr.InvalidConfigException, "Please use '.customProperty(..)'"},
		{"bad enum", tableJSON(colsKV, "", `[]`, "", `{"table.log.format":"parquet"}`), ClusterDefaults{}, ferr.InvalidConfigException, "Invalid value for config 'table.log.format'"},
		{"bad int", tableJSON(colsKV, "", `[]`, "", `{"table.replication.factor":"one"}`), ClusterDefaults{}, ferr.InvalidConfigException, `For input string: "one"`},
		{"bad bool", tableJSON(colsKV, "", `[]`, "", `{"table.datalake.auto-compaction":"yes"}`), ClusterDefaults{}, ferr.InvalidConfigException, "Unrecognized option for boolean"},
		{"bad duration", tableJSON(colsKV, "", `[]`, "", `{"table.log.ttl":"7 weeks"}`), ClusterDefaults{}, ferr.InvalidConfigException, "unit label 'weeks'"},
		{"too many buckets", tableJSON(colsKV, "", `[]`, `"bucket_count":5000`, `{}`), ClusterDefaults{}, ferr.BucketMaxNumException, "exceeds the maximum limit 4096"},
		{"buckets within 0.9.1 limit", tableJSON(colsKV, "", `[]`, `"bucket_count":200000`, `{}`), ClusterDefaults{MaxBucketNum: 128000}, ferr.BucketMaxNumException, "200000"},
		{"array bucket key", tableJSON(arrCols, "", `[]`, `"bucket_key":["arr"]`, `{}`), ClusterDefaults{}, ferr.InvalidTableException, "Bucket key column 'arr' has unsupported data type ARRAY<INT>"},
		{"map primary key", tableJSON(arrCols, `["m"]`, `[]`, "", `{}`), ClusterDefaults{}, ferr.InvalidTableException, "Bucket key column 'm'"},
		{"zero replication", tableJSON(colsKV, "", `[]`, "", `{"table.replication.factor":"0"}`), ClusterDefaults{}, ferr.InvalidConfigException, "must be greater than 0"},
		{"pk compacted kv with indexed log", tableJSON(colsKV, `["id"]`, `[]`, "", `{"table.log.format":"INDEXED"}`), ClusterDefaults{}, ferr.InvalidConfigException, "supports ARROW or COMPACTED log format"},
		{"zstd level", tableJSON(colsKV, "", `[]`, "", `{"table.log.arrow.compression.zstd.level":"23"}`), ClusterDefaults{}, ferr.InvalidConfigException, "Invalid ZSTD compression level: 23"},
		{"merge engine on log table", tableJSON(colsKV, "", `[]`, "", `{"table.merge-engine":"first_row"}`), ClusterDefaults{}, ferr.InvalidConfigException, "only supported in primary key table"},
		{"versioned without column", tableJSON(colsKV, `["id"]`, `[]`, "", `{"table.merge-engine":"versioned"}`), ClusterDefaults{}, ferr.InvalidConfigException, "must be set for versioned merge engine"},
		{"versioned missing column", tableJSON(colsKV, `["id"]`, `[]`, "", `{"table.merge-engine":"versioned","table.merge-engine.versioned.ver-column":"zz"}`), ClusterDefaults{}, ferr.InvalidConfigException, "doesn't exist in schema"},
		{"versioned string column", tableJSON(colsKV, `["id"]`, `[]`, "", `{"table.merge-engine":"versioned","table.merge-engine.versioned.ver-column":"name"}`), ClusterDefaults{}, ferr.InvalidConfigException, "but got STRING"},
		{"aggregation with WAL", tableJSON(colsKV, `["id"]`, `[]`, "", `{"table.merge-engine":"aggregation","table.changelog.image":"wal"}`), ClusterDefaults{}, ferr.InvalidConfigException, "does not support 'WAL'"},
		{"agg function without aggregation engine", tableJSON(aggCols(`{"type":"listagg"}`), `["id"]`, `[]`, "", `{}`), ClusterDefaults{}, ferr.InvalidConfigException, "only supported for aggregation merge engine"},
		{"agg function type mismatch", tableJSON(aggCols(`{"type":"sum"}`), `["id"]`, `[]`, "", `{"table.merge-engine":"aggregation"}`), ClusterDefaults{}, ferr.InvalidConfigException, "Invalid aggregation function for column 'v'"},
		{"agg bad parameter", tableJSON(aggCols(`{"type":"listagg","parameters":{"sep":","}}`), `["id"]`, `[]`, "", `{"table.merge-engine":"aggregation"}`), ClusterDefaults{}, ferr.InvalidConfigException, "'sep' is not supported"},
		{"agg empty delimiter", tableJSON(aggCols(`{"type":"listagg","parameters":{"delimiter":""}}`), `["id"]`, `[]`, "", `{"table.merge-engine":"aggregation"}`), ClusterDefaults{}, ferr.InvalidConfigException, "non-empty string"},
		{"delete behavior on log table", tableJSON(colsKV, "", `[]`, "", `{"table.delete.behavior":"ignore"}`), ClusterDefaults{}, ferr.InvalidConfigException, "only supported for primary key tables"},
		{"first_row allow deletes", tableJSON(colsKV, `["id"]`, `[]`, "", `{"table.merge-engine":"first_row","table.delete.behavior":"ALLOW"}`), ClusterDefaults{}, ferr.InvalidConfigException, "'FIRST_ROW' merge engine does not support delete"},
		{"local segments", tableJSON(colsKV, "", `[]`, "", `{"table.log.tiered.local-segments":"0"}`), ClusterDefaults{}, ferr.InvalidConfigException, "local-segments' must be greater than 0"},
		{"local ttl above ttl", tableJSON(colsKV, "", `[]`, "", `{"table.log.local-ttl":"8d","table.log.ttl":"7d"}`), ClusterDefaults{}, ferr.InvalidConfigException, "must be less than or equal to"},
		{"auto partition without partitions", tableJSON(colsKV, "", `[]`, "", `{"table.auto-partition.enabled":"true"}`), ClusterDefaults{}, ferr.InvalidConfigException, "only supported for partitioned table"},
		{"unsupported partition key type", tableJSON(arrCols, "", `["arr"]`, "", `{}`), ClusterDefaults{}, ferr.InvalidTableException, "supported partition key type are"},
		{"multi-key auto partition without key", tableJSON(colsPart, "", `["dt","region"]`, "", `{"table.auto-partition.enabled":"true"}`), ClusterDefaults{}, ferr.InvalidTableException, "must set one auto partition key"},
		{"multi-key auto partition wrong key", tableJSON(colsPart, "", `["dt","region"]`, "", `{"table.auto-partition.enabled":"true","table.auto-partition.key":"v"}`), ClusterDefaults{}, ferr.InvalidTableException, "is not a partition key"},
		{"multi-key auto partition precreate", tableJSON(colsPart, "", `["dt","region"]`, "", `{"table.auto-partition.enabled":"true","table.auto-partition.key":"dt","table.auto-partition.num-precreate":"2"}`), ClusterDefaults{}, ferr.InvalidTableException, "must be set to 0, but is 2"},
		{"date auto partition with hour unit", tableJSON(arrCols, "", `["d"]`, "", `{"table.auto-partition.enabled":"true","table.auto-partition.time-unit":"HOUR"}`), ClusterDefaults{}, ferr.InvalidTableException, "must be 'DAY'"},
		{"date auto partition default format", tableJSON(arrCols, "", `["d"]`, "", `{"table.auto-partition.enabled":"true"}`), ClusterDefaults{}, ferr.InvalidTableException, "must be 'yyyy-MM-dd'"},
		{"bad time format", tableJSON(colsPart, "", `["dt"]`, "", `{"table.auto-partition.time-format":"yyyy/MM/dd"}`), ClusterDefaults{}, ferr.InvalidTableException, "generates invalid partition value"},
		{"time format fields", tableJSON(colsPart, "", `["dt"]`, "", `{"table.auto-partition.time-format":"yyyyMM"}`), ClusterDefaults{}, ferr.InvalidTableException, "must contain fields [year, month, day]"},
		{"reserved column", tableJSON(`[{"name":"__offset","data_type":{"type":"BIGINT"}}]`, "", `[]`, "", `{}`), ClusterDefaults{}, ferr.InvalidTableException, "reserved system columns"},
		{"statistics on pk table", tableJSON(colsKV, `["id"]`, `[]`, "", `{"table.statistics.columns":"*"}`), ClusterDefaults{}, ferr.InvalidConfigException, "not supported for primary key tables"},
		{"statistics empty", tableJSON(colsKV, "", `[]`, "", `{"table.statistics.columns":" , "}`), ClusterDefaults{}, ferr.InvalidConfigException, "cannot be empty"},
		{"statistics unknown column", tableJSON(colsKV, "", `[]`, "", `{"table.statistics.columns":"id,zz"}`), ClusterDefaults{}, ferr.InvalidConfigException, "Column 'zz' specified"},
		{"statistics unsupported type", tableJSON(arrCols, "", `[]`, "", `{"table.statistics.columns":"arr"}`), ClusterDefaults{}, ferr.InvalidConfigException, "not supported for statistics"},
		{"datalake without cluster lake", tableJSON(colsKV, "", `[]`, "", `{"table.datalake.enabled":"TRUE"}`), ClusterDefaults{}, ferr.InvalidTableException, "doesn't enable datalake tables"},
		{"lake format mismatch", tableJSON(colsKV, "", `[]`, "", `{"table.datalake.enabled":"true","table.datalake.format":"iceberg"}`), ClusterDefaults{DataLakeFormat: "paimon", DataLakeEnabled: true}, ferr.InvalidConfigException, "must match cluster"},
		{"historical partition requirements", tableJSON(colsKV, "", `[]`, "", `{"table.datalake.historical-partition.enabled":"true"}`), ClusterDefaults{}, ferr.InvalidConfigException, "has unmet requirements"},
		{"historical partition refused", tableJSON(colsPart, `["id","dt"]`, `["dt"]`, "", `{"table.datalake.historical-partition.enabled":"true","table.auto-partition.enabled":"true","table.auto-partition.time-unit":"DAY","table.datalake.enabled":"true","table.datalake.format":"paimon"}`), ClusterDefaults{DataLakeFormat: "paimon", DataLakeEnabled: true}, ferr.InvalidConfigException, "is not supported by this server (Strom)"},
		{"kv format version too new", tableJSON(colsKV, `["id"]`, `[]`, "", `{"table.kv.format-version":"3"}`), ClusterDefaults{}, ferr.InvalidConfigException, "Unsupported kv format version 3"},
		{"kv tables disallowed", tableJSON(colsKV, `["id"]`, `[]`, "", `{}`), ClusterDefaults{DisallowKvTables: true}, ferr.InvalidTableException, "Primary Key Tables is disallowed"},
		{"log tables disallowed", tableJSON(colsKV, "", `[]`, "", `{}`), ClusterDefaults{DisallowLogTables: true}, ferr.InvalidTableException, "Log Tables is disallowed"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := prepare(t, tc.js, tc.c)
			if err == nil {
				t.Fatalf("accepted")
			}
			if got := ferr.CodeOf(err); got != tc.code {
				t.Fatalf("code %v, want %v (%v)", got, tc.code, err)
			}
			if !strings.Contains(ferr.MessageOf(err), tc.msg) {
				t.Fatalf("message %q does not contain %q", ferr.MessageOf(err), tc.msg)
			}
		})
	}
}

func TestPrepareCreateTableAccepts(t *testing.T) {
	// Valid combinations that must pass: case-insensitive enums, durations, aggregation
	// tables with valid functions, auto partition with an explicit time format, statistics.
	ok := []string{
		tableJSON(colsKV, `["id"]`, `[]`, "", `{"table.log.format":"compacted","table.kv.format":"Compacted","table.changelog.image":"wal","table.log.ttl":"0ms"}`),
		tableJSON(colsKV, `["id"]`, `[]`, "", `{"table.kv.format":"indexed","table.log.format":"indexed"}`),
		tableJSON(`[{"name":"id","data_type":{"type":"INTEGER"}},{"name":"s","data_type":{"type":"STRING"},"agg_function":{"type":"string_agg","parameters":{"delimiter":"|"}}},{"name":"n","data_type":{"type":"DECIMAL","precision":10,"scale":2},"agg_function":{"type":"sum"}},{"name":"b","data_type":{"type":"BOOLEAN"},"agg_function":{"type":"bool_or"}}]`,
			`["id"]`, `[]`, "", `{"table.merge-engine":"aggregation","table.delete.behavior":"allow"}`),
		tableJSON(colsPart, "", `["dt"]`, "", `{"table.auto-partition.enabled":"true","table.auto-partition.time-unit":"month","table.auto-partition.time-format":"yyyy-MM","table.auto-partition.time-zone":"Asia/Shanghai"}`),
		tableJSON(colsPart, "", `["dt"]`, "", `{"table.auto-partition.enabled":"true","table.auto-partition.time-unit":"quarter"}`),
		tableJSON(colsKV, "", `[]`, "", `{"table.statistics.columns":"id, name","table.log.local-ttl":"1h","table.datalake.freshness":"30 s"}`),
		tableJSON(`[{"name":"d","data_type":{"type":"DATE"}},{"name":"v","data_type":{"type":"INTEGER"}}]`, "", `["d"]`, "",
			`{"table.auto-partition.enabled":"true","table.auto-partition.time-format":"yyyy-MM-dd"}`),
	}
	for i, js := range ok {
		if _, err := prepare(t, js, ClusterDefaults{}); err != nil {
			t.Errorf("case %d: %v", i, err)
		}
	}
}

func TestAccessors(t *testing.T) {
	d := TableDescriptor{Properties: map[string]string{
		PropLogFormat: "indexed", PropKvFormat: "INDEXED", PropArrowCompressionType: "lz4_frame",
		PropArrowCompressionZstdLevel: "9", PropChangelogImage: "Wal", PropMergeEngine: "versioned",
		PropMergeEngineVersionColumn: "ts", PropDeleteBehavior: "disable", PropLogTTL: "2h",
		PropAutoPartitionEnabled: "TRUE", PropAutoPartitionTimeUnit: "hour", PropAutoPartitionNumPrecreate: "4",
		PropAutoPartitionNumRetention: "-1", PropAutoPartitionTimeZone: "UTC", PropAutoPartitionKey: "dt",
		PropKvFormatVersion: "2", PropReplicationFactor: "3", PropDatalakeFormat: "PAIMON",
	}}
	if d.Properties.LogFormat() != LogFormatIndexed || d.Properties.KvFormat() != KvFormatIndexed || d.Properties.KvFormatVersion() != 2 || d.Properties.ReplicationFactor() != 3 {
		t.Fatal("formats")
	}
	if c, l := d.Properties.ArrowCompression(); c != CompressionLZ4Frame || l != 9 {
		t.Fatalf("compression %v %d", c, l)
	}
	if d.Properties.ChangelogImage() != ChangelogWAL || d.Properties.DeleteBehavior() != DeleteDisable || d.Properties.LogTTL() != 2*time.Hour {
		t.Fatal("changelog/delete/ttl")
	}
	if me, col := d.Properties.MergeEngine(); me != MergeEngineVersioned || col != "ts" {
		t.Fatalf("merge engine %v %q", me, col)
	}
	if d.Properties.DataLakeFormat() != "paimon" {
		t.Fatal("lake format")
	}
	ap := d.Properties.AutoPartition()
	if !ap.Enabled || ap.TimeUnit != TimeUnitHour || ap.NumPrecreate != 4 || ap.NumRetention != -1 ||
		ap.Location != time.UTC || ap.Key != "dt" || ap.Format() != "yyyyMMddHH" {
		t.Fatalf("auto partition %+v", ap)
	}

	cfg := d.Properties.Config()
	if cfg.LogFormat != LogFormatIndexed || cfg.Compression != CompressionLZ4Frame || cfg.ZstdLevel != 9 ||
		cfg.MergeEngine != MergeEngineVersioned || cfg.VersionColumn != "ts" || cfg.LogTTL != 2*time.Hour ||
		cfg.AutoPartition.TimeUnit != TimeUnitHour || cfg.ReplicationFactor != 3 || cfg.DataLakeFormat != "paimon" {
		t.Fatalf("Config %+v", cfg)
	}

	var empty TableDescriptor
	if empty.Properties.LogFormat() != LogFormatArrow || empty.Properties.KvFormat() != KvFormatCompacted || empty.Properties.LogTTL() != 7*24*time.Hour ||
		empty.Properties.ChangelogImage() != ChangelogFull || empty.Properties.DeleteBehavior() != DeleteAllow || empty.Properties.TieredLogLocalSegments() != 2 ||
		empty.Properties.AutoIncrementCacheSize() != 100000 {
		t.Fatal("defaults")
	}
	if c, l := empty.Properties.ArrowCompression(); c != CompressionZstd || l != 3 {
		t.Fatal("compression defaults")
	}
	if me, _ := empty.Properties.MergeEngine(); me != MergeEngineDefault {
		t.Fatal("merge engine default")
	}
	eap := empty.Properties.AutoPartition()
	if eap.Enabled || eap.TimeUnit != TimeUnitDay || eap.NumPrecreate != 2 || eap.NumRetention != 7 || eap.Location != time.Local {
		t.Fatalf("auto partition defaults %+v", eap)
	}
	if _, set := empty.Properties.LogLocalTTL(); set {
		t.Fatal("local ttl set")
	}
}

func TestParseFlussDuration(t *testing.T) {
	good := map[string]time.Duration{
		"7d": 7 * 24 * time.Hour, "3min": 3 * time.Minute, "3 m": 3 * time.Minute, "0ms": 0, " 10 S ": 10 * time.Second,
		"2 hours": 2 * time.Hour, "5µs": 5 * time.Microsecond, "1nanos": 1, "1 day": 24 * time.Hour, "15 millis": 15 * time.Millisecond,
	}
	for in, want := range good {
		if got, err := ParseFlussDuration(in); err != nil || got != want {
			t.Errorf("%q → %v %v, want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "  ", "d", "-1d", "1.5h", "10", "3 weeks", "99999999999999999999d", "200000d"} {
		if _, err := ParseFlussDuration(in); err == nil {
			t.Errorf("%q accepted", in)
		}
	}
}

func TestKnownTableProperties(t *testing.T) {
	keys := KnownTableProperties()
	if len(keys) != 29 {
		t.Fatalf("%d known keys, Fluss 1.0 has 29", len(keys))
	}
	for _, k := range keys {
		if !IsTableProperty(k) || !IsKnownTableProperty(k) {
			t.Fatalf("%s", k)
		}
	}
	if !IsAlterableTableProperty(PropLogTTL) || IsAlterableTableProperty(PropLogFormat) {
		t.Fatal("alterable")
	}
	if v, ok := TablePropertyDefault(PropLogTTL); !ok || v != "7d" {
		t.Fatal("default")
	}
	// Every property this package reads by its constant is declared in the registry
	// (declared's invariant).
	for _, k := range []string{PropReplicationFactor, PropLogFormat, PropArrowCompressionType, PropArrowCompressionZstdLevel,
		PropKvFormat, PropKvFormatVersion, PropKvStandbyReplicaEnabled, PropAutoPartitionEnabled, PropAutoPartitionKey,
		PropAutoPartitionTimeUnit, PropAutoPartitionTimeFormat, PropAutoPartitionTimeZone, PropAutoPartitionNumPrecreate,
		PropAutoPartitionNumRetention, PropLogTTL, PropLogTieredLocalSegments, PropLogLocalTTL, PropDatalakeEnabled,
		PropDatalakeHistoricalPartEnab, PropDatalakeFormat, PropDatalakeFreshness, PropDatalakeAutoCompaction,
		PropDatalakeAutoExpireSnapshot, PropMergeEngine, PropMergeEngineVersionColumn, PropDeleteBehavior,
		PropAutoIncrementCacheSize, PropChangelogImage, PropStatisticsColumns} {
		if !IsKnownTableProperty(k) {
			t.Errorf("%s is not declared in internal/options", k)
		}
	}
}

func TestAlterProperties(t *testing.T) {
	stored, err := prepare(t, tableJSON(colsKV, "", `[]`, "", `{}`), ClusterDefaults{})
	if err != nil {
		t.Fatal(err)
	}
	out, changed, err := stored.AlterProperties([]PropertyChange{
		{Key: PropLogTTL, Value: "1d"}, {Key: "owner", Reset: true}, {Key: "team", Value: "x"},
	}, ClusterDefaults{})
	if err != nil || !changed || out.Properties[PropLogTTL] != "1d" || out.Properties.LogTTL() != 24*time.Hour ||
		!reflect.DeepEqual(out.CustomProperties, map[string]string{"team": "x"}) {
		t.Fatalf("%v %v %+v", err, changed, out)
	}
	if stored.Properties[PropLogTTL] != "" || stored.CustomProperties["owner"] != "me" {
		t.Fatal("input modified")
	}
	if _, changed, err := stored.AlterProperties([]PropertyChange{{Key: "owner", Value: "me"}}, ClusterDefaults{}); err != nil || changed {
		t.Fatalf("no-op: %v %v", changed, err)
	}
	codes := []struct {
		ch   []PropertyChange
		c    ClusterDefaults
		code ferr.Code
	}{
		{[]PropertyChange{{Key: PropLogFormat, Value: "INDEXED"}}, ClusterDefaults{}, ferr.InvalidAlterTableException},
		{[]PropertyChange{{Key: PropKvStandbyReplicaEnabled, Value: "true"}}, ClusterDefaults{}, ferr.InvalidAlterTableException},
		{[]PropertyChange{{Key: PropDatalakeFreshness, Value: "1min"}}, ClusterDefaults{DataLakeFormat: "paimon", DataLakeEnabled: true}, ferr.InvalidAlterTableException},
		{[]PropertyChange{{Key: PropDatalakeEnabled, Value: "true"}}, ClusterDefaults{}, ferr.InvalidAlterTableException},
		{[]PropertyChange{{Key: PropLogTTL, Value: "soon"}}, ClusterDefaults{}, ferr.InvalidConfigException},
	}
	for i, c := range codes {
		if _, _, err := stored.AlterProperties(c.ch, c.c); ferr.CodeOf(err) != c.code {
			t.Errorf("case %d: %v, want %v", i, err, c.code)
		}
	}
	// Enabling the lake on a legacy log table backfills the cluster's format.
	out, changed, err = stored.AlterProperties([]PropertyChange{{Key: PropDatalakeEnabled, Value: "true"}},
		ClusterDefaults{DataLakeFormat: "iceberg", DataLakeEnabled: true})
	if err != nil || !changed || out.Properties.DataLakeFormat() != "iceberg" {
		t.Fatalf("lake backfill: %v %v %v", err, changed, out.Properties)
	}
}
