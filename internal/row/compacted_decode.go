package row

import (
	"math"

	"github.com/stromdb/strom/internal/metadata"
)

// DecodeCompactedRow decodes the CompactedRow buf (exactly one row's bytes) described by types
// into dst, reusing dst's backing array and the nested slices of its elements. Byte-valued
// Datums alias buf. Trailing bytes after the last field are an error. As in Java, the null bit
// of a NOT NULL field is not consulted: its value is always read.
func DecodeCompactedRow(types []metadata.DataType, buf []byte, dst []Datum) ([]Datum, error) {
	return decodeCompactedRow(topTypes(types), buf, dst)
}

func decodeCompactedRow(types typeList, buf []byte, dst []Datum) ([]Datum, error) {
	n := types.len()
	hdr := (n + 7) / 8
	if len(buf) < hdr {
		return dst[:0], errTruncated("compacted row null bitset", hdr, len(buf))
	}
	dst = prepare(dst, n)
	pos := hdr
	var err error
	for i := 0; i < n; i++ {
		t, d := types.at(i), &dst[i]
		if !t.NotNull && bitGet(buf, i) {
			*d = Datum{Null: true}
			continue
		}
		if pos, err = readCompactedValue(buf, pos, t, d); err != nil {
			return dst[:0], corruptf("compacted row field %d: %v", i, err)
		}
	}
	if pos != len(buf) {
		return dst[:0], corruptf("compacted row has %d trailing bytes", len(buf)-pos)
	}
	return dst, nil
}

// readLenPrefixed reads a VLQ-32 length and that many bytes at buf[pos:].
func readLenPrefixed(buf []byte, pos int) ([]byte, int, error) {
	l, p, ok := readVarint32(buf, pos)
	if !ok {
		return nil, pos, errTruncated("length varint", 1, len(buf)-pos)
	}
	if l < 0 || int(l) > len(buf)-p {
		return nil, pos, corruptf("length %d exceeds the %d bytes left", l, len(buf)-p)
	}
	end := p + int(l)
	return buf[p:end:end], end, nil
}

// readCompactedValue decodes one non-NULL CompactedRow value of type t at buf[pos:] into d and
// returns the position after it.
func readCompactedValue(buf []byte, pos int, t *metadata.DataType, d *Datum) (int, error) {
	switch t.Root {
	case metadata.Boolean, metadata.TinyInt:
		if pos >= len(buf) {
			return pos, errTruncated("1-byte value", 1, 0)
		}
		if t.Root == metadata.Boolean {
			*d = Datum{I: int64(boolOf(buf[pos]))}
		} else {
			*d = Datum{I: int64(int8(buf[pos]))}
		}
		return pos + 1, nil
	case metadata.SmallInt:
		if len(buf)-pos < 2 {
			return pos, errTruncated("SMALLINT", 2, len(buf)-pos)
		}
		*d = Datum{I: int64(int16(getU16(buf, pos)))}
		return pos + 2, nil
	case metadata.Int, metadata.Date, metadata.Time:
		v, p, ok := readVarint32(buf, pos)
		if !ok {
			return pos, errTruncated("int varint", 1, len(buf)-pos)
		}
		*d = Datum{I: int64(v)}
		return p, nil
	case metadata.BigInt:
		v, p, ok := readVarint64(buf, pos)
		if !ok {
			return pos, corruptf("bad long varint")
		}
		*d = Datum{I: v}
		return p, nil
	case metadata.Float:
		if len(buf)-pos < 4 {
			return pos, errTruncated("FLOAT", 4, len(buf)-pos)
		}
		*d = Datum{F: float64(math.Float32frombits(getU32(buf, pos)))}
		return pos + 4, nil
	case metadata.Double:
		if len(buf)-pos < 8 {
			return pos, errTruncated("DOUBLE", 8, len(buf)-pos)
		}
		*d = Datum{F: math.Float64frombits(getU64(buf, pos))}
		return pos + 8, nil
	case metadata.Char, metadata.String, metadata.Binary, metadata.Bytes:
		b, p, err := readLenPrefixed(buf, pos)
		if err != nil {
			return pos, err
		}
		*d = Datum{B: b}
		return p, nil
	case metadata.Decimal:
		if isCompactDecimal(t) {
			v, p, ok := readVarint64(buf, pos)
			if !ok {
				return pos, corruptf("bad decimal varint")
			}
			*d = Datum{I: v}
			return p, nil
		}
		b, p, err := readLenPrefixed(buf, pos)
		if err != nil {
			return pos, err
		}
		if len(b) == 0 {
			return pos, corruptf("empty decimal")
		}
		*d = Datum{B: minimalDecimalBytes(b)}
		return p, nil
	case metadata.Timestamp, metadata.TimestampLTZ:
		ms, p, ok := readVarint64(buf, pos)
		if !ok {
			return pos, corruptf("bad timestamp varint")
		}
		if isCompactTimestamp(t) {
			*d = Datum{I: ms}
			return p, nil
		}
		nanos, p2, ok := readVarint32(buf, p)
		if !ok {
			return pos, errTruncated("timestamp nanos", 1, len(buf)-p)
		}
		*d = Datum{I: ms, Nanos: nanos}
		return p2, checkNanosDecoded(d)
	case metadata.Array, metadata.Map, metadata.Row:
		b, p, err := readLenPrefixed(buf, pos)
		if err != nil {
			return pos, err
		}
		return p, decodeNested(b, t, d, formatCompacted)
	}
	return pos, corruptf("unsupported type root %d", t.Root)
}

