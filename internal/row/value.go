package row

import "github.com/stromdb/strom/internal/ferr"

// SchemaIDLen is the size of the schema id that prefixes every stored KV value.
const SchemaIDLen = 2

// AppendValue appends the stored-value form of a row (docs/encodings.md §9, Java ValueEncoder):
// int16 little-endian schema id followed by the row bytes in the table's KV format.
func AppendValue(dst []byte, schemaID int16, row []byte) []byte {
	dst = appendU16(dst, uint16(schemaID))
	return append(dst, row...)
}

// SplitValue splits a stored value into its schema id and row bytes (aliasing value).
func SplitValue(value []byte) (schemaID int16, row []byte, err error) {
	if len(value) < SchemaIDLen {
		return 0, nil, ferr.New(ferr.CorruptRecordException,
			"row: value of %d bytes has no schema id", len(value))
	}
	return int16(getU16(value, 0)), value[SchemaIDLen:], nil
}
