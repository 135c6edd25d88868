package row

import (
	"math"

	"github.com/stromdb/strom/internal/metadata"
)

// BinaryArray layout (docs/encodings.md §7, Java BinaryArrayWriter/AbstractBinaryWriter), shared by
// both row formats; all offsets are relative to the array's first byte:
//
//	int32 numElements
//	null bits: 4 * ceil(numElements/32) bytes, bit i set = element i NULL
//	fixed part: numElements * elemSize bytes, zero padded so header+fixed is a multiple of 8
//	variable part: 8-byte aligned chunks referenced from 8-byte slots as (offset<<32 | size)
//
// Strings/bytes of at most 7 bytes are stored inline in their slot with slot byte 7 =
// 0x80|len. Non-compact decimals reserve 16 bytes; non-compact timestamps store the millis in
// the variable part and the nanos in the slot's low half. NULL slots are zero.
//
// BinaryMap = int32 byte size of the key array, key BinaryArray, value BinaryArray.

const (
	inlineMark   = uint64(1) << 63 // slot holds the data itself
	maxInlineLen = 7
)

// elemSize is the fixed-part slot width of an array element of type t.
func elemSize(t *metadata.DataType) (int, bool) {
	n := codecOf(t).elemSize
	return n, n > 0
}

func roundUp8(n int) int { return (n + 7) &^ 7 }

// arrayHeaderLen is 4 bytes of element count plus the null bits for n elements.
func arrayHeaderLen(n int) int { return 4 + ((n+31)/32)*4 }

var (
	canonicalNaN32 = math.Float32bits(float32(math.NaN()))
	canonicalNaN64 = uint64(0x7ff8000000000000)
)

// appendBinaryArray appends the BinaryArray form of vals (elements of type elem).
func appendBinaryArray(dst []byte, elem *metadata.DataType, vals []Datum, f rowFormat) ([]byte, error) {
	es, ok := elemSize(elem)
	if !ok {
		return dst, invalidf("unsupported array element type root %d", elem.Root)
	}
	n := len(vals)
	if n > math.MaxInt32/8 {
		return dst, invalidf("array of %d elements is too large", n)
	}
	start := len(dst)
	hdr := arrayHeaderLen(n)
	dst = appendZeros(dst, roundUp8(hdr+es*n))
	putU32(dst, start, uint32(n))
	var err error
	for i := range vals {
		d := &vals[i]
		slot := start + hdr + i*es
		if d.Null {
			bitSet(dst[start+4:], i)
			continue
		}
		if dst, err = appendArrayElem(dst, start, slot, elem, d, f); err != nil {
			return dst[:start], invalidf("array element %d: %v", i, err)
		}
	}
	if len(dst)-start > math.MaxInt32 {
		return dst[:start], invalidf("array too large")
	}
	return dst, nil
}

// appendArrayElem writes one non-NULL element into its slot at dst[slot:], appending any
// variable-length data; start is the array's first byte.
func appendArrayElem(dst []byte, start, slot int, t *metadata.DataType, d *Datum, f rowFormat) ([]byte, error) {
	return codecOf(t).appendElem(dst, start, slot, t, d, f)
}

// appendBinaryMap appends the BinaryMap form of d (keys in d.Elems, values in d.Vals).
func appendBinaryMap(dst []byte, kt, vt *metadata.DataType, d *Datum, f rowFormat) ([]byte, error) {
	if len(d.Elems) != len(d.Vals) {
		return dst, invalidf("map has %d keys and %d values", len(d.Elems), len(d.Vals))
	}
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	var err error
	if dst, err = appendBinaryArray(dst, kt, d.Elems, f); err != nil {
		return dst[:start], err
	}
	putU32(dst, start, uint32(len(dst)-start-4))
	if dst, err = appendBinaryArray(dst, vt, d.Vals, f); err != nil {
		return dst[:start], err
	}
	return dst, nil
}

