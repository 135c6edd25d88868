// Package typetable is the one place that lists the Fluss column types. Each entry names a
// type root and, for every layer that handles column values, the Go expression of that
// root's entry in the layer's per-type table:
//
//   - metadata: the TypeRoot constant and its Fluss name (internal/metadata)
//   - Row: the CompactedRow / IndexedRow / BinaryArray / Iceberg-key codec (internal/row)
//   - Arrow: the Arrow type, builder-appender and reader (internal/arrowlog)
//   - Client: the public fluss.TypeRoot constant, and the Go value conversions and
//     partition spelling of the client (package fluss)
//
// `go generate ./internal/typetable` (gen/main.go) writes from Roots the TypeRoot constants
// and every layer's table, keyed by root. Adding a type is one entry here plus its
// implementations in the layers; an entry whose implementation is missing does not compile,
// a layer left blank is refused by the generator, and TestGeneratedUpToDate fails when the
// generated files were not regenerated. Each layer also has a test that walks
// metadata.TypeRoots() and checks every operation of every entry is present.
package typetable

//go:generate go run ./gen

// Root is one Fluss type root.
type Root struct {
	// Const is the Go name of the metadata.TypeRoot constant.
	Const string
	// Name is Java's DataTypeRoot name, also the JSON "type" value.
	Name string
	// Doc, if set, is the constant's line comment.
	Doc string
	// Row, Arrow and Client are Go expressions, in the scope of packages row, arrowlog and
	// fluss, of the root's entry in each layer's table (a typeCodec, a columnCodec and a
	// goType).
	Row, Arrow, Client string
	// PartitionKey: a column of the root may be a partition key (Fluss's PartitionUtils);
	// the client then needs a partition spelling for it.
	PartitionKey bool
	// Statistics: log batches can carry min/max statistics of a column of the root.
	Statistics bool
	// GoValue is the Go type a fluss.Row holds for a column of the root: the comment of
	// the public fluss.Type<Const> constant.
	GoValue string
}

// Roots lists the type roots in the order of their TypeRoot values, which start at 1 (the
// zero TypeRoot is invalid, so that an unset type is detectable). The values are Strom's own
// and never leave the process: the wire and JSON forms use Name.
var Roots = []Root{
	{Const: "Boolean", Name: "BOOLEAN", Row: "booleanCodec", Arrow: "booleanColumn", Client: "booleanGoType", PartitionKey: true, Statistics: true, GoValue: "bool"},
	{Const: "TinyInt", Name: "TINYINT", Row: "tinyIntCodec", Arrow: "tinyIntColumn", Client: "tinyIntGoType", PartitionKey: true, Statistics: true, GoValue: "int8"},
	{Const: "SmallInt", Name: "SMALLINT", Row: "smallIntCodec", Arrow: "smallIntColumn", Client: "smallIntGoType", PartitionKey: true, Statistics: true, GoValue: "int16"},
	{Const: "Int", Name: "INTEGER", Row: "int32Codec", Arrow: "intColumn", Client: "intGoType", PartitionKey: true, Statistics: true, GoValue: "int32"},
	{Const: "BigInt", Name: "BIGINT", Row: "bigIntCodec", Arrow: "bigIntColumn", Client: "bigIntGoType", PartitionKey: true, Statistics: true, GoValue: "int64"},
	{Const: "Float", Name: "FLOAT", Row: "floatCodec", Arrow: "floatColumn", Client: "floatGoType", PartitionKey: true, Statistics: true, GoValue: "float32"},
	{Const: "Double", Name: "DOUBLE", Row: "doubleCodec", Arrow: "doubleColumn", Client: "doubleGoType", PartitionKey: true, Statistics: true, GoValue: "float64"},
	{Const: "Char", Name: "CHAR", Row: "fixedLenCodec", Arrow: "stringCodec", Client: "stringType", PartitionKey: true, Statistics: true, GoValue: "string"},
	{Const: "String", Name: "STRING", Row: "varLenCodec", Arrow: "stringCodec", Client: "stringType", PartitionKey: true, Statistics: true, GoValue: "string"},
	{Const: "Binary", Name: "BINARY", Row: "fixedLenCodec", Arrow: "binaryColumn", Client: "bytesType", PartitionKey: true, GoValue: "[]byte"},
	{Const: "Bytes", Name: "BYTES", Row: "varLenCodec", Arrow: "bytesColumn", Client: "bytesType", PartitionKey: true, GoValue: "[]byte"},
	{Const: "Decimal", Name: "DECIMAL", Row: "decimalCodec()", Arrow: "decimalColumn", Client: "decimalGoType", Statistics: true, GoValue: "Decimal"},
	{Const: "Date", Name: "DATE", Row: "int32Codec", Arrow: "dateColumn", Client: "dateGoType", PartitionKey: true, Statistics: true, GoValue: "time.Time (midnight UTC)"},
	{Const: "Time", Name: "TIME_WITHOUT_TIME_ZONE", Doc: "TIME", Row: "timeOfDayCodec", Arrow: "timeColumn", Client: "timeGoType", PartitionKey: true, Statistics: true, GoValue: "time.Duration since midnight"},
	{Const: "Timestamp", Name: "TIMESTAMP_WITHOUT_TIME_ZONE", Doc: "TIMESTAMP", Row: "timestampCodec(true)", Arrow: "timestampCodec", Client: "timestampType", PartitionKey: true, Statistics: true, GoValue: "time.Time (no time zone, read as UTC)"},
	{Const: "TimestampLTZ", Name: "TIMESTAMP_WITH_LOCAL_TIME_ZONE", Doc: "TIMESTAMP_LTZ", Row: "timestampCodec(false)", Arrow: "timestampCodec", Client: "timestampType", PartitionKey: true, Statistics: true, GoValue: "time.Time (an instant)"},
	{Const: "Array", Name: "ARRAY", Row: "nestedCodec()", Arrow: "arrayColumn", Client: "arrayGoType", GoValue: "[]any"},
	{Const: "Map", Name: "MAP", Row: "nestedCodec()", Arrow: "mapColumn", Client: "mapGoType", GoValue: "map[any]any"},
	{Const: "Row", Name: "ROW", Row: "nestedCodec()", Arrow: "rowColumn", Client: "rowGoType", GoValue: "[]any, one value per field"},
}
