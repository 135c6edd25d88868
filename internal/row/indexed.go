package row

import (
	"math"

	"github.com/stromdb/strom/internal/metadata"
)

// IndexedRow layout (docs/binary-formats.md §6, Java IndexedRowWriter/IndexedRow):
//
//	[null bitset (n+7)/8][int32 LE length × (variable-length fields of the schema)][values]
//
// Variable-length fields are STRING, BYTES, ARRAY, MAP, ROW and non-compact DECIMAL. Their
// length slots are filled in field order for non-NULL values only; slots of NULL values stay
// unused (zero) at the end of the list. NULL fields have no value bytes. Fixed-length values:
// BOOLEAN/TINYINT 1, SMALLINT 2, INT/DATE/TIME/FLOAT 4, BIGINT/DOUBLE/compact DECIMAL 8,
// TIMESTAMP 8 (+4 nanos when precision > 3), CHAR(n)/BINARY(n) exactly n zero-padded bytes.

// isIndexedVarLen reports whether t takes a slot in the variable-length list.
func isIndexedVarLen(t *metadata.DataType) bool {
	switch t.Root {
	case metadata.String, metadata.Bytes, metadata.Array, metadata.Map, metadata.Row:
		return true
	case metadata.Decimal:
		return !isCompactDecimal(t)
	}
	return false
}

// indexedFixedLen is the value size of a fixed-length field type.
func indexedFixedLen(t *metadata.DataType) (int, bool) {
	switch t.Root {
	case metadata.Boolean, metadata.TinyInt:
		return 1, true
	case metadata.SmallInt:
		return 2, true
	case metadata.Int, metadata.Float, metadata.Date, metadata.Time:
		return 4, true
	case metadata.BigInt, metadata.Double, metadata.Decimal:
		return 8, true
	case metadata.Timestamp, metadata.TimestampLTZ:
		if isCompactTimestamp(t) {
			return 8, true
		}
		return 12, true
	case metadata.Char, metadata.Binary:
		if t.Length < 0 {
			return 0, false
		}
		return t.Length, true
	}
	return 0, false
}

func indexedHeaderLen(types typeList) (nullBytes, hdr int) {
	n := types.len()
	nullBytes = (n + 7) / 8
	hdr = nullBytes
	for i := 0; i < n; i++ {
		if isIndexedVarLen(types.at(i)) {
			hdr += 4
		}
	}
	return nullBytes, hdr
}

// AppendIndexedRow appends the IndexedRow encoding of vals to dst. Errors wrap ErrInvalidValue
// (NULL in a NOT NULL field, CHAR/BINARY values longer than the declared length, ...).
func AppendIndexedRow(dst []byte, types []metadata.DataType, vals []Datum) ([]byte, error) {
	return appendIndexedRow(dst, topTypes(types), vals)
}

func appendIndexedRow(dst []byte, types typeList, vals []Datum) ([]byte, error) {
	n := types.len()
	if len(vals) != n {
		return dst, invalidf("indexed row has %d values for %d fields", len(vals), n)
	}
	start := len(dst)
	nullBytes, hdr := indexedHeaderLen(types)
	dst = appendZeros(dst, hdr)
	slot := start + nullBytes // next free length slot
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
		before := len(dst)
		if dst, err = appendIndexedValue(dst, t, d); err != nil {
			return dst[:start], invalidField(i, err)
		}
		if isIndexedVarLen(t) {
			size := len(dst) - before
			if size > math.MaxInt32 {
				return dst[:start], invalidf("field %d too large", i)
			}
			putU32(dst, slot, uint32(size))
			slot += 4
		}
	}
	return dst, nil
}

func appendIndexedValue(dst []byte, t *metadata.DataType, d *Datum) ([]byte, error) {
	switch t.Root {
	case metadata.Boolean:
		return append(dst, boolByte(d)), nil
	case metadata.TinyInt:
		b, err := checkInt8(d)
		return append(dst, b), err
	case metadata.SmallInt:
		v, err := checkInt16(d)
		return appendU16(dst, uint16(v)), err
	case metadata.Int, metadata.Date, metadata.Time:
		v, err := checkInt32(t, d)
		return appendU32(dst, uint32(v)), err
	case metadata.BigInt:
		return appendU64(dst, uint64(d.I)), nil
	case metadata.Float:
		return appendU32(dst, math.Float32bits(float32(d.F))), nil
	case metadata.Double:
		return appendU64(dst, math.Float64bits(d.F)), nil
	case metadata.Char, metadata.Binary:
		if len(d.B) > t.Length {
			return dst, invalidf("%d bytes do not fit CHAR/BINARY(%d)", len(d.B), t.Length)
		}
		dst = append(dst, d.B...)
		return appendZeros(dst, t.Length-len(d.B)), nil
	case metadata.String, metadata.Bytes:
		return append(dst, d.B...), nil
	case metadata.Decimal:
		if isCompactDecimal(t) {
			return appendU64(dst, uint64(d.I)), nil
		}
		return append(dst, minimalDecimalBytes(d.B)...), nil
	case metadata.Timestamp, metadata.TimestampLTZ:
		dst = appendU64(dst, uint64(d.I))
		if isCompactTimestamp(t) {
			return dst, nil
		}
		if err := checkNanos(d); err != nil {
			return dst, err
		}
		return appendU32(dst, uint32(d.Nanos)), nil
	case metadata.Array, metadata.Map, metadata.Row:
		return appendNested(dst, t, d, formatIndexed)
	}
	return dst, invalidf("unsupported type root %d", t.Root)
}

