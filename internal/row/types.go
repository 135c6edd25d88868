package row

import (
	"math"

	"github.com/stromdb/strom/internal/metadata"
)

// MaxCompactTimestampPrecision is the largest TIMESTAMP/TIMESTAMP_LTZ precision stored as epoch
// milliseconds alone; larger precisions also store the nanosecond within the millisecond.
const MaxCompactTimestampPrecision = 3

// maxNanoOfMilli bounds Datum.Nanos; Java's TimestampNtz/TimestampLtz reject anything else.
const maxNanoOfMilli = 999_999

// maxDecimalBytes is the longest unscaled non-compact decimal Java's array writer accepts
// (precision 38 needs at most 16 bytes).
const maxDecimalBytes = 16

// rowFormat selects the layout of ROW values nested inside arrays and maps: a nested ROW uses
// its parent row's format.
type rowFormat uint8

const (
	formatCompacted rowFormat = iota
	formatIndexed
)

func isCompactDecimal(t *metadata.DataType) bool {
	return t.Precision <= MaxCompactDecimalPrecision
}

func isCompactTimestamp(t *metadata.DataType) bool {
	return t.Precision <= MaxCompactTimestampPrecision
}

// checkInt validates that d.I fits the integer width of root and returns it as int32.
func checkInt32(t *metadata.DataType, d *Datum) (int32, error) {
	if d.I < math.MinInt32 || d.I > math.MaxInt32 {
		return 0, invalidf("value %d out of range for type root %d", d.I, t.Root)
	}
	return int32(d.I), nil
}

func checkInt16(d *Datum) (int16, error) {
	if d.I < math.MinInt16 || d.I > math.MaxInt16 {
		return 0, invalidf("value %d out of range for SMALLINT", d.I)
	}
	return int16(d.I), nil
}

func checkInt8(d *Datum) (byte, error) {
	if d.I < math.MinInt8 || d.I > math.MaxInt8 {
		return 0, invalidf("value %d out of range for TINYINT", d.I)
	}
	return byte(int8(d.I)), nil
}

func checkNanos(d *Datum) error {
	if d.Nanos < 0 || d.Nanos > maxNanoOfMilli {
		return invalidf("nanosecond of millisecond %d out of range", d.Nanos)
	}
	return nil
}

func boolByte(d *Datum) byte {
	if d.I != 0 {
		return 1
	}
	return 0
}

// minimalDecimalBytes returns the shortest big-endian two's-complement form of b, as Java's
// BigInteger.toByteArray writes it (an empty slice means zero, which Java writes as one 0x00
// byte). It never allocates except for the zero case, which uses a static slice.
func minimalDecimalBytes(b []byte) []byte {
	if len(b) == 0 {
		return zeroDecimal
	}
	i := 0
	for i < len(b)-1 {
		if b[i] == 0x00 && b[i+1] < 0x80 || b[i] == 0xff && b[i+1] >= 0x80 {
			i++
			continue
		}
		break
	}
	return b[i:]
}

var zeroDecimal = []byte{0}

// prepare returns dst resized to n Datums, reusing its backing array (and so the nested
// slices of earlier decodes) when it is large enough.
func prepare(dst []Datum, n int) []Datum {
	if cap(dst) >= n {
		return dst[:n]
	}
	return make([]Datum, n)
}

// setNested clears d but keeps the capacity of its nested slices for reuse.
func (d *Datum) resetNested() (elems, vals []Datum) {
	elems, vals = d.Elems[:0], d.Vals[:0]
	*d = Datum{}
	return elems, vals
}

// putU16/32/64 store little-endian values at b[off:].
func putU16(b []byte, off int, v uint16) { b[off], b[off+1] = byte(v), byte(v>>8) }

func putU32(b []byte, off int, v uint32) {
	b[off], b[off+1], b[off+2], b[off+3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
}

func putU64(b []byte, off int, v uint64) {
	putU32(b, off, uint32(v))
	putU32(b, off+4, uint32(v>>32))
}

func getU16(b []byte, off int) uint16 { return uint16(b[off]) | uint16(b[off+1])<<8 }

func getU32(b []byte, off int) uint32 {
	return uint32(b[off]) | uint32(b[off+1])<<8 | uint32(b[off+2])<<16 | uint32(b[off+3])<<24
}

func getU64(b []byte, off int) uint64 {
	return uint64(getU32(b, off)) | uint64(getU32(b, off+4))<<32
}

func appendU16(dst []byte, v uint16) []byte { return append(dst, byte(v), byte(v>>8)) }

func appendU32(dst []byte, v uint32) []byte {
	return append(dst, byte(v), byte(v>>8), byte(v>>16), byte(v>>24))
}

func appendU64(dst []byte, v uint64) []byte {
	return append(dst, byte(v), byte(v>>8), byte(v>>16), byte(v>>24),
		byte(v>>32), byte(v>>40), byte(v>>48), byte(v>>56))
}

// appendZeros appends n zero bytes.
func appendZeros(dst []byte, n int) []byte {
	for ; n >= 8; n -= 8 {
		dst = append(dst, 0, 0, 0, 0, 0, 0, 0, 0)
	}
	for ; n > 0; n-- {
		dst = append(dst, 0)
	}
	return dst
}

// bitGet reports whether bit i of the LSB-first bitset starting at b[0] is set.
func bitGet(b []byte, i int) bool { return b[i>>3]&(1<<(uint(i)&7)) != 0 }

func bitSet(b []byte, i int) { b[i>>3] |= 1 << (uint(i) & 7) }

// typeList is a read-only view of a row's field types: either a top-level []DataType or the
// Fields of a nested ROW type, so nested rows need no conversion (and no allocation).
type typeList struct {
	types  []metadata.DataType
	fields []metadata.Field
}

func topTypes(t []metadata.DataType) typeList { return typeList{types: t} }

func rowTypes(t *metadata.DataType) typeList { return typeList{fields: t.Fields} }

func (l typeList) len() int {
	if l.fields != nil {
		return len(l.fields)
	}
	return len(l.types)
}

func (l typeList) at(i int) *metadata.DataType {
	if l.fields != nil {
		return &l.fields[i].Type
	}
	return &l.types[i]
}
