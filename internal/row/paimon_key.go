package row

import (
	"encoding/binary"
	"math"

	"github.com/stromdb/strom/internal/metadata"
)

// EncodePaimonKey appends the key bytes Java's PaimonKeyEncoder produces for a table whose
// table.datalake.format is paimon: the key columns as one Paimon BinaryRow
// (fluss-common/…/row/encode/paimon/PaimonBinaryRowWriter.java), laid out as
//
//		[null bit set][one 8-byte slot per field][variable-length part]
//
//	  - The bit set is ((n + 63 + 8) / 64) * 8 bytes for n fields; its first byte is the row
//	    kind (0, INSERT), and field i's null bit is bit i+8 (byte (i+8)/8, bit (i+8)%8).
//	  - Slots are little-endian (the byte order of the machines Java and the clients run on).
//	    BOOLEAN and TINYINT fill 1 byte of theirs, SMALLINT 2, INT/DATE/TIME 4 (the rest 0),
//	    BIGINT, FLOAT/DOUBLE (IEEE bits), DECIMAL of precision ≤ 18 (the unscaled value) and
//	    TIMESTAMP/TIMESTAMP_LTZ of precision ≤ 3 (epoch millis) all 8.
//	  - CHAR/STRING/BINARY/BYTES of at most 7 bytes sit in the slot: the bytes from its first
//	    byte on, and 0x80|length in its last. Longer ones go to the variable-length part,
//	    padded with zeros to a multiple of 8, and the slot holds offset<<32 | length (the
//	    offset counted from the row's start).
//	  - DECIMAL of precision > 18 takes 16 zeroed bytes of the variable-length part holding the
//	    minimal big-endian unscaled value; the slot holds offset<<32 | its length.
//	  - TIMESTAMP/TIMESTAMP_LTZ of precision > 3 take 8 bytes there holding the epoch millis;
//	    the slot holds offset<<32 | nanos of the milli.
//
// Key columns are never NULL (the schema makes them NOT NULL); other types are refused, as
// Java refuses them.
func EncodePaimonKey(dst []byte, types []metadata.DataType, vals []Datum) ([]byte, error) {
	if len(types) != len(vals) {
		return dst, invalidf("%d key values for %d key columns", len(vals), len(types))
	}
	n := len(types)
	nullBytes := ((n + 63 + 8) / 64) * 8
	start := len(dst)
	dst = append(dst, make([]byte, nullBytes+8*n)...) // row kind 0 (INSERT), no nulls
	for i := range types {
		t, d := &types[i], &vals[i]
		slot := start + nullBytes + 8*i
		if d.Null {
			return dst[:start], invalidf("key column %d is NULL", i)
		}
		s := dst[slot : slot+8]
		switch t.Root {
		case metadata.Boolean, metadata.TinyInt:
			s[0] = byte(d.I)
		case metadata.SmallInt:
			binary.LittleEndian.PutUint16(s, uint16(d.I))
		case metadata.Int, metadata.Date, metadata.Time:
			binary.LittleEndian.PutUint32(s, uint32(int32(d.I)))
		case metadata.BigInt:
			binary.LittleEndian.PutUint64(s, uint64(d.I))
		case metadata.Float:
			binary.LittleEndian.PutUint32(s, math.Float32bits(float32(d.F)))
		case metadata.Double:
			binary.LittleEndian.PutUint64(s, math.Float64bits(d.F))
		case metadata.Char, metadata.String, metadata.Binary, metadata.Bytes:
			if len(d.B) <= 7 {
				copy(s, d.B)
				s[7] = 0x80 | byte(len(d.B))
				break
			}
			off := len(dst) - start
			dst = append(dst, d.B...)
			dst = append(dst, make([]byte, padTo8(len(d.B)))...)
			binary.LittleEndian.PutUint64(dst[slot:], uint64(off)<<32|uint64(len(d.B)))
		case metadata.Decimal:
			if isCompactDecimal(t) {
				binary.LittleEndian.PutUint64(s, uint64(d.I))
				break
			}
			b := minimalDecimalBytes(d.B)
			if len(b) > 16 {
				return dst[:start], invalidf("key column %d: decimal of %d bytes", i, len(b))
			}
			off := len(dst) - start
			dst = append(dst, make([]byte, 16)...)
			copy(dst[start+off:], b)
			binary.LittleEndian.PutUint64(dst[slot:], uint64(off)<<32|uint64(len(b)))
		case metadata.Timestamp, metadata.TimestampLTZ:
			if t.Precision <= 3 {
				binary.LittleEndian.PutUint64(s, uint64(d.I))
				break
			}
			off := len(dst) - start
			dst = binary.LittleEndian.AppendUint64(dst, uint64(d.I))
			binary.LittleEndian.PutUint64(dst[slot:], uint64(off)<<32|uint64(uint32(d.Nanos)))
		default:
			return dst[:start], invalidf("Unsupported type for Paimon BinaryRow writer: %v", t.Root)
		}
	}
	return dst, nil
}

// padTo8 is the number of zero bytes that round n up to a multiple of 8.
func padTo8(n int) int { return (8 - n%8) % 8 }
