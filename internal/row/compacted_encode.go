package row

import "github.com/stromdb/strom/internal/metadata"

// CompactedRow layout (docs/encodings.md §5, Java CompactedRowWriter):
//
//	[null bitset: (n+7)/8 bytes, bit i set = field i NULL][field values back to back]
//
// A NULL field has no value bytes. Integers, dates, times, compact decimals and timestamp
// millis are VLQ varints; SMALLINT, FLOAT and DOUBLE are fixed little-endian; strings, bytes,
// non-compact decimals and nested ARRAY/MAP/ROW are a VLQ-32 length followed by the bytes.

// AppendCompactedRow appends the CompactedRow encoding of vals (one Datum per entry of types)
// to dst. NULL in a NOT NULL field, a value out of its type's range or a type/Datum mismatch
// yields an error wrapping ErrInvalidValue; dst is then returned unchanged in length.
func AppendCompactedRow(dst []byte, types []metadata.DataType, vals []Datum) ([]byte, error) {
	return appendCompactedRow(dst, topTypes(types), vals)
}

func appendCompactedRow(dst []byte, types typeList, vals []Datum) ([]byte, error) {
	n := types.len()
	if len(vals) != n {
		return dst, invalidf("compacted row has %d values for %d fields", len(vals), n)
	}
	start := len(dst)
	dst = appendZeros(dst, (n+7)/8)
	var err error
	for i := 0; i < n; i++ {
		t, d := types.at(i), &vals[i]
		if d.Null {
			if t.NotNull {
				return dst[:start], invalidf("field %d is NOT NULL but the value is NULL", i)
			}
			bitSet(dst[start:], i)
			continue
		}
		if dst, err = appendCompactedValue(dst, t, d); err != nil {
			return dst[:start], invalidField(i, err)
		}
	}
	return dst, nil
}

func invalidField(i int, err error) error {
	return invalidf("field %d: %v", i, err)
}

// appendCompactedValue appends the CompactedRow encoding of a non-NULL value.
func appendCompactedValue(dst []byte, t *metadata.DataType, d *Datum) ([]byte, error) {
	return codecOf(t).appendCompacted(dst, t, d)
}

// appendNested appends the binary form of an ARRAY, MAP or ROW value: a BinaryArray, a
// BinaryMap, or a nested row in the parent's format.
func appendNested(dst []byte, t *metadata.DataType, d *Datum, f rowFormat) ([]byte, error) {
	switch t.Root {
	case metadata.Array:
		if t.Elem == nil {
			return dst, invalidf("ARRAY type without element type")
		}
		return appendBinaryArray(dst, t.Elem, d.Elems, f)
	case metadata.Map:
		if t.Elem == nil || t.Value == nil {
			return dst, invalidf("MAP type without key or value type")
		}
		return appendBinaryMap(dst, t.Elem, t.Value, d, f)
	case metadata.Row:
		if f == formatIndexed {
			return appendIndexedRow(dst, rowTypes(t), d.Elems)
		}
		return appendCompactedRow(dst, rowTypes(t), d.Elems)
	}
	return dst, invalidf("type root %d is not nested", t.Root)
}

// appendLenPrefixed appends a VLQ-32 length and b.
func appendLenPrefixed(dst, b []byte) []byte {
	dst = appendVarint32(dst, int32(len(b)))
	return append(dst, b...)
}

// prefixLength turns dst[start:] into VLQ-32(len) + dst[start:], shifting the payload right in
// place so that nested values are written once without a temporary buffer.
func prefixLength(dst []byte, start int) []byte {
	n := len(dst) - start
	var tmp [5]byte
	lb := appendVarint32(tmp[:0], int32(n))
	dst = append(dst, lb...) // grow by len(lb)
	copy(dst[start+len(lb):], dst[start:start+n])
	copy(dst[start:], lb)
	return dst
}
