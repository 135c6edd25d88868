package metadata

import (
	"fmt"
	"slices"

	"github.com/stromdb/strom/internal/ferr"
)

// JSON form of a table descriptor (Java TableDescriptorJsonSerde):
//
//	{"version": 1, "schema": {...}, ["comment"], "partition_key": [...], "bucket_key": [...],
//	 ["bucket_count": n], "properties": {...}, "custom_properties": {...}}
//
// The Rust client (and so pyfluss) requires "schema", "partition_key", "properties" and
// "custom_properties", reads property values as strings only, and needs "bucket_count" in
// every table JSON the server returns; the coordinator's defaults guarantee it.

const tableJSONVersion = 1

// JSON returns the Fluss JSON form of d, as carried in table_json. "bucket_key" is always
// written (possibly empty) and "bucket_count" whenever it is set, so a stored descriptor always
// carries its distribution.
func (d TableDescriptor) JSON() []byte {
	w := jsonWriter{buf: make([]byte, 0, 256)}
	w.beginObject()
	w.numField("version", tableJSONVersion)
	w.key("schema")
	writeSchema(&w, &d.Schema)
	if d.HasComment {
		w.strField("comment", d.Comment)
	}
	w.strList("partition_key", d.PartitionKeys)
	w.strList("bucket_key", d.BucketKeys)
	if d.BucketCount > 0 {
		w.numField("bucket_count", int64(d.BucketCount))
	}
	w.strMap("properties", d.Properties)
	w.strMap("custom_properties", d.CustomProperties)
	w.endObject()
	return w.buf
}

// ParseTableDescriptor decodes table_json and applies the structural normalisation Java does
// while building the descriptor (see TableDescriptor.Normalize). Every failure is a
// *ferr.Error with code INVALID_TABLE_EXCEPTION (15), which is what a Java coordinator answers
// to a CREATE_TABLE whose descriptor does not parse.
func ParseTableDescriptor(data []byte) (TableDescriptor, error) {
	d, err := parseTableDescriptor(data)
	if err != nil {
		return TableDescriptor{}, ferr.New(ferr.InvalidTableException, "%s", err.Error())
	}
	return d, nil
}

func parseTableDescriptor(data []byte) (TableDescriptor, error) {
	if err := checkJSONText(data); err != nil {
		return TableDescriptor{}, err
	}
	obj, err := decodeJSONObject(data)
	if err != nil {
		return TableDescriptor{}, fmt.Errorf("Failed to parse table descriptor: %w", err)
	}
	var d TableDescriptor

	v, err := requiredField(obj, "schema")
	if err != nil {
		return TableDescriptor{}, err
	}
	so, err := asObject("schema", v)
	if err != nil {
		return TableDescriptor{}, err
	}
	if d.Schema, err = decodeSchema(so); err != nil {
		return TableDescriptor{}, err
	}

	if v, ok := field(obj, "comment"); ok {
		if d.Comment, err = asString("comment", v); err != nil {
			return TableDescriptor{}, err
		}
		d.HasComment = true
	}

	if v, err = collectionField(obj, "partition_key"); err != nil {
		return TableDescriptor{}, err
	}
	if d.PartitionKeys, err = stringList("partition_key", v); err != nil {
		return TableDescriptor{}, err
	}

	if v, ok := field(obj, "bucket_key"); ok {
		if d.BucketKeys, err = stringList("bucket_key", v); err != nil {
			return TableDescriptor{}, err
		}
	}
	if v, ok := field(obj, "bucket_count"); ok {
		if d.BucketCount, err = asInt32("bucket_count", v); err != nil {
			return TableDescriptor{}, err
		}
		if d.BucketCount <= 0 {
			return TableDescriptor{}, fmt.Errorf("Number of buckets must be larger than 0, got %d.", d.BucketCount)
		}
	}

	if v, err = collectionField(obj, "properties"); err != nil {
		return TableDescriptor{}, err
	}
	if d.Properties, err = stringMap("properties", v); err != nil {
		return TableDescriptor{}, err
	}
	if v, err = collectionField(obj, "custom_properties"); err != nil {
		return TableDescriptor{}, err
	}
	if d.CustomProperties, err = stringMap("custom_properties", v); err != nil {
		return TableDescriptor{}, err
	}

	if err := d.Normalize(); err != nil {
		return TableDescriptor{}, err
	}
	return d, nil
}

