package row

import (
	"math"

	"github.com/stromdb/strom/internal/metadata"
)

// IndexedRow layout (docs/encodings.md §6, Java IndexedRowWriter/IndexedRow):
//
//	[null bitset (n+7)/8][int32 LE length × (variable-length fields of the schema)][values]
//
// Variable-length fields are STRING, BYTES, ARRAY, MAP, ROW and non-compact DECIMAL. Their
// length slots are filled in field order for non-NULL values only; slots of NULL values stay
// unused (zero) at the end of the list. NULL fields have no value bytes. Fixed-length values:
// BOOLEAN/TINYINT 1, SMALLINT 2, INT/DATE/TIME/FLOAT 4, BIGINT/DOUBLE/compact DECIMAL 8,
// TIMESTAMP 8 (+4 nanos when precision > 3), CHAR(n)/BINARY(n) exactly n zero-padded bytes.

// indexedWidth is the IndexedRow width of t (coltypes.go): a byte count, indexedVarLen or
// indexedInvalid.
func indexedWidth(t *metadata.DataType) int {
	return codecOf(t).indexedWidthOf(t)
}

func indexedHeaderLen(types typeList) (nullBytes, hdr int) {
	n := types.len()
	nullBytes = (n + 7) / 8
	hdr = nullBytes
	for i := 0; i < n; i++ {
		if indexedWidth(types.at(i)) == indexedVarLen {
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
		c := codecOf(t)
		before := len(dst)
		if dst, err = c.appendIndexed(dst, t, d); err != nil {
			return dst[:start], invalidField(i, err)
		}
		if c.indexedWidthOf(t) == indexedVarLen {
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
		c := codecOf(t)
		size := c.indexedWidthOf(t)
		switch size {
		case indexedVarLen:
			// slot < hdr holds: each var-length field takes at most one slot.
			s := int32(getU32(buf, slot))
			slot += 4
			if s < 0 {
				return dst[:0], corruptf("indexed row field %d: negative length %d", i, s)
			}
			size = int(s)
		case indexedInvalid:
			return dst[:0], corruptf("indexed row field %d: unsupported type %v", i, t)
		}
		if size > len(buf)-pos {
			return dst[:0], corruptf("indexed row field %d: %d bytes, %d left", i, size, len(buf)-pos)
		}
		v := buf[pos : pos+size : pos+size]
		pos += size
		if err := c.readIndexed(v, t, d); err != nil {
			return dst[:0], corruptf("indexed row field %d: %v", i, err)
		}
	}
	if pos != len(buf) {
		return dst[:0], corruptf("indexed row has %d trailing bytes", len(buf)-pos)
	}
	return dst, nil
}
