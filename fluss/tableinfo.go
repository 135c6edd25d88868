package fluss

import (
	"maps"

	"github.com/stromdb/strom/internal/metadata"
)

// TableInfo is a table's metadata as the cluster reports it.
type TableInfo struct {
	Path         TablePath
	TableID      int64
	SchemaID     int32
	Descriptor   TableDescriptor // schema, keys, bucket count and properties (with defaults applied)
	CreatedTime  int64           // epoch ms
	ModifiedTime int64           // epoch ms
}

// Schema returns the table's current schema.
func (t *TableInfo) Schema() Schema { return t.Descriptor.Schema }

// NumBuckets returns the table's bucket count (per partition for partitioned tables).
func (t *TableInfo) NumBuckets() int32 { return t.Descriptor.BucketCount }

// PrimaryKeys returns the primary-key column names (empty for log tables).
func (t *TableInfo) PrimaryKeys() []string { return t.Descriptor.Schema.PrimaryKey }

// PartitionKeys returns the partition column names (empty for non-partitioned tables).
func (t *TableInfo) PartitionKeys() []string { return t.Descriptor.PartitionKeys }

// BucketKeys returns the bucket-key column names.
func (t *TableInfo) BucketKeys() []string { return t.Descriptor.BucketKeys }

// HasPrimaryKey reports whether the table is a primary-key table.
func (t *TableInfo) HasPrimaryKey() bool { return t.Descriptor.HasPrimaryKey() }

// IsPartitioned reports whether the table is partitioned.
func (t *TableInfo) IsPartitioned() bool { return t.Descriptor.IsPartitioned() }

// ColumnNames returns the column names in schema order.
func (t *TableInfo) ColumnNames() []string { return t.Descriptor.Schema.ColumnNames() }

// ColumnCount returns the number of columns.
func (t *TableInfo) ColumnCount() int { return len(t.Descriptor.Schema.Columns) }

// Properties returns a copy of the table options (table.*).
func (t *TableInfo) Properties() map[string]string { return maps.Clone(t.Descriptor.Properties) }

// CustomProperties returns a copy of the custom properties.
func (t *TableInfo) CustomProperties() map[string]string {
	return maps.Clone(t.Descriptor.CustomProperties)
}

// Comment returns the table comment and whether one is set.
func (t *TableInfo) Comment() (string, bool) { return t.Descriptor.Comment, t.Descriptor.HasComment }

// columns returns the schema's columns.
func (t *TableInfo) columns() []metadata.Column { return t.Descriptor.Schema.Columns }