// skipCompactedValue returns the position after the non-NULL value of type t at buf[pos:]
// without decoding it. Nested values are skipped by their length prefix and not validated.
func skipCompactedValue(buf []byte, pos int, t *metadata.DataType) (int, error) {
	switch t.Root {
	case metadata.Boolean, metadata.TinyInt:
		if pos >= len(buf) {
			return pos, errTruncated("1-byte value", 1, 0)
		}
		return pos + 1, nil
	case metadata.SmallInt, metadata.Float, metadata.Double:
		w := 2
		if t.Root == metadata.Float {
			w = 4
		} else if t.Root == metadata.Double {
			w = 8
		}
		if len(buf)-pos < w {
			return pos, errTruncated("fixed-width value", w, len(buf)-pos)
		}
		return pos + w, nil
	case metadata.Int, metadata.Date, metadata.Time:
		_, p, ok := readVarint32(buf, pos)
		if !ok {
			return pos, errTruncated("int varint", 1, len(buf)-pos)
		}
		return p, nil
	case metadata.BigInt:
		_, p, ok := readVarint64(buf, pos)
		if !ok {
			return pos, corruptf("bad long varint")
		}
		return p, nil
	case metadata.Decimal:
		if isCompactDecimal(t) {
			_, p, ok := readVarint64(buf, pos)
			if !ok {
				return pos, corruptf("bad decimal varint")
			}
			return p, nil
		}
		_, p, err := readLenPrefixed(buf, pos)
		return p, err
	case metadata.Timestamp, metadata.TimestampLTZ:
		_, p, ok := readVarint64(buf, pos)
		if !ok {
			return pos, corruptf("bad timestamp varint")
		}
		if isCompactTimestamp(t) {
			return p, nil
		}
		_, p2, ok := readVarint32(buf, p)
		if !ok {
			return pos, errTruncated("timestamp nanos", 1, len(buf)-p)
		}
		return p2, nil
	case metadata.Char, metadata.String, metadata.Binary, metadata.Bytes,
		metadata.Array, metadata.Map, metadata.Row:
		_, p, err := readLenPrefixed(buf, pos)
		return p, err
	}
	return pos, corruptf("unsupported type root %d", t.Root)
}
