package fluss

import (
	"maps"
	"slices"

	"github.com/stromdb/strom/internal/metadata"
)

// TypeRoot names a Fluss logical type independently of its parameters and nullability
// (Fluss's DataTypeRoot). The zero value is not a type.
type TypeRoot uint8

// The TypeBoolean .. TypeRow constants are generated (gotypes_gen.go) from the one list of
// Fluss column types, internal/typetable/table.go.

// String returns the Fluss name of the root, as used in table JSON ("INTEGER",
// "TIMESTAMP_WITH_LOCAL_TIME_ZONE", ...).
func (r TypeRoot) String() string { return metadata.TypeRoot(r).String() }

// DataType is a Fluss logical type. Build it with the constructors (Int(), String(),
// DecimalType(10, 2), ArrayOf(Int()), ...) rather than by hand. Only the fields that belong
// to Root are meaningful:
//
//	TypeChar, TypeBinary:                         Length
//	TypeDecimal:                                  Precision, Scale
//	TypeTime, TypeTimestamp, TypeTimestampLTZ:    Precision (fractional-second digits, 0..9)
//	TypeArray:                                    Elem
//	TypeMap:                                      Key, Value
//	TypeRow:                                      Fields
//
// Types are nullable unless NotNull is set; Nullable(false) returns the NOT NULL variant.
type DataType struct {
	Root      TypeRoot
	NotNull   bool
	Length    int
	Precision int
	Scale     int
	Elem      *DataType // element type of an ARRAY
	Key       *DataType // key type of a MAP
	Value     *DataType // value type of a MAP
	Fields    []Field   // fields of a ROW
}

// Field is one field of a ROW type.
type Field struct {
	Name        string
	Type        DataType
	Description string
}

// Nullable returns a copy of t with the given nullability.
func (t DataType) Nullable(nullable bool) DataType {
	t.NotNull = !nullable
	return t
}

// IsNullable reports whether the type admits NULL.
func (t DataType) IsNullable() bool { return !t.NotNull }

// Equal reports whether t and u are the same type, including nullability, parameters and
// nested types.
func (t DataType) Equal(u DataType) bool { return t.internal().Equal(u.internal()) }

// String renders the type in Fluss's SQL form: "INT NOT NULL", "DECIMAL(10, 2)",
// "TIMESTAMP_LTZ(6)", "ARRAY<STRING>", "MAP<INT, STRING>", "ROW<`a` INT, `b` STRING>".
func (t DataType) String() string { return t.internal().String() }

// internal converts t to the metadata package's form.
func (t DataType) internal() metadata.DataType {
	d := metadata.DataType{
		Root: metadata.TypeRoot(t.Root), NotNull: t.NotNull,
		Length: t.Length, Precision: t.Precision, Scale: t.Scale,
	}
	switch {
	case t.Root == TypeMap:
		d.Elem, d.Value = internalPtr(t.Key), internalPtr(t.Value)
	case t.Elem != nil:
		d.Elem = internalPtr(t.Elem)
	}
	for _, f := range t.Fields {
		d.Fields = append(d.Fields, metadata.Field{Name: f.Name, Type: f.Type.internal(), Description: f.Description, ID: metadata.UnknownID})
	}
	return d
}

func internalPtr(t *DataType) *metadata.DataType {
	if t == nil {
		return nil
	}
	d := t.internal()
	return &d
}

// publicType converts a metadata type to the public form.
func publicType(d metadata.DataType) DataType {
	t := DataType{
		Root: TypeRoot(d.Root), NotNull: d.NotNull,
		Length: d.Length, Precision: d.Precision, Scale: d.Scale,
	}
	if d.Root == metadata.Map {
		t.Key, t.Value = publicPtr(d.Elem), publicPtr(d.Value)
	} else {
		t.Elem = publicPtr(d.Elem)
	}
	for _, f := range d.Fields {
		t.Fields = append(t.Fields, Field{Name: f.Name, Type: publicType(f.Type), Description: f.Description})
	}
	return t
}

func publicPtr(d *metadata.DataType) *DataType {
	if d == nil {
		return nil
	}
	t := publicType(*d)
	return &t
}

