package fluss

import (
	"maps"
	"slices"

	"github.com/stromdb/strom/internal/metadata"
)

// TableInfo is a table's metadata as the cluster reports it, obtained from Admin.GetTableInfo
// or Table.Info (a TableInfo built by hand has no metadata behind its methods). Its
// Descriptor is a copy: changing it changes neither the table nor what the methods return.
type TableInfo struct {
	Path     TablePath
	TableID  int64
	SchemaID int32
	// Descriptor holds the schema, keys, bucket count and properties, with the cluster's
	// defaults applied.
	Descriptor   TableDescriptor
	CreatedTime  int64 // epoch ms
	ModifiedTime int64 // epoch ms

	desc metadata.TableDescriptor // the parsed form the client's codecs work from
}

// newTableInfo builds a TableInfo from the cluster's descriptor.
func newTableInfo(path TablePath, id int64, schemaID int32, desc metadata.TableDescriptor, created, modified int64) *TableInfo {
	return &TableInfo{
		Path: path, TableID: id, SchemaID: schemaID,
		Descriptor:  publicTableDescriptor(&desc),
		CreatedTime: created, ModifiedTime: modified,
		desc: desc,
	}
}

// Schema returns the table's current schema.
func (t *TableInfo) Schema() Schema { return publicSchema(t.desc.Schema) }

// NumBuckets returns the table's bucket count (per partition for partitioned tables).
func (t *TableInfo) NumBuckets() int32 { return t.desc.BucketCount }

// PrimaryKeys returns the primary-key column names (empty for log tables).
func (t *TableInfo) PrimaryKeys() []string { return slices.Clone(t.desc.Schema.PrimaryKey) }

// PartitionKeys returns the partition column names (empty for non-partitioned tables).
func (t *TableInfo) PartitionKeys() []string { return slices.Clone(t.desc.PartitionKeys) }

// BucketKeys returns the bucket-key column names.
func (t *TableInfo) BucketKeys() []string { return slices.Clone(t.desc.BucketKeys) }

// HasPrimaryKey reports whether the table is a primary-key table.
func (t *TableInfo) HasPrimaryKey() bool { return t.desc.HasPrimaryKey() }

// IsPartitioned reports whether the table is partitioned.
func (t *TableInfo) IsPartitioned() bool { return t.desc.IsPartitioned() }

// ColumnNames returns the column names in schema order.
func (t *TableInfo) ColumnNames() []string { return t.desc.Schema.ColumnNames() }

// ColumnCount returns the number of columns.
func (t *TableInfo) ColumnCount() int { return len(t.desc.Schema.Columns) }

// Properties returns a copy of the table options (table.*).
func (t *TableInfo) Properties() map[string]string { return maps.Clone(t.desc.Properties) }

// CustomProperties returns a copy of the custom properties.
func (t *TableInfo) CustomProperties() map[string]string {
	return maps.Clone(t.desc.CustomProperties)
}

// Comment returns the table comment and whether one is set.
func (t *TableInfo) Comment() (string, bool) { return t.desc.Comment, t.desc.HasComment }

// columns returns the schema's columns.
func (t *TableInfo) columns() []metadata.Column { return t.desc.Schema.Columns }
