package metadata

import (
	"slices"
	"strings"

	"github.com/stromdb/strom/internal/ferr"
)

// PartitionSeparator joins partition values into a partition name.
const PartitionSeparator = "$"

// HistoricalPartitionValue is the value of Fluss's internal partition for late data.
const HistoricalPartitionValue = "__historical__"

// PartitionKeyTypeSupported reports whether a column of root r may be a partition key: CHAR,
// STRING, BOOLEAN, BINARY, BYTES, TINYINT, SMALLINT, INT, BIGINT, FLOAT, DOUBLE, DATE, TIME,
// TIMESTAMP and TIMESTAMP_LTZ.
func PartitionKeyTypeSupported(r TypeRoot) bool { return r.Valid() && partitionKeyRoots[r] }

// partitionKeyTypeNames lists the supported partition key types as Java prints them (in
// Java's order; TestPartitionKeyTypeNames checks it names exactly the flagged roots).
const partitionKeyTypeNames = "[CHAR, STRING, BOOLEAN, BINARY, BYTES, TINYINT, SMALLINT, INTEGER, DATE, " +
	"TIME_WITHOUT_TIME_ZONE, BIGINT, FLOAT, DOUBLE, TIMESTAMP_WITHOUT_TIME_ZONE, TIMESTAMP_WITH_LOCAL_TIME_ZONE]"

// PartitionName joins partition values (in partition-key order) with '$', e.g. "2024$EMEA".
func PartitionName(values []string) string { return strings.Join(values, PartitionSeparator) }

// PartitionValues splits a partition name into its values.
func PartitionValues(name string) []string { return strings.Split(name, PartitionSeparator) }

// QualifiedPartitionName renders keys and values as "k1=v1/k2=v2", the display form.
func QualifiedPartitionName(keys, values []string) string {
	var sb strings.Builder
	for i := range keys {
		if i > 0 {
			sb.WriteByte('/')
		}
		sb.WriteString(keys[i])
		sb.WriteByte('=')
		if i < len(values) {
			sb.WriteString(values[i])
		}
	}
	return sb.String()
}

// ValidatePartitionValue checks one partition value against the name rules; forCreate also
// rejects the reserved "__" prefix. A violation is a *ferr.Error with code
// PARTITION_SPEC_INVALID_EXCEPTION (43).
func ValidatePartitionValue(value string, forCreate bool) error {
	reason := DetectInvalidName(value)
	if reason == "" && forCreate {
		reason = reservedPrefixReason(value)
	}
	if reason != "" {
		return ferr.New(ferr.PartitionSpecInvalidException, "The partition value %s is invalid: %s", value, reason)
	}
	return nil
}

// ResolvePartitionSpec checks a partition spec (key → value) against the table's partition
// keys and returns the values in partition-key order, as Java's
// PartitionUtils.validatePartitionSpec. The spec must name exactly the partition keys and
// every value must pass ValidatePartitionValue. table ("db.table") is used in messages.
// Violations are *ferr.Error with code 43.
func ResolvePartitionSpec(table string, partitionKeys []string, spec map[string]string, forCreate bool) ([]string, error) {
	if len(spec) != len(partitionKeys) {
		return nil, ferr.New(ferr.PartitionSpecInvalidException,
			"PartitionSpec size is not equal to partition keys size for partitioned table %s.", table)
	}
	values := make([]string, len(partitionKeys))
	for i, k := range partitionKeys {
		v, ok := spec[k]
		if !ok {
			return nil, ferr.New(ferr.PartitionSpecInvalidException,
				"PartitionSpec %s does not contain partition key '%s' for partitioned table %s.",
				specString(spec), k, table)
		}
		values[i] = v
	}
	for _, v := range values {
		if err := ValidatePartitionValue(v, forCreate); err != nil {
			return nil, err
		}
	}
	return values, nil
}

// MatchesPartialSpec reports whether the partition (values in key order) matches every
// key/value of a partial spec, and fails with code 43 when the partial spec names a key that
// is not a partition key (ListPartitionInfos filter semantics).
func MatchesPartialSpec(partitionKeys, values []string, partial map[string]string) (bool, error) {
	match := true
	for k, v := range partial {
		i := slices.Index(partitionKeys, k)
		if i < 0 {
			return false, ferr.New(ferr.PartitionSpecInvalidException,
				"table don't contains this partitionKey: %s", k)
		}
		if i >= len(values) || values[i] != v {
			match = false
		}
	}
	return match, nil
}

// specString renders a spec like Java's PartitionSpec.toString, keys sorted.
func specString(spec map[string]string) string {
	keys := make([]string, 0, len(spec))
	for k := range spec {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var sb strings.Builder
	sb.WriteString("PartitionSpec{{")
	for i, k := range keys {
		if i > 0 {
			sb.WriteString(", ")
		}
		sb.WriteString(k)
		sb.WriteByte('=')
		sb.WriteString(spec[k])
	}
	sb.WriteString("}}")
	return sb.String()
}