// AggFunction is the aggregate function of a column of a table with the aggregation merge
// engine (table.merge-engine = aggregation): Type is the function's name ("sum", "max",
// "last_value", "listagg", ...), Parameters its options.
type AggFunction struct {
	Type       string
	Parameters map[string]string
}

// Column is one column of a schema.
type Column struct {
	Name    string
	Type    DataType
	Comment string
	// AggFunction, if set, is the column's aggregate function (aggregation merge engine only).
	AggFunction *AggFunction
}

// NewColumn returns a column with the given name and type.
func NewColumn(name string, t DataType) Column { return Column{Name: name, Type: t} }

// Schema is a table schema: its columns in order and the names of the primary-key columns
// (none for a log table). AutoIncrement names columns whose values the server generates
// (primary-key tables only).
type Schema struct {
	Columns       []Column
	PrimaryKey    []string
	AutoIncrement []string
}

// NewSchema returns a schema of the given columns; primaryKey names the primary-key columns
// (none for a log table).
func NewSchema(columns []Column, primaryKey ...string) Schema {
	return Schema{Columns: slices.Clone(columns), PrimaryKey: primaryKey}
}

// ColumnNames returns the column names in order.
func (s Schema) ColumnNames() []string {
	names := make([]string, len(s.Columns))
	for i, c := range s.Columns {
		names[i] = c.Name
	}
	return names
}

// ColumnIndex returns the position of the column called name, or -1.
func (s Schema) ColumnIndex(name string) int {
	return slices.IndexFunc(s.Columns, func(c Column) bool { return c.Name == name })
}

// HasPrimaryKey reports whether the schema declares a primary key.
func (s Schema) HasPrimaryKey() bool { return len(s.PrimaryKey) > 0 }

// internal converts s to the metadata form, without column ids.
func (s Schema) internal() metadata.Schema {
	m := metadata.Schema{
		PrimaryKey:    slices.Clone(s.PrimaryKey),
		AutoIncrement: slices.Clone(s.AutoIncrement),
	}
	for _, c := range s.Columns {
		mc := metadata.Column{Name: c.Name, Type: c.Type.internal(), Comment: c.Comment, ID: metadata.UnknownID}
		if c.AggFunction != nil {
			mc.AggFunction = &metadata.AggFunction{Type: c.AggFunction.Type, Parameters: maps.Clone(c.AggFunction.Parameters)}
		}
		m.Columns = append(m.Columns, mc)
	}
	return m
}

// publicSchema converts a metadata schema to the public form.
func publicSchema(m metadata.Schema) Schema {
	s := Schema{PrimaryKey: slices.Clone(m.PrimaryKey), AutoIncrement: slices.Clone(m.AutoIncrement)}
	for _, c := range m.Columns {
		pc := Column{Name: c.Name, Type: publicType(c.Type), Comment: c.Comment}
		if c.AggFunction != nil {
			pc.AggFunction = &AggFunction{Type: c.AggFunction.Type, Parameters: maps.Clone(c.AggFunction.Parameters)}
		}
		s.Columns = append(s.Columns, pc)
	}
	return s
}

// TableDescriptor describes a table to create.
type TableDescriptor struct {
	Schema Schema
	// PartitionKeys names the partition columns (none: the table is not partitioned).
	PartitionKeys []string
	// BucketKeys names the columns rows are bucketed by. Empty means the default: the primary
	// key without partition keys for primary-key tables, random (sticky) buckets for log
	// tables.
	BucketKeys []string
	// BucketCount is the number of buckets (per partition); 0 takes the server default
	// (default.bucket.number).
	BucketCount int32
	Comment     string
	// Properties are table options (table.*), e.g. "table.log.format" or
	// "table.merge-engine". The cluster reports them with its defaults applied.
	Properties map[string]string
	// CustomProperties are free-form key/value pairs stored with the table.
	CustomProperties map[string]string
}

// HasPrimaryKey reports whether the descriptor declares a primary key.
func (d TableDescriptor) HasPrimaryKey() bool { return d.Schema.HasPrimaryKey() }

// IsPartitioned reports whether the descriptor declares partition keys.
func (d TableDescriptor) IsPartitioned() bool { return len(d.PartitionKeys) > 0 }

