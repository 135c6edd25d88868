package row

import (
	"math/big"

	"github.com/stromdb/strom/internal/metadata"
)

// EncodeIcebergKey appends the key bytes Java's IcebergKeyEncoder produces for a table whose
// table.datalake.format is iceberg: exactly one key column, written as Iceberg's single-value
// hashing form (IcebergBinaryRowWriter), so that murmur3 of the bytes is Iceberg's bucket hash:
//
//	INT, DATE:       the value as a little-endian int64
//	BIGINT:          little-endian int64
//	TIME:            microseconds of day (milliseconds * 1000), little-endian int64
//	TIMESTAMP:       epoch microseconds, little-endian int64
//	FLOAT, DOUBLE:   little-endian IEEE 754 bits
//	DECIMAL:         unscaled value, minimal big-endian two's complement
//	CHAR, STRING:    UTF-8 bytes; BINARY, BYTES: the bytes (no length prefix)
//
// Other types are refused, as Java refuses them.
func EncodeIcebergKey(dst []byte, types []metadata.DataType, vals []Datum) ([]byte, error) {
	if len(types) != 1 || len(vals) != 1 {
		return dst, invalidf("Key fields must have exactly one field for iceberg format, but got %d", len(types))
	}
	t, d := &types[0], &vals[0]
	if d.Null {
		return dst, invalidf("key column 0 is NULL")
	}
	if c := codecOf(t); c.icebergKey != nil {
		return c.icebergKey(dst, t, d)
	}
	return dst, invalidf("Unsupported type for Iceberg binary row writer: %v", t.Root)
}

// twosComplement is Java's BigInteger.valueOf(v).toByteArray(): minimal big-endian two's
// complement.
func twosComplement(v int64) []byte {
	b := big.NewInt(v)
	switch b.Sign() {
	case 0:
		return []byte{0}
	case 1:
		out := b.Bytes()
		if out[0]&0x80 != 0 {
			out = append([]byte{0}, out...)
		}
		return out
	}
	// Negative: 2^(8n) + v for the smallest n whose top bit is set.
	n := (b.BitLen() + 8) / 8
	mod := new(big.Int).Lsh(big.NewInt(1), uint(8*n))
	out := new(big.Int).Add(mod, b).Bytes()
	for len(out) < n {
		out = append([]byte{0xff}, out...)
	}
	for len(out) > 1 && out[0] == 0xff && out[1]&0x80 != 0 {
		out = out[1:]
	}
	return out
}