// Normalize applies the checks and defaults of Java's TableDescriptor constructor:
//
//   - bucket keys may not include partition keys;
//   - primary-key tables: empty bucket keys become the primary key minus the partition keys
//     (an error if nothing is left); explicit bucket keys must be part of the primary key;
//   - partition keys of a primary-key table must be part of the primary key; of a log table,
//     existing columns;
//   - bucket keys must be existing columns;
//   - nil maps become empty.
//
// It does not normalise the schema (ParseSchema/Schema.Normalize do) and does not validate
// properties (Validate does). Errors are plain; CREATE_TABLE reports them with code 15.
func (d *TableDescriptor) Normalize() error {
	if d.Properties == nil {
		d.Properties = map[string]string{}
	}
	if d.CustomProperties == nil {
		d.CustomProperties = map[string]string{}
	}
	if d.PartitionKeys == nil {
		d.PartitionKeys = []string{}
	}
	for _, b := range d.BucketKeys {
		if slices.Contains(d.PartitionKeys, b) {
			return fmt.Errorf("Bucket key %s shouldn't include any column in partition keys %s.",
				listString(d.BucketKeys), listString(d.PartitionKeys))
		}
	}
	s := &d.Schema
	if s.HasPrimaryKey() {
		if len(d.BucketKeys) == 0 {
			keys, err := defaultBucketKeys(s.PrimaryKey, d.PartitionKeys)
			if err != nil {
				return err
			}
			d.BucketKeys = keys
		} else {
			for _, b := range d.BucketKeys {
				if !slices.Contains(s.PrimaryKey, b) {
					return fmt.Errorf("Bucket keys must be a subset of primary keys excluding partition keys "+
						"for primary-key tables. The primary keys are %s, the partition keys are %s, "+
						"but the user-defined bucket keys are %s.",
						listString(s.PrimaryKey), listString(d.PartitionKeys), listString(d.BucketKeys))
				}
			}
		}
		for _, p := range d.PartitionKeys {
			if !slices.Contains(s.PrimaryKey, p) {
				return fmt.Errorf("Partitioned Primary Key Table requires partition key %s is a subset of the primary key %s.",
					listString(d.PartitionKeys), listString(s.PrimaryKey))
			}
		}
	} else {
		for _, p := range d.PartitionKeys {
			if s.ColumnIndex(p) < 0 {
				return fmt.Errorf("Partition key '%s' does not exist in the schema.", p)
			}
		}
	}
	if d.BucketKeys == nil {
		d.BucketKeys = []string{}
	}
	for _, b := range d.BucketKeys {
		if s.ColumnIndex(b) < 0 {
			return fmt.Errorf("Bucket key '%s' does not exist in the schema.", b)
		}
	}
	return nil
}

// defaultBucketKeys is the primary key minus the partition keys.
func defaultBucketKeys(pk, partitionKeys []string) ([]string, error) {
	keys := make([]string, 0, len(pk))
	for _, k := range pk {
		if !slices.Contains(partitionKeys, k) {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("Primary Key constraint %s should not be same with partition fields %s.",
			listString(pk), listString(partitionKeys))
	}
	return keys, nil
}

// Clone returns a deep copy of d.
func (d *TableDescriptor) Clone() TableDescriptor {
	return TableDescriptor{
		Schema:           d.Schema.Clone(),
		Comment:          d.Comment,
		HasComment:       d.HasComment,
		PartitionKeys:    slices.Clone(d.PartitionKeys),
		BucketKeys:       slices.Clone(d.BucketKeys),
		BucketCount:      d.BucketCount,
		Properties:       cloneMap(d.Properties),
		CustomProperties: cloneMap(d.CustomProperties),
	}
}

// HasPrimaryKey reports whether d is a primary-key (KV) table.
func (d *TableDescriptor) HasPrimaryKey() bool { return d.Schema.HasPrimaryKey() }

// IsPartitioned reports whether d has partition keys.
func (d *TableDescriptor) IsPartitioned() bool { return len(d.PartitionKeys) > 0 }

// BucketKeyIndexes returns the column positions of the bucket keys, in bucket-key order.
func (d *TableDescriptor) BucketKeyIndexes() []int { return d.Schema.ColumnIndexes(d.BucketKeys) }

// PartitionKeyIndexes returns the column positions of the partition keys, in key order.
func (d *TableDescriptor) PartitionKeyIndexes() []int {
	return d.Schema.ColumnIndexes(d.PartitionKeys)
}

// PhysicalPrimaryKey returns the primary key without the partition keys — the columns the
// KV key encodes (Java TableInfo.getPhysicalPrimaryKeys).
func (d *TableDescriptor) PhysicalPrimaryKey() []string {
	out := make([]string, 0, len(d.Schema.PrimaryKey))
	for _, k := range d.Schema.PrimaryKey {
		if !slices.Contains(d.PartitionKeys, k) {
			out = append(out, k)
		}
	}
	return out
}

// IsDefaultBucketKey reports whether the bucket keys are the default ones: the physical
// primary key for primary-key tables, none for log tables. Prefix lookups need a bucket key
// that is a proper prefix of the physical primary key.
func (d *TableDescriptor) IsDefaultBucketKey() bool {
	if d.HasPrimaryKey() {
		return slices.Equal(d.BucketKeys, d.PhysicalPrimaryKey())
	}
	return len(d.BucketKeys) == 0
}
