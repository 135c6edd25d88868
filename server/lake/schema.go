package lake

import (
	"fmt"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/stromdb/strom/internal/metadata"
)

// The system columns Fluss appends to every tiered Iceberg table, in this order
// (IcebergSchemaUtils.SYSTEM_COLUMNS in fluss-lake-iceberg).
const (
	BucketColumn    = "__bucket"
	OffsetColumn    = "__offset"
	TimestampColumn = "__timestamp"
)

// Snapshot summary keys written by every tiering commit, as Fluss's tiering job writes them
// (LakeTieringFactory.FLUSS_LAKE_TIERING_COMMIT_USER, LakeCommitter.FLUSS_LAKE_SNAP_BUCKET_OFFSET_PROPERTY).
const (
	CommitUserKey   = "commit-user"
	TieringUser     = "__fluss_lake_tiering"
	OffsetsProperty = "fluss-offsets"
)

// Iceberg write-mode properties set on primary-key tables (merge-on-read, as Fluss sets them).
var pkTableProperties = iceberg.Properties{
	"write.delete.mode": "merge-on-read",
	"write.update.mode": "merge-on-read",
	"write.merge.mode":  "merge-on-read",
}

// Layout is the Iceberg shape of a Fluss table: schema, partition spec, sort order and table
// properties, derived as fluss-lake-iceberg derives them.
type Layout struct {
	Schema     *iceberg.Schema
	Spec       iceberg.PartitionSpec
	SortOrder  table.SortOrder
	Properties iceberg.Properties
	// PrimaryKey holds the field ids of the primary key (identifier fields); empty for log tables.
	PrimaryKey []int
}

// NewLayout maps a Fluss table descriptor to its Iceberg layout. Top-level columns get field
// ids 1..n in order (the table's columns, then the three system columns); nested fields are
// numbered after them, which is the numbering Iceberg's Java catalog assigns on create.
// Tables with more than one bucket key, partition keys that are not strings, or column names
// that clash with the system columns are rejected, as Fluss rejects them.
func NewLayout(d *metadata.TableDescriptor) (*Layout, error) {
	cols := d.Schema.Columns
	nextID := len(cols) + 3 + 1
	fields := make([]iceberg.NestedField, 0, len(cols)+3)
	for i, c := range cols {
		switch c.Name {
		case BucketColumn, OffsetColumn, TimestampColumn:
			return nil, fmt.Errorf("column '%s' conflicts with a reserved system column name", c.Name)
		}
		t, err := icebergType(c.Type, &nextID)
		if err != nil {
			return nil, fmt.Errorf("column %s: %w", c.Name, err)
		}
		fields = append(fields, iceberg.NestedField{ID: i + 1, Name: c.Name, Type: t, Required: c.Type.NotNull, Doc: c.Comment})
	}
	n := len(cols)
	fields = append(fields,
		iceberg.NestedField{ID: n + 1, Name: BucketColumn, Type: iceberg.PrimitiveTypes.Int32, Required: true},
		iceberg.NestedField{ID: n + 2, Name: OffsetColumn, Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: n + 3, Name: TimestampColumn, Type: iceberg.PrimitiveTypes.TimestampTz, Required: true},
	)
	idOf := func(name string) int {
		for _, f := range fields {
			if f.Name == name {
				return f.ID
			}
		}
		return -1
	}
	l := &Layout{Properties: iceberg.Properties{}}
	for _, pk := range d.Schema.PrimaryKey {
		l.PrimaryKey = append(l.PrimaryKey, idOf(pk))
	}
	l.Schema = iceberg.NewSchemaWithIdentifiers(0, l.PrimaryKey, fields...)

	if len(d.BucketKeys) > 1 {
		return nil, fmt.Errorf("Iceberg format supports at most one bucket key, but got: %v", d.BucketKeys)
	}
	var pfs []iceberg.PartitionField
	fieldID := 1000 // Iceberg's first partition field id
	for _, pk := range d.PartitionKeys {
		f, ok := l.Schema.FindFieldByName(pk)
		if !ok || !f.Type.Equals(iceberg.PrimitiveTypes.String) {
			return nil, fmt.Errorf("Partition key only support string type for iceberg currently. Column `%s` is not string type.", pk)
		}
		pfs = append(pfs, iceberg.PartitionField{SourceIDs: []int{f.ID}, FieldID: fieldID, Name: pk, Transform: iceberg.IdentityTransform{}})
		fieldID++
	}
	if len(d.BucketKeys) == 0 {
		if len(d.Schema.PrimaryKey) > 0 {
			return nil, fmt.Errorf("bucket key must be set for primary key Iceberg tables")
		}
		pfs = append(pfs, iceberg.PartitionField{SourceIDs: []int{n + 1}, FieldID: fieldID, Name: BucketColumn, Transform: iceberg.IdentityTransform{}})
	} else {
		key := d.BucketKeys[0]
		id := idOf(key)
		if id < 0 {
			return nil, fmt.Errorf("bucket key %s is not a column", key)
		}
		pfs = append(pfs, iceberg.PartitionField{SourceIDs: []int{id}, FieldID: fieldID, Name: key + "_bucket",
			Transform: iceberg.BucketTransform{NumBuckets: int(d.BucketCount)}})
	}
	l.Spec = iceberg.NewPartitionSpec(pfs...)

	order, err := table.NewSortOrder(1, []table.SortField{{SourceIDs: []int{n + 2}, Transform: iceberg.IdentityTransform{}, Direction: table.SortASC, NullOrder: table.NullsFirst}})
	if err != nil {
		return nil, err
	}
	l.SortOrder = order

	if len(d.Schema.PrimaryKey) > 0 {
		for k, v := range pkTableProperties {
			l.Properties[k] = v
		}
	}
	// Table options go to Iceberg prefixed with "fluss.", except "iceberg.*" options, which
	// go through without the prefix (IcebergLakeCatalog.setFlussPropertyToIceberg).
	for _, m := range []map[string]string{d.Properties, d.CustomProperties} {
		for k, v := range m {
			if rest, ok := strings.CutPrefix(k, "iceberg."); ok {
				l.Properties[rest] = v
			} else {
				l.Properties["fluss."+k] = v
			}
		}
	}
	// With snapshot expiry on (Strom's default), superseded metadata files go too: Iceberg
	// keeps the newest write.metadata.previous-versions-max (default 100) and deletes older
	// ones after each commit. A table option iceberg.<key> overrides it.
	if _, set := l.Properties[table.MetadataDeleteAfterCommitEnabledKey]; !set && autoExpire(d) {
		l.Properties[table.MetadataDeleteAfterCommitEnabledKey] = "true"
	}
	return l, nil
}

// icebergType maps a Fluss type as FlussDataTypeToIcebergDataType does, through its root's
// entry of icebergTypes. Nested element, key, value and field ids are taken from *next, in
// the order FlussDataTypeToIcebergDataType assigns them (an element's id after its type's, a
// map's key and value ids first, a row's field ids after each field's type).
func icebergType(t metadata.DataType, next *int) (iceberg.Type, error) {
	if !t.Root.Valid() {
		return nil, fmt.Errorf("unsupported Fluss type root %d", t.Root)
	}
	return icebergTypes[t.Root](t, next)
}