// DecodeIndexedRow decodes the IndexedRow buf (exactly one row's bytes) described by types into
// dst, reusing dst's backing array. Byte-valued Datums alias buf, except that CHAR/BINARY
// values have their zero padding stripped (as Java does; lossy for data ending in 0x00).
// Trailing bytes after the last value are an error.
func DecodeIndexedRow(types []metadata.DataType, buf []byte, dst []Datum) ([]Datum, error) {
	return decodeIndexedRow(topTypes(types), buf, dst)
}

func decodeIndexedRow(types typeList, buf []byte, dst []Datum) ([]Datum, error) {
	n := types.len()
	nullBytes, hdr := indexedHeaderLen(types)
	if len(buf) < hdr {
		return dst[:0], errTruncated("indexed row header", hdr, len(buf))
	}
	dst = prepare(dst, n)
	slot, pos := nullBytes, hdr
	for i := 0; i < n; i++ {
		t, d := types.at(i), &dst[i]
		if bitGet(buf, i) {
			*d = Datum{Null: true}
			continue
		}
		var size int
		if isIndexedVarLen(t) {
			// slot < hdr holds: each var-length field takes at most one slot.
			s := int32(getU32(buf, slot))
			slot += 4
			if s < 0 {
				return dst[:0], corruptf("indexed row field %d: negative length %d", i, s)
			}
			size = int(s)
		} else {
			var ok bool
			if size, ok = indexedFixedLen(t); !ok {
				return dst[:0], corruptf("indexed row field %d: unsupported type root %d", i, t.Root)
			}
		}
		if size > len(buf)-pos {
			return dst[:0], corruptf("indexed row field %d: %d bytes, %d left", i, size, len(buf)-pos)
		}
		v := buf[pos : pos+size : pos+size]
		pos += size
		if err := readIndexedValue(v, t, d); err != nil {
			return dst[:0], corruptf("indexed row field %d: %v", i, err)
		}
	}
	if pos != len(buf) {
		return dst[:0], corruptf("indexed row has %d trailing bytes", len(buf)-pos)
	}
	return dst, nil
}

// readIndexedValue decodes the value bytes v (already sized for t) into d.
func readIndexedValue(v []byte, t *metadata.DataType, d *Datum) error {
	switch t.Root {
	case metadata.Boolean:
		*d = Datum{I: int64(boolOf(v[0]))}
	case metadata.TinyInt:
		*d = Datum{I: int64(int8(v[0]))}
	case metadata.SmallInt:
		*d = Datum{I: int64(int16(getU16(v, 0)))}
	case metadata.Int, metadata.Date, metadata.Time:
		*d = Datum{I: int64(int32(getU32(v, 0)))}
	case metadata.BigInt:
		*d = Datum{I: int64(getU64(v, 0))}
	case metadata.Float:
		*d = Datum{F: float64(math.Float32frombits(getU32(v, 0)))}
	case metadata.Double:
		*d = Datum{F: math.Float64frombits(getU64(v, 0))}
	case metadata.Char, metadata.Binary:
		l := len(v)
		for l > 0 && v[l-1] == 0 {
			l--
		}
		*d = Datum{B: v[:l:l]}
	case metadata.String, metadata.Bytes:
		*d = Datum{B: v}
	case metadata.Decimal:
		if isCompactDecimal(t) {
			*d = Datum{I: int64(getU64(v, 0))}
			return nil
		}
		if len(v) == 0 {
			return corruptf("empty decimal")
		}
		*d = Datum{B: minimalDecimalBytes(v)}
	case metadata.Timestamp, metadata.TimestampLTZ:
		*d = Datum{I: int64(getU64(v, 0))}
		if !isCompactTimestamp(t) {
			d.Nanos = int32(getU32(v, 8))
			return checkNanosDecoded(d)
		}
	case metadata.Array, metadata.Map, metadata.Row:
		return decodeNested(v, t, d, formatIndexed)
	default:
		return corruptf("unsupported type root %d", t.Root)
	}
	return nil
}