// decodeBinaryArray decodes the BinaryArray buf (exactly the array's bytes) into dst.
func decodeBinaryArray(buf []byte, elem *metadata.DataType, f rowFormat, dst []Datum) ([]Datum, error) {
	es, ok := elemSize(elem)
	if !ok {
		return dst[:0], corruptf("unsupported array element type root %d", elem.Root)
	}
	if len(buf) < 4 {
		return dst[:0], errTruncated("array header", 4, len(buf))
	}
	n32 := int32(getU32(buf, 0))
	if n32 < 0 {
		return dst[:0], corruptf("negative array size %d", n32)
	}
	n := int(n32)
	hdr := arrayHeaderLen(n)
	if need := int64(hdr) + int64(n)*int64(es); need > int64(len(buf)) {
		return dst[:0], errTruncated("array fixed part", int(need), len(buf))
	}
	dst = prepare(dst, n)
	for i := 0; i < n; i++ {
		d := &dst[i]
		if bitGet(buf[4:], i) {
			*d = Datum{Null: true}
			continue
		}
		if err := decodeArrayElem(buf, hdr+i*es, elem, d, f); err != nil {
			return dst[:0], corruptf("array element %d: %v", i, err)
		}
	}
	return dst, nil
}

// varSpan validates an (offset<<32 | size) slot against buf and returns the span.
func varSpan(buf []byte, v uint64) ([]byte, error) {
	off, size := int64(int32(v>>32)), int64(int32(v))
	if off < 0 || size < 0 || off+size > int64(len(buf)) {
		return nil, corruptf("variable part [%d,+%d) outside %d bytes", off, size, len(buf))
	}
	return buf[off : off+size : off+size], nil
}

func decodeArrayElem(buf []byte, slot int, t *metadata.DataType, d *Datum, f rowFormat) error {
	return codecOf(t).readElem(buf, slot, t, d, f)
}

func boolOf(b byte) int {
	if b != 0 {
		return 1
	}
	return 0
}

func checkNanosDecoded(d *Datum) error {
	if d.Nanos < 0 || d.Nanos > maxNanoOfMilli {
		return corruptf("nanosecond of millisecond %d out of range", d.Nanos)
	}
	return nil
}

// decodeNested decodes an ARRAY, MAP or ROW value whose bytes are exactly buf into d,
// reusing d's nested slices.
func decodeNested(buf []byte, t *metadata.DataType, d *Datum, f rowFormat) error {
	elems, vals := d.resetNested()
	var err error
	switch t.Root {
	case metadata.Array:
		if t.Elem == nil {
			return corruptf("ARRAY type without element type")
		}
		d.Elems, err = decodeBinaryArray(buf, t.Elem, f, elems)
	case metadata.Map:
		if t.Elem == nil || t.Value == nil {
			return corruptf("MAP type without key or value type")
		}
		d.Elems, d.Vals, err = decodeBinaryMap(buf, t.Elem, t.Value, f, elems, vals)
	case metadata.Row:
		if f == formatIndexed {
			d.Elems, err = decodeIndexedRow(rowTypes(t), buf, elems)
		} else {
			d.Elems, err = decodeCompactedRow(rowTypes(t), buf, elems)
		}
	default:
		err = corruptf("type root %d is not nested", t.Root)
	}
	return err
}

func decodeBinaryMap(buf []byte, kt, vt *metadata.DataType, f rowFormat, keys, vals []Datum) ([]Datum, []Datum, error) {
	if len(buf) < 4 {
		return keys[:0], vals[:0], errTruncated("map header", 4, len(buf))
	}
	ks := int64(int32(getU32(buf, 0)))
	if ks < 0 || 4+ks > int64(len(buf)) {
		return keys[:0], vals[:0], corruptf("map key array size %d outside %d bytes", ks, len(buf))
	}
	var err error
	if keys, err = decodeBinaryArray(buf[4:4+ks], kt, f, keys); err != nil {
		return keys, vals[:0], err
	}
	if vals, err = decodeBinaryArray(buf[4+ks:], vt, f, vals); err != nil {
		return keys, vals, err
	}
	if len(keys) != len(vals) {
		return keys[:0], vals[:0], corruptf("map has %d keys and %d values", len(keys), len(vals))
	}
	return keys, vals, nil
}
