package fluss

import (
	"github.com/stromdb/strom/internal/metadata"
)

// DataType is a Fluss logical type. Build it with the constructors below (Int(), String(),
// DecimalType(10, 2), …); t.Nullable(false) returns the NOT NULL variant.
type DataType = metadata.DataType

// Column is one column of a schema: Name, Type and an optional Comment.
type Column = metadata.Column

// Schema is a table schema: Columns and the names of the PrimaryKey columns (empty for log
// tables).
type Schema = metadata.Schema

// TableDescriptor describes a table to create: Schema, PartitionKeys, BucketKeys, BucketCount
// (0 = server default), Comment, Properties (table.* options such as "table.log.format") and
// CustomProperties.
type TableDescriptor = metadata.TableDescriptor

// DatabaseDescriptor describes a database: Comment and CustomProperties.
type DatabaseDescriptor = metadata.DatabaseDescriptor

// NewColumn returns a column with the given name and type.
func NewColumn(name string, t DataType) Column { return Column{Name: name, Type: t, ID: -1} }

// NewSchema returns a schema of the given columns; primaryKey names the primary-key columns
// (none for a log table).
func NewSchema(columns []Column, primaryKey ...string) Schema {
	s := Schema{Columns: append([]Column(nil), columns...), PrimaryKey: primaryKey}
	return s
}

// Boolean returns the BOOLEAN type.
func Boolean() DataType { return DataType{Root: metadata.Boolean} }

// TinyInt returns the TINYINT type (Go int8).
func TinyInt() DataType { return DataType{Root: metadata.TinyInt} }

// SmallInt returns the SMALLINT type (Go int16).
func SmallInt() DataType { return DataType{Root: metadata.SmallInt} }

// Int returns the INT type (Go int32).
func Int() DataType { return DataType{Root: metadata.Int} }

// BigInt returns the BIGINT type (Go int64).
func BigInt() DataType { return DataType{Root: metadata.BigInt} }

// Float returns the FLOAT type (Go float32).
func Float() DataType { return DataType{Root: metadata.Float} }

// Double returns the DOUBLE type (Go float64).
func Double() DataType { return DataType{Root: metadata.Double} }

// Char returns the CHAR(n) type (Go string).
func Char(n int) DataType { return DataType{Root: metadata.Char, Length: n} }

// String returns the STRING type (Go string).
func String() DataType { return DataType{Root: metadata.String} }

// Binary returns the BINARY(n) type (Go []byte).
func Binary(n int) DataType { return DataType{Root: metadata.Binary, Length: n} }

// Bytes returns the BYTES type (Go []byte).
func Bytes() DataType { return DataType{Root: metadata.Bytes} }

// DecimalType returns the DECIMAL(precision, scale) type (Go Decimal).
func DecimalType(precision, scale int) DataType {
	return DataType{Root: metadata.Decimal, Precision: precision, Scale: scale}
}

// Date returns the DATE type (Go time.Time at midnight UTC).
func Date() DataType { return DataType{Root: metadata.Date} }

// Time returns the TIME type with millisecond precision (Go time.Duration since midnight).
func Time() DataType { return DataType{Root: metadata.Time} }

// Timestamp returns TIMESTAMP(precision) without time zone (Go time.Time, read as UTC).
func Timestamp(precision int) DataType {
	return DataType{Root: metadata.Timestamp, Precision: precision}
}

// TimestampLTZ returns TIMESTAMP_LTZ(precision), an instant (Go time.Time).
func TimestampLTZ(precision int) DataType {
	return DataType{Root: metadata.TimestampLTZ, Precision: precision}
}

// ArrayOf returns ARRAY<elem> (Go []any).
func ArrayOf(elem DataType) DataType { return DataType{Root: metadata.Array, Elem: &elem} }

// MapOf returns MAP<key, value> (Go map[any]any).
func MapOf(key, value DataType) DataType {
	return DataType{Root: metadata.Map, Elem: &key, Value: &value}
}
