// Package metadata models Fluss's logical schema: data types, columns, schemas, table and
// database descriptors, and their JSON forms as exchanged on the wire (table_json,
// schema_json, database_json).
package metadata

// TypeRoot names a Fluss logical type, independent of parameters and nullability.
type TypeRoot uint8

// The TypeRoot constants (Boolean .. Row) and LastTypeRoot are generated from
// internal/typetable/table.go, the one list of the Fluss column types.

// DataType is a Fluss logical type. Only the parameters that belong to Root are meaningful:
//
//	Char, Binary:                   Length
//	Decimal:                        Precision, Scale
//	Time, Timestamp, TimestampLTZ:  Precision
//	Array:                          Elem
//	Map:                            Key (in Elem) and Value
//	Row:                            Fields
//
// The zero value of NotNull means nullable, which is Fluss's default.
type DataType struct {
	Root      TypeRoot
	NotNull   bool
	Length    int
	Precision int
	Scale     int
	Elem      *DataType // Array element type, or Map key type
	Value     *DataType // Map value type
	Fields    []Field   // Row fields
}

// Field is one field of a ROW type.
type Field struct {
	Name        string
	Type        DataType
	Description string
	ID          int32 // field id within the schema; -1 when unknown
}

// Column is one top-level column of a schema.
type Column struct {
	Name        string
	Type        DataType
	Comment     string
	AggFunction *AggFunction // only for tables with the aggregation merge engine
	ID          int32        // column id, unique with all nested field ids; -1 (UnknownID) when unassigned
}

// AggFunction is the aggregate function of a column of an aggregation merge-engine table.
// Type is the canonical lower-case name (e.g. "sum", "listagg"; see CanonicalAggFunction).
type AggFunction struct {
	Type       string
	Parameters map[string]string
}

// Schema is a table schema version. After Normalize (which ParseSchema applies): primary-key
// columns are NOT NULL, every column and nested ROW field has a unique non-negative id, and
// HighestFieldID is at least the largest of them.
type Schema struct {
	Columns        []Column
	PrimaryKey     []string
	AutoIncrement  []string
	HighestFieldID int32
}

// TableDescriptor is the user-facing definition of a table, as carried by table_json.
// BucketCount is 0 when the descriptor has no distribution yet (the coordinator fills the
// default); BucketKeys is empty for tables without bucket keys.
type TableDescriptor struct {
	Schema           Schema
	Comment          string
	HasComment       bool
	PartitionKeys    []string
	BucketKeys       []string
	BucketCount      int32
	Properties       TableProperties
	CustomProperties map[string]string
}

// DatabaseDescriptor is the definition of a database, as carried by database_json.
type DatabaseDescriptor struct {
	Comment          string
	HasComment       bool
	CustomProperties map[string]string
}
