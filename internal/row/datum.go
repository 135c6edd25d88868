// Package row implements Fluss's binary row formats (CompactedRow, IndexedRow, with nested
// BinaryArray and BinaryMap), the key encoders used for primary keys and prefix keys, and the
// bucketing hash. Rows are described by a metadata.DataType per field and exchanged in decoded
// form as []Datum.
package row

// Datum is one field value in decoded form. Which members are meaningful depends on the
// field's metadata.DataType root:
//
//	Boolean:                       I (0 or 1)
//	TinyInt, SmallInt, Int, BigInt: I
//	Float, Double:                 F
//	Char, String:                  B (UTF-8)
//	Binary, Bytes:                 B
//	Decimal:                       I (unscaled) when precision <= 18, else B (unscaled,
//	                               big-endian two's complement, as Java's BigInteger.toByteArray;
//	                               decoders return the minimal form, encoders minimise any input)
//	Date:                          I (days since epoch)
//	Time:                          I (milliseconds of day)
//	Timestamp, TimestampLTZ:       I (epoch milliseconds) and Nanos (nanoseconds within the millisecond)
//	Array:                         Elems
//	Map:                           Elems (keys) and Vals (values), same length
//	Row:                           Elems (fields)
//
// B may alias the buffer a row was decoded from; copy it before the buffer is reused.
type Datum struct {
	Null  bool
	I     int64
	F     float64
	B     []byte
	Nanos int32
	Elems []Datum
	Vals  []Datum
}

// NullDatum is the NULL value of any type.
var NullDatum = Datum{Null: true}

// MaxCompactDecimalPrecision is the largest decimal precision stored as an unscaled int64.
const MaxCompactDecimalPrecision = 18
