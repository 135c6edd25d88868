// Package typetable is the one place that lists the Fluss column types. Each entry names a
// type root and, for every layer that handles column values, the Go expression of that
// root's entry in the layer's per-type table:
//
//   - metadata: the TypeRoot constant, its Fluss name (the JSON "type"), its SQL spellings
//     and its parameters' SQL text, JSON form, equality and validation (internal/metadata)
//   - Row: the CompactedRow / IndexedRow / BinaryArray / Iceberg-key / Paimon-key codec
//     (internal/row)
//   - Arrow: the Arrow type, builder-appender and reader (internal/arrowlog)
//   - Iceberg: the Iceberg type (server/lake)
//   - CLI: the command line's text and JSON form of values (cmd/strom/cli)
//   - Client: the public fluss.TypeRoot constant, and the Go value conversions and
//     partition spelling of the client (package fluss)
//
// `go generate ./internal/typetable` (gen/main.go) writes from Roots the TypeRoot constants
// and every layer's table, keyed by root. Adding a type is one entry here plus its
// implementations in the layers; an entry whose implementation is missing does not compile,
// a layer left blank is refused by the generator, and TestGeneratedUpToDate fails when the
// generated files were not regenerated. Each layer also has a test that walks
// metadata.TypeRoots() and checks every operation of every entry is present, and a
// TestSamplesRoundTrip that takes every entry's Samples through the layer's forms. The
// package imports nothing, so it may name entries in server/ and cmd/ although it sits in
// internal/ (docs/architecture.md, "Column types").
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
	// SQL holds the root's SQL spellings: the first is what DataType.String writes, the
	// others are aliases metadata.ParseSQLType accepts (an alias may end its keyword in "(n)",
	// a length that is ignored, and may have words that follow the parameters).
	SQL []string
	// Params is a Go expression, in package metadata, of the root's *typeParams: how its
	// types are parameterised in SQL text and JSON, compared and validated.
	Params string
	// Samples are example types of the root with a value of each, which the round-trip tests
	// of every layer take through every form (TestSamplesRoundTrip in metadata, arrowlog,
	// server/lake and cmd/strom/cli): Type in SQL text, as DataType.String writes it, and
	// Value in the command line's text form, as it prints it.
	Samples []Sample
	// Row, Arrow and Client are Go expressions, in the scope of packages row, arrowlog and
	// fluss, of the root's entry in each layer's table (a typeCodec, a columnCodec and a
	// goType).
	Row, Arrow, Client string
	// Iceberg is a Go expression, in package server/lake, of the root's icebergMapping:
	// its Iceberg type (FlussDataTypeToIcebergDataType). Generated into server/lake because
	// iceberg-go may be linked only into strom-lake; the table itself imports nothing.
	Iceberg string
	// CLI is a Go expression, in package cmd/strom/cli, of the root's valueForm: the text
	// and JSON form in which the command line reads and prints values of the root.
	CLI string
	// PartitionKey: a column of the root may be a partition key (Fluss's PartitionUtils);
	// the client then needs a partition spelling for it.
	PartitionKey bool
	// Statistics: log batches can carry min/max statistics of a column of the root.
	Statistics bool
	// GoValue is the Go type a fluss.Row holds for a column of the root: the comment of
	// the public fluss.Type<Const> constant.
	GoValue string
}

// Sample is an example type and value of a root.
type Sample struct{ Type, Value string }

