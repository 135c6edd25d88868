package lake

import (
	"fmt"

	"github.com/apache/iceberg-go"

	"github.com/stromdb/strom/internal/metadata"
)

// icebergMapping returns the Iceberg type of t (FlussDataTypeToIcebergDataType), taking the
// ids of nested fields from *next. icebergTypes holds one per root; which mapping serves
// which root is listed, with every other layer's entry of the root, in
// internal/typetable/table.go, from which icebergtypes_gen.go is generated. The mappings
// live here, not in the type table's own package, because iceberg-go may be linked only
// into strom-lake.
type icebergMapping func(t metadata.DataType, next *int) (iceberg.Type, error)

// icebergTypes is indexed by TypeRoot. It is filled by init because the nested types'
// mappings call back into icebergType, which reads it.
var icebergTypes [metadata.LastTypeRoot + 1]icebergMapping

func init() { icebergTypes = icebergTypeTable() }

// icebergPrimitive maps every type of a root to one Iceberg primitive type.
func icebergPrimitive(p iceberg.PrimitiveType) icebergMapping {
	return func(metadata.DataType, *int) (iceberg.Type, error) { return p, nil }
}

// The entries of icebergTypeTable (icebergtypes_gen.go).
var (
	icebergBool        = icebergPrimitive(iceberg.PrimitiveTypes.Bool)
	icebergInt32       = icebergPrimitive(iceberg.PrimitiveTypes.Int32) // TINYINT, SMALLINT and INT
	icebergInt64       = icebergPrimitive(iceberg.PrimitiveTypes.Int64)
	icebergFloat32     = icebergPrimitive(iceberg.PrimitiveTypes.Float32)
	icebergFloat64     = icebergPrimitive(iceberg.PrimitiveTypes.Float64)
	icebergString      = icebergPrimitive(iceberg.PrimitiveTypes.String) // CHAR and STRING
	icebergBinary      = icebergPrimitive(iceberg.PrimitiveTypes.Binary) // BINARY and BYTES
	icebergDate        = icebergPrimitive(iceberg.PrimitiveTypes.Date)
	icebergTime        = icebergPrimitive(iceberg.PrimitiveTypes.Time)
	icebergTimestamp   = icebergPrimitive(iceberg.PrimitiveTypes.Timestamp)
	icebergTimestampTz = icebergPrimitive(iceberg.PrimitiveTypes.TimestampTz)
)

func icebergDecimal(t metadata.DataType, _ *int) (iceberg.Type, error) {
	return iceberg.DecimalTypeOf(t.Precision, t.Scale), nil
}

// takeID returns the next nested field id.
func takeID(next *int) int { id := *next; *next++; return id }

func icebergList(t metadata.DataType, next *int) (iceberg.Type, error) {
	if t.Elem == nil {
		return nil, fmt.Errorf("ARRAY without element type")
	}
	et, err := icebergType(*t.Elem, next)
	if err != nil {
		return nil, err
	}
	return &iceberg.ListType{ElementID: takeID(next), Element: et, ElementRequired: t.Elem.NotNull}, nil
}

func icebergMap(t metadata.DataType, next *int) (iceberg.Type, error) {
	if t.Elem == nil || t.Value == nil {
		return nil, fmt.Errorf("MAP without key or value type")
	}
	// Key and value ids are consecutive, taken before the key and value types' own.
	kid, vid := takeID(next), takeID(next)
	kt, err := icebergType(*t.Elem, next)
	if err != nil {
		return nil, err
	}
	vt, err := icebergType(*t.Value, next)
	if err != nil {
		return nil, err
	}
	return &iceberg.MapType{KeyID: kid, KeyType: kt, ValueID: vid, ValueType: vt, ValueRequired: t.Value.NotNull}, nil
}

func icebergStruct(t metadata.DataType, next *int) (iceberg.Type, error) {
	fs := make([]iceberg.NestedField, len(t.Fields))
	for i, f := range t.Fields {
		ft, err := icebergType(f.Type, next)
		if err != nil {
			return nil, fmt.Errorf("row field %s: %w", f.Name, err)
		}
		fs[i] = iceberg.NestedField{ID: takeID(next), Name: f.Name, Type: ft, Required: f.Type.NotNull, Doc: f.Description}
	}
	return &iceberg.StructType{FieldList: fs}, nil
}
