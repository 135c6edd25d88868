package row

import (
	"encoding/binary"
	"fmt"
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
		c := codecOf(t)
		if c.paimonKey == nil {
			return dst[:start], invalidf("Unsupported type for Paimon BinaryRow writer: %v", t.Root)
		}
		var err error
		if dst, err = c.paimonKey(dst, start, slot, t, d); err != nil {
			return dst[:start], invalidf("key column %d: %v", i, err)
		}
	}
	return dst, nil
}

// The Paimon BinaryRow forms of the key types, one per layout; each type's codec names its
// own (typeCodec.paimonKey, reached through the type's entry in internal/typetable).

func paimonByte(dst []byte, _, slot int, _ *metadata.DataType, d *Datum) ([]byte, error) {
	dst[slot] = byte(d.I)
	return dst, nil
}

func paimonUint16(dst []byte, _, slot int, _ *metadata.DataType, d *Datum) ([]byte, error) {
	binary.LittleEndian.PutUint16(dst[slot:], uint16(d.I))
	return dst, nil
}

func paimonUint32(dst []byte, _, slot int, _ *metadata.DataType, d *Datum) ([]byte, error) {
	binary.LittleEndian.PutUint32(dst[slot:], uint32(int32(d.I)))
	return dst, nil
}

func paimonUint64(dst []byte, _, slot int, _ *metadata.DataType, d *Datum) ([]byte, error) {
	binary.LittleEndian.PutUint64(dst[slot:], uint64(d.I))
	return dst, nil
}

func paimonFloat(dst []byte, _, slot int, _ *metadata.DataType, d *Datum) ([]byte, error) {
	binary.LittleEndian.PutUint32(dst[slot:], math.Float32bits(float32(d.F)))
	return dst, nil
}

func paimonDouble(dst []byte, _, slot int, _ *metadata.DataType, d *Datum) ([]byte, error) {
	binary.LittleEndian.PutUint64(dst[slot:], math.Float64bits(d.F))
	return dst, nil
}

// paimonBytes: CHAR, STRING, BINARY and BYTES.
func paimonBytes(dst []byte, start, slot int, _ *metadata.DataType, d *Datum) ([]byte, error) {
	if len(d.B) <= 7 {
		s := dst[slot : slot+8]
		copy(s, d.B)
		s[7] = 0x80 | byte(len(d.B))
		return dst, nil
	}
	off := len(dst) - start
	dst = append(dst, d.B...)
	dst = append(dst, make([]byte, padTo8(len(d.B)))...)
	binary.LittleEndian.PutUint64(dst[slot:], uint64(off)<<32|uint64(len(d.B)))
	return dst, nil
}

func paimonDecimal(dst []byte, start, slot int, t *metadata.DataType, d *Datum) ([]byte, error) {
	if isCompactDecimal(t) {
		binary.LittleEndian.PutUint64(dst[slot:], uint64(d.I))
		return dst, nil
	}
	b := minimalDecimalBytes(d.B)
	if len(b) > 16 {
		return dst, fmt.Errorf("decimal of %d bytes", len(b))
	}
	off := len(dst) - start
	dst = append(dst, make([]byte, 16)...)
	copy(dst[start+off:], b)
	binary.LittleEndian.PutUint64(dst[slot:], uint64(off)<<32|uint64(len(b)))
	return dst, nil
}

// paimonTimestamp: TIMESTAMP and TIMESTAMP_LTZ.
func paimonTimestamp(dst []byte, start, slot int, t *metadata.DataType, d *Datum) ([]byte, error) {
	if t.Precision <= 3 {
		binary.LittleEndian.PutUint64(dst[slot:], uint64(d.I))
		return dst, nil
	}
	off := len(dst) - start
	dst = binary.LittleEndian.AppendUint64(dst, uint64(d.I))
	binary.LittleEndian.PutUint64(dst[slot:], uint64(off)<<32|uint64(uint32(d.Nanos)))
	return dst, nil
}

// padTo8 is the number of zero bytes that round n up to a multiple of 8.
func padTo8(n int) int { return (8 - n%8) % 8 }
