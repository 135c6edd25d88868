package metadata

import (
	"maps"
	"slices"
	"strings"

	"github.com/stromdb/strom/internal/ferr"
)

// PropertyChange is one ALTER TABLE option change: set Key to Value, or reset Key.
type PropertyChange struct {
	Key   string
	Value string
	Reset bool
}

// AlterProperties applies option changes to a stored descriptor as a Fluss 1.0 coordinator
// does: "table."-prefixed keys change properties, any other key changes custom properties;
// only alterable table options may change (INVALID_ALTER_TABLE_EXCEPTION 56 otherwise, and
// table.kv.standby-replica.enabled only on primary-key tables); datalake options of a table
// created before the cluster had a lake are refused (56) except enabling the lake on a log
// table without bucket keys; enabling the lake backfills table.datalake.format from the
// cluster (56 when the cluster has none). The result is validated like CREATE_TABLE.
// changed is false when the changes leave the descriptor as it was (nothing to store).
func (d *TableDescriptor) AlterProperties(changes []PropertyChange, c ClusterDefaults) (out TableDescriptor, changed bool, err error) {
	var tableKeys []string
	for _, ch := range changes {
		if IsTableProperty(ch.Key) && !slices.Contains(tableKeys, ch.Key) {
			tableKeys = append(tableKeys, ch.Key)
		}
	}
	var unsupported []string
	for _, k := range tableKeys {
		if !IsAlterableTableProperty(k) {
			unsupported = append(unsupported, "'"+k+"'")
		}
	}
	if len(unsupported) > 0 {
		return TableDescriptor{}, false, ferr.New(ferr.InvalidAlterTableException,
			"The following options are not supported to alter yet: %s.", strings.Join(unsupported, ", "))
	}
	if slices.Contains(tableKeys, PropKvStandbyReplicaEnabled) && !d.HasPrimaryKey() {
		return TableDescriptor{}, false, ferr.New(ferr.InvalidAlterTableException,
			"'%s' can only be altered on primary key tables.", PropKvStandbyReplicaEnabled)
	}
	if d.Properties.DataLakeFormat() == "" {
		var lakeKeys []string
		for _, k := range tableKeys {
			if strings.HasPrefix(k, "table.datalake.") {
				lakeKeys = append(lakeKeys, k)
			}
		}
		legacyLogTable := !d.HasPrimaryKey() && len(d.BucketKeys) == 0 &&
			!slices.ContainsFunc(lakeKeys, func(k string) bool { return k != PropDatalakeEnabled })
		if len(lakeKeys) > 0 && !legacyLogTable {
			quoted := make([]string, len(lakeKeys))
			for i, k := range lakeKeys {
				quoted[i] = "'" + k + "'"
			}
			return TableDescriptor{}, false, ferr.New(ferr.InvalidAlterTableException,
				"The following options cannot be altered for tables that were created before the Fluss cluster "+
					"enabled datalake: %s.", strings.Join(quoted, ", "))
		}
	}

	out = d.Clone()
	if out.Properties == nil {
		out.Properties = map[string]string{}
	}
	if out.CustomProperties == nil {
		out.CustomProperties = map[string]string{}
	}
	for _, ch := range changes {
		target := out.CustomProperties
		if IsTableProperty(ch.Key) {
			target = out.Properties
		}
		if ch.Reset {
			delete(target, ch.Key)
		} else {
			target[ch.Key] = ch.Value
		}
	}
	if maps.Equal(out.Properties, d.Properties) && maps.Equal(out.CustomProperties, d.CustomProperties) {
		return d.Clone(), false, nil
	}
	if out.Properties.DataLakeEnabled() && !d.Properties.DataLakeEnabled() && d.Properties.DataLakeFormat() == "" {
		if c.DataLakeFormat == "" {
			return TableDescriptor{}, false, ferr.New(ferr.InvalidAlterTableException,
				"Cannot alter table in data lake, because the Fluss cluster doesn't enable datalake tables.")
		}
		out.Properties[PropDatalakeFormat] = strings.ToLower(c.DataLakeFormat)
	}
	if err := out.Validate(c); err != nil {
		return TableDescriptor{}, false, err
	}
	return out, true, nil
}