// Roots lists the type roots in the order of their TypeRoot values, which start at 1 (the
// zero TypeRoot is invalid, so that an unset type is detectable). The values are Strom's own
// and never leave the process: the wire and JSON forms use Name.
var Roots = []Root{
	{Const: "Boolean", Name: "BOOLEAN", SQL: []string{"BOOLEAN", "BOOL"}, Params: "noParams", Samples: []Sample{{"BOOLEAN", "true"}}, Row: "booleanCodec", Arrow: "booleanColumn", Iceberg: "icebergBool", CLI: "boolText", Client: "booleanGoType", PartitionKey: true, Statistics: true, GoValue: "bool"},
	{Const: "TinyInt", Name: "TINYINT", SQL: []string{"TINYINT"}, Params: "noParams", Samples: []Sample{{"TINYINT NOT NULL", "-128"}}, Row: "tinyIntCodec", Arrow: "tinyIntColumn", Iceberg: "icebergInt32", CLI: "tinyIntText", Client: "tinyIntGoType", PartitionKey: true, Statistics: true, GoValue: "int8"},
	{Const: "SmallInt", Name: "SMALLINT", SQL: []string{"SMALLINT"}, Params: "noParams", Samples: []Sample{{"SMALLINT", "32767"}}, Row: "smallIntCodec", Arrow: "smallIntColumn", Iceberg: "icebergInt32", CLI: "smallIntText", Client: "smallIntGoType", PartitionKey: true, Statistics: true, GoValue: "int16"},
	{Const: "Int", Name: "INTEGER", SQL: []string{"INT", "INTEGER"}, Params: "noParams", Samples: []Sample{{"INT", "-2147483648"}}, Row: "int32Codec", Arrow: "intColumn", Iceberg: "icebergInt32", CLI: "intText", Client: "intGoType", PartitionKey: true, Statistics: true, GoValue: "int32"},
	{Const: "BigInt", Name: "BIGINT", SQL: []string{"BIGINT"}, Params: "noParams", Samples: []Sample{{"BIGINT", "9007199254740993"}}, Row: "bigIntCodec", Arrow: "bigIntColumn", Iceberg: "icebergInt64", CLI: "bigIntText", Client: "bigIntGoType", PartitionKey: true, Statistics: true, GoValue: "int64"},
	{Const: "Float", Name: "FLOAT", SQL: []string{"FLOAT"}, Params: "noParams", Samples: []Sample{{"FLOAT", "1.5"}}, Row: "floatCodec", Arrow: "floatColumn", Iceberg: "icebergFloat32", CLI: "floatText", Client: "floatGoType", PartitionKey: true, Statistics: true, GoValue: "float32"},
	{Const: "Double", Name: "DOUBLE", SQL: []string{"DOUBLE", "DOUBLE PRECISION"}, Params: "noParams", Samples: []Sample{{"DOUBLE", "-2.25e+100"}}, Row: "doubleCodec", Arrow: "doubleColumn", Iceberg: "icebergFloat64", CLI: "doubleText", Client: "doubleGoType", PartitionKey: true, Statistics: true, GoValue: "float64"},
	{Const: "Char", Name: "CHAR", SQL: []string{"CHAR"}, Params: "lengthParams", Samples: []Sample{{"CHAR(3)", "abc"}}, Row: "fixedLenCodec", Arrow: "stringCodec", Iceberg: "icebergString", CLI: "stringText", Client: "stringType", PartitionKey: true, Statistics: true, GoValue: "string"},
	{Const: "String", Name: "STRING", SQL: []string{"STRING", "VARCHAR(n)"}, Params: "noParams", Samples: []Sample{{"STRING", "héllo, wörld"}}, Row: "varLenCodec", Arrow: "stringCodec", Iceberg: "icebergString", CLI: "stringText", Client: "stringType", PartitionKey: true, Statistics: true, GoValue: "string"},
	{Const: "Binary", Name: "BINARY", SQL: []string{"BINARY"}, Params: "lengthParams", Samples: []Sample{{"BINARY(4)", "AQIDBA=="}}, Row: "fixedLenCodec", Arrow: "binaryColumn", Iceberg: "icebergBinary", CLI: "bytesText", Client: "bytesType", PartitionKey: true, GoValue: "[]byte"},
	{Const: "Bytes", Name: "BYTES", SQL: []string{"BYTES", "VARBINARY(n)"}, Params: "noParams", Samples: []Sample{{"BYTES", "aGk="}}, Row: "varLenCodec", Arrow: "bytesColumn", Iceberg: "icebergBinary", CLI: "bytesText", Client: "bytesType", PartitionKey: true, GoValue: "[]byte"},
	{Const: "Decimal", Name: "DECIMAL", SQL: []string{"DECIMAL", "NUMERIC", "DEC"}, Params: "decimalParams", Samples: []Sample{{"DECIMAL(10, 2)", "-12.30"}, {"DECIMAL(38, 10)", "1234567890123456789012345678.0123456789"}}, Row: "decimalCodec()", Arrow: "decimalColumn", Iceberg: "icebergDecimal", CLI: "decimalText", Client: "decimalGoType", Statistics: true, GoValue: "Decimal"},
	{Const: "Date", Name: "DATE", SQL: []string{"DATE"}, Params: "noParams", Samples: []Sample{{"DATE", "2024-02-29"}}, Row: "int32Codec", Arrow: "dateColumn", Iceberg: "icebergDate", CLI: "dateText", Client: "dateGoType", PartitionKey: true, Statistics: true, GoValue: "time.Time (midnight UTC)"},
	{Const: "Time", Name: "TIME_WITHOUT_TIME_ZONE", Doc: "TIME", SQL: []string{"TIME"}, Params: "precisionParams(DefaultTimePrecision)", Samples: []Sample{{"TIME(0)", "23:59:59"}, {"TIME(3)", "12:34:56.789"}}, Row: "timeOfDayCodec", Arrow: "timeColumn", Iceberg: "icebergTime", CLI: "timeText", Client: "timeGoType", PartitionKey: true, Statistics: true, GoValue: "time.Duration since midnight"},
	{Const: "Timestamp", Name: "TIMESTAMP_WITHOUT_TIME_ZONE", Doc: "TIMESTAMP", SQL: []string{"TIMESTAMP", "TIMESTAMP WITHOUT TIME ZONE"}, Params: "precisionParams(DefaultTimestampPrecision)", Samples: []Sample{{"TIMESTAMP(3)", "2024-02-29T12:34:56.789"}, {"TIMESTAMP(9)", "1969-07-20T20:17:40.123456789"}}, Row: "timestampCodec(true)", Arrow: "timestampCodec", Iceberg: "icebergTimestamp", CLI: "timestampText", Client: "timestampType", PartitionKey: true, Statistics: true, GoValue: "time.Time (no time zone, read as UTC)"},
	{Const: "TimestampLTZ", Name: "TIMESTAMP_WITH_LOCAL_TIME_ZONE", Doc: "TIMESTAMP_LTZ", SQL: []string{"TIMESTAMP_LTZ", "TIMESTAMP WITH LOCAL TIME ZONE"}, Params: "precisionParams(DefaultTimestampPrecision)", Samples: []Sample{{"TIMESTAMP_LTZ(3)", "2024-02-29T12:34:56.789Z"}, {"TIMESTAMP_LTZ(6)", "1969-07-20T20:17:40.123456Z"}}, Row: "timestampCodec(false)", Arrow: "timestampCodec", Iceberg: "icebergTimestampTz", CLI: "instantText", Client: "timestampType", PartitionKey: true, Statistics: true, GoValue: "time.Time (an instant)"},
	{Const: "Array", Name: "ARRAY", SQL: []string{"ARRAY"}, Params: "arrayParams", Samples: []Sample{{"ARRAY<INT>", "[1,null,3]"}}, Row: "nestedCodec()", Arrow: "arrayColumn", Iceberg: "icebergList", CLI: "arrayText", Client: "arrayGoType", GoValue: "[]any"},
	{Const: "Map", Name: "MAP", SQL: []string{"MAP"}, Params: "mapParams", Samples: []Sample{{"MAP<STRING NOT NULL, BIGINT>", `{"a":1,"b":null}`}, {"MAP<INT NOT NULL, STRING>", `[{"key":1,"value":"x"}]`}}, Row: "nestedCodec()", Arrow: "mapColumn", Iceberg: "icebergMap", CLI: "mapText", Client: "mapGoType", GoValue: "map[any]any"},
	{Const: "Row", Name: "ROW", SQL: []string{"ROW"}, Params: "rowParams", Samples: []Sample{{"ROW<`x` INT, `y` ARRAY<STRING>>", `{"x":1,"y":["a",null]}`}}, Row: "nestedCodec()", Arrow: "rowColumn", Iceberg: "icebergStruct", CLI: "rowText", Client: "rowGoType", GoValue: "[]any, one value per field"},
}
