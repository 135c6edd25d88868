package row

// Variable-length integers as CompactedRow writes them (docs/encodings.md §2): base-128, low 7 bits
// first, high bit = continuation, applied to the two's-complement bit pattern (no zigzag). A
// 32-bit value takes 1..5 bytes, a 64-bit value 1..10 bytes; negative values always take the
// maximum.

// appendVarint32 appends v as a VLQ of its 32-bit pattern.
func appendVarint32(dst []byte, v int32) []byte {
	u := uint32(v)
	for u >= 0x80 {
		dst = append(dst, byte(u)|0x80)
		u >>= 7
	}
	return append(dst, byte(u))
}

// appendVarint64 appends v as a VLQ of its 64-bit pattern.
func appendVarint64(dst []byte, v int64) []byte {
	u := uint64(v)
	for u >= 0x80 {
		dst = append(dst, byte(u)|0x80)
		u >>= 7
	}
	return append(dst, byte(u))
}

// varint32Len is the encoded size of appendVarint32(v).
func varint32Len(v int32) int {
	u, n := uint32(v), 1
	for u >= 0x80 {
		u >>= 7
		n++
	}
	return n
}

// readVarint32 decodes a VLQ-32 at buf[pos:]. Like Java's CompactedRowReader.readInt it reads at
// most 5 bytes and keeps the low 32 bits; the 5th byte ends the value whatever its high bit.
// It returns the value and the position after it, or ok=false when the buffer ends first.
func readVarint32(buf []byte, pos int) (v int32, next int, ok bool) {
	var u uint32
	for shift := uint(0); shift < 35; shift += 7 {
		if pos >= len(buf) {
			return 0, pos, false
		}
		b := buf[pos]
		pos++
		u |= uint32(b&0x7f) << shift
		if b < 0x80 {
			return int32(u), pos, true
		}
	}
	return int32(u), pos, true
}

// readVarint64 decodes a VLQ-64 at buf[pos:]. At most 10 bytes are read; a 10th byte with the
// continuation bit set is an error, as in Java's readLong.
func readVarint64(buf []byte, pos int) (v int64, next int, ok bool) {
	var u uint64
	for shift := uint(0); shift < 70; shift += 7 {
		if pos >= len(buf) {
			return 0, pos, false
		}
		b := buf[pos]
		pos++
		u |= uint64(b&0x7f) << shift
		if b < 0x80 {
			return int64(u), pos, true
		}
	}
	return 0, pos, false
}