func (d TableDescriptor) internal() metadata.TableDescriptor {
	return metadata.TableDescriptor{
		Schema:           d.Schema.internal(),
		Comment:          d.Comment,
		HasComment:       d.Comment != "",
		PartitionKeys:    slices.Clone(d.PartitionKeys),
		BucketKeys:       slices.Clone(d.BucketKeys),
		BucketCount:      d.BucketCount,
		Properties:       maps.Clone(d.Properties),
		CustomProperties: maps.Clone(d.CustomProperties),
	}
}

func publicTableDescriptor(m *metadata.TableDescriptor) TableDescriptor {
	return TableDescriptor{
		Schema:           publicSchema(m.Schema),
		Comment:          m.Comment,
		PartitionKeys:    slices.Clone(m.PartitionKeys),
		BucketKeys:       slices.Clone(m.BucketKeys),
		BucketCount:      m.BucketCount,
		Properties:       maps.Clone(m.Properties),
		CustomProperties: maps.Clone(m.CustomProperties),
	}
}

// DatabaseDescriptor describes a database: an optional comment and custom properties.
type DatabaseDescriptor struct {
	Comment          string
	CustomProperties map[string]string
}

func (d DatabaseDescriptor) internal() metadata.DatabaseDescriptor {
	return metadata.DatabaseDescriptor{Comment: d.Comment, HasComment: d.Comment != "", CustomProperties: maps.Clone(d.CustomProperties)}
}

func publicDatabaseDescriptor(m metadata.DatabaseDescriptor) DatabaseDescriptor {
	return DatabaseDescriptor{Comment: m.Comment, CustomProperties: maps.Clone(m.CustomProperties)}
}

// Boolean returns the BOOLEAN type (Go bool).
func Boolean() DataType { return DataType{Root: TypeBoolean} }

// TinyInt returns the TINYINT type (Go int8).
func TinyInt() DataType { return DataType{Root: TypeTinyInt} }

// SmallInt returns the SMALLINT type (Go int16).
func SmallInt() DataType { return DataType{Root: TypeSmallInt} }

// Int returns the INT type (Go int32).
func Int() DataType { return DataType{Root: TypeInt} }

// BigInt returns the BIGINT type (Go int64).
func BigInt() DataType { return DataType{Root: TypeBigInt} }

// Float returns the FLOAT type (Go float32).
func Float() DataType { return DataType{Root: TypeFloat} }

// Double returns the DOUBLE type (Go float64).
func Double() DataType { return DataType{Root: TypeDouble} }

// Char returns the CHAR(n) type (Go string).
func Char(n int) DataType { return DataType{Root: TypeChar, Length: n} }

// String returns the STRING type (Go string).
func String() DataType { return DataType{Root: TypeString} }

// Binary returns the BINARY(n) type (Go []byte).
func Binary(n int) DataType { return DataType{Root: TypeBinary, Length: n} }

// Bytes returns the BYTES type (Go []byte).
func Bytes() DataType { return DataType{Root: TypeBytes} }

// DecimalType returns the DECIMAL(precision, scale) type (Go Decimal).
func DecimalType(precision, scale int) DataType {
	return DataType{Root: TypeDecimal, Precision: precision, Scale: scale}
}

// Date returns the DATE type (Go time.Time at midnight UTC).
func Date() DataType { return DataType{Root: TypeDate} }

// Time returns the TIME type with millisecond precision (Go time.Duration since midnight).
func Time() DataType { return DataType{Root: TypeTime} }

// Timestamp returns TIMESTAMP(precision) without time zone (Go time.Time, read as UTC).
func Timestamp(precision int) DataType {
	return DataType{Root: TypeTimestamp, Precision: precision}
}

// TimestampLTZ returns TIMESTAMP_LTZ(precision), an instant (Go time.Time).
func TimestampLTZ(precision int) DataType {
	return DataType{Root: TypeTimestampLTZ, Precision: precision}
}

// ArrayOf returns ARRAY<elem> (Go []any).
func ArrayOf(elem DataType) DataType { return DataType{Root: TypeArray, Elem: &elem} }

// MapOf returns MAP<key, value> (Go map[any]any).
func MapOf(key, value DataType) DataType {
	return DataType{Root: TypeMap, Key: &key, Value: &value}
}

// RowOf returns ROW<fields...>.
func RowOf(fields ...Field) DataType { return DataType{Root: TypeRow, Fields: slices.Clone(fields)} }
