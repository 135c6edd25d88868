package metadata

import (
	"strconv"
	"strings"

	"github.com/stromdb/strom/internal/ferr"
)

// ClusterDefaults are the coordinator options that shape CREATE_TABLE. Zero values mean the
// Fluss 1.0 defaults, so ClusterDefaults{} behaves like a default Java cluster.
type ClusterDefaults struct {
	BucketNumber      int32 // default.bucket.number; 0 means 1
	ReplicationFactor int32 // default.replication.factor; 0 means 1
	MaxBucketNum      int32 // max.bucket.num; 0 means 4096 (Fluss 0.9.1 used 128000)

	// DataLakeFormat is the cluster's datalake.format in lower case ("paimon", "iceberg",
	// "lance", "hudi"), or "" when no lake is configured. DataLakeEnabled says whether the
	// cluster allows datalake-enabled tables.
	DataLakeFormat  string
	DataLakeEnabled bool

	DisallowLogTables bool // allow.create.log.tables = false
	DisallowKvTables  bool // allow.create.kv.tables = false

	// NoStandbyReplicaDefault skips Fluss 1.0's table.kv.standby-replica.enabled=true on new
	// primary-key tables (Fluss 0.9.1 never set it).
	NoStandbyReplicaDefault bool
}

// DefaultMaxBucketNum is max.bucket.num of Fluss 1.0.
const DefaultMaxBucketNum = 4096

func (c ClusterDefaults) bucketNumber() int32      { return positiveOr(c.BucketNumber, 1) }
func (c ClusterDefaults) replicationFactor() int32 { return positiveOr(c.ReplicationFactor, 1) }
func (c ClusterDefaults) maxBucketNum() int32      { return positiveOr(c.MaxBucketNum, DefaultMaxBucketNum) }

func positiveOr(v, def int32) int32 {
	if v > 0 {
		return v
	}
	return def
}

// PrepareCreateTable turns the descriptor of a CREATE_TABLE request into the descriptor to
// store, in Java's order: structural normalisation (code 15), the cluster's allow-create
// switches (15), system defaults (ApplyDefaults), then validation (Validate). d is not
// modified. The table path is validated separately (ValidateTablePath).
func PrepareCreateTable(d *TableDescriptor, c ClusterDefaults) (TableDescriptor, error) {
	out := d.Clone()
	if err := out.Schema.Normalize(true); err != nil {
		return TableDescriptor{}, ferr.New(ferr.InvalidTableException, "%s", err.Error())
	}
	if err := out.Normalize(); err != nil {
		return TableDescriptor{}, ferr.New(ferr.InvalidTableException, "%s", err.Error())
	}
	if out.HasPrimaryKey() && c.DisallowKvTables {
		return TableDescriptor{}, ferr.New(ferr.InvalidTableException,
			"Creation of Primary Key Tables is disallowed in the cluster.")
	}
	if !out.HasPrimaryKey() && c.DisallowLogTables {
		return TableDescriptor{}, ferr.New(ferr.InvalidTableException,
			"Creation of Log Tables is disallowed in the cluster.")
	}
	if err := out.ApplyDefaults(c); err != nil {
		return TableDescriptor{}, err
	}
	if err := out.Validate(c); err != nil {
		return TableDescriptor{}, err
	}
	return out, nil
}

// ApplyDefaults fills in what a Java coordinator adds before storing a new table (these become
// visible properties of the table):
//
//   - no bucket count → default.bucket.number;
//   - no table.replication.factor → default.replication.factor;
//   - more than one partition key, table.auto-partition.enabled exactly "true" and no
//     num-precreate → table.auto-partition.num-precreate=0;
//   - a cluster lake format and no table.datalake.format → the cluster's format;
//   - table.datalake.enabled=true on a cluster without datalake tables → code 15;
//   - first_row/versioned/aggregation merge engine on a primary-key table without
//     table.delete.behavior → IGNORE;
//   - primary-key tables: table.kv.format-version=2 if absent (above 2 → code 39), and
//     table.kv.standby-replica.enabled=true if absent (unless NoStandbyReplicaDefault).
//
// The properties checked are those of d as it was before this call, as in Java.
func (d *TableDescriptor) ApplyDefaults(c ClusterDefaults) error {
	if d.Properties == nil {
		d.Properties = map[string]string{}
	}
	if d.BucketKeys == nil {
		d.BucketKeys = []string{}
	}
	orig := cloneMap(d.Properties)
	if d.BucketCount <= 0 {
		d.BucketCount = c.bucketNumber()
	}
	if _, ok := orig[PropReplicationFactor]; !ok {
		d.Properties[PropReplicationFactor] = strconv.Itoa(int(c.replicationFactor()))
	}
	if len(d.PartitionKeys) > 1 && orig[PropAutoPartitionEnabled] == "true" {
		if _, ok := orig[PropAutoPartitionNumPrecreate]; !ok {
			d.Properties[PropAutoPartitionNumPrecreate] = "0"
		}
	}
	if c.DataLakeFormat != "" {
		if _, ok := orig[PropDatalakeFormat]; !ok {
			d.Properties[PropDatalakeFormat] = strings.ToLower(c.DataLakeFormat)
		}
	}
	if strings.EqualFold(orig[PropDatalakeEnabled], "true") && !c.DataLakeEnabled {
		return ferr.New(ferr.InvalidTableException,
			"'%s' is enabled for the table, but the Fluss cluster doesn't enable datalake tables.",
			PropDatalakeEnabled)
	}
	if d.HasPrimaryKey() {
		if _, ok := orig[PropDeleteBehavior]; !ok {
			if me, err := parseJavaEnum(declared(PropMergeEngine), orig[PropMergeEngine]); err == nil && me != "" {
				d.Properties[PropDeleteBehavior] = "IGNORE"
			}
		}
		if v, ok := d.Properties[PropKvFormatVersion]; ok {
			n, err := parseJavaInt(v, 32)
			if err != nil {
				return ferr.New(ferr.InvalidConfigException,
					"Invalid value for config '%s'. Reason: %s", PropKvFormatVersion, err.Error())
			}
			if n > CurrentKvFormatVersion {
				return ferr.New(ferr.InvalidConfigException,
					"Unsupported kv format version %d. The maximum supported version is %d.",
					n, CurrentKvFormatVersion)
			}
		} else {
			d.Properties[PropKvFormatVersion] = strconv.Itoa(CurrentKvFormatVersion)
		}
		if !c.NoStandbyReplicaDefault {
			if _, ok := d.Properties[PropKvStandbyReplicaEnabled]; !ok {
				d.Properties[PropKvStandbyReplicaEnabled] = "true"
			}
		}
	}
	return nil
}
