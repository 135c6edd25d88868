package row

import "github.com/stromdb/strom/internal/metadata"

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
	return codecOf(t).readCompacted(buf, pos, t, d)
}

// skipCompactedValue returns the position after the non-NULL value of type t at buf[pos:]
// without decoding it. Nested values are skipped by their length prefix and not validated.
func skipCompactedValue(buf []byte, pos int, t *metadata.DataType) (int, error) {
	return codecOf(t).skipCompacted(buf, pos, t)
}
