package row

import (
	"encoding/binary"
	"math"

	"github.com/stromdb/strom/internal/metadata"
)

// The entries of the roots whose codecs take nothing from the type but, for CHAR and
// BINARY, a length. internal/typetable/table.go names which entry serves which root; each is
// a package variable built from small functions, so that a value's codec is one indirect
// call, as for every other entry.

var booleanCodec = typeCodec{
	appendCompacted: appendBool,
	readCompacted:   readByteCompacted(boolDatum),
	skipCompacted:   skipFixed(1),
	indexedWidth:    1,
	appendIndexed:   appendBool,
	readIndexed:     readByteIndexed(boolDatum),
	elemSize:        1,
	appendElem: func(dst []byte, _, slot int, _ *metadata.DataType, d *Datum, _ rowFormat) ([]byte, error) {
		dst[slot] = boolByte(d)
		return dst, nil
	},
	readElem:  readByteElem(boolDatum),
	paimonKey: paimonByte,
}

func appendBool(dst []byte, _ *metadata.DataType, d *Datum) ([]byte, error) {
	return append(dst, boolByte(d)), nil
}

func boolDatum(b byte) Datum { return Datum{I: int64(boolOf(b))} }

var tinyIntCodec = typeCodec{
	appendCompacted: appendTinyInt,
	readCompacted:   readByteCompacted(tinyIntDatum),
	skipCompacted:   skipFixed(1),
	indexedWidth:    1,
	appendIndexed:   appendTinyInt,
	readIndexed:     readByteIndexed(tinyIntDatum),
	elemSize:        1,
	appendElem: func(dst []byte, _, slot int, _ *metadata.DataType, d *Datum, _ rowFormat) ([]byte, error) {
		b, err := checkInt8(d)
		if err == nil {
			dst[slot] = b
		}
		return dst, err
	},
	readElem:  readByteElem(tinyIntDatum),
	paimonKey: paimonByte,
}

func appendTinyInt(dst []byte, _ *metadata.DataType, d *Datum) ([]byte, error) {
	b, err := checkInt8(d)
	return append(dst, b), err
}

func tinyIntDatum(b byte) Datum { return Datum{I: int64(int8(b))} }

// readByteCompacted, readByteIndexed and readByteElem read a one-byte value with decode.
func readByteCompacted(decode func(byte) Datum) func([]byte, int, *metadata.DataType, *Datum) (int, error) {
	return func(buf []byte, pos int, _ *metadata.DataType, d *Datum) (int, error) {
		if pos >= len(buf) {
			return pos, errTruncated("1-byte value", 1, 0)
		}
		*d = decode(buf[pos])
		return pos + 1, nil
	}
}

func readByteIndexed(decode func(byte) Datum) func([]byte, *metadata.DataType, *Datum) error {
	return func(v []byte, _ *metadata.DataType, d *Datum) error { *d = decode(v[0]); return nil }
}

func readByteElem(decode func(byte) Datum) func([]byte, int, *metadata.DataType, *Datum, rowFormat) error {
	return func(buf []byte, slot int, _ *metadata.DataType, d *Datum, _ rowFormat) error {
		*d = decode(buf[slot])
		return nil
	}
}

var smallIntCodec = typeCodec{
	appendCompacted: appendSmallInt,
	readCompacted: func(buf []byte, pos int, _ *metadata.DataType, d *Datum) (int, error) {
		if len(buf)-pos < 2 {
			return pos, errTruncated("SMALLINT", 2, len(buf)-pos)
		}
		*d = Datum{I: int64(int16(getU16(buf, pos)))}
		return pos + 2, nil
	},
	skipCompacted: skipFixed(2),
	indexedWidth:  2,
	appendIndexed: appendSmallInt,
	readIndexed: func(v []byte, _ *metadata.DataType, d *Datum) error {
		*d = Datum{I: int64(int16(getU16(v, 0)))}
		return nil
	},
	elemSize: 2,
	appendElem: func(dst []byte, _, slot int, _ *metadata.DataType, d *Datum, _ rowFormat) ([]byte, error) {
		v, err := checkInt16(d)
		if err == nil {
			putU16(dst, slot, uint16(v))
		}
		return dst, err
	},
	readElem: func(buf []byte, slot int, _ *metadata.DataType, d *Datum, _ rowFormat) error {
		*d = Datum{I: int64(int16(getU16(buf, slot)))}
		return nil
	},
	paimonKey: paimonUint16,
}

func appendSmallInt(dst []byte, _ *metadata.DataType, d *Datum) ([]byte, error) {
	v, err := checkInt16(d)
	return appendU16(dst, uint16(v)), err
}

// int32Codec serves INT and DATE (days since epoch), stored alike; timeOfDayCodec is the
// same for TIME (milliseconds of day) but for its Iceberg key, which is in microseconds.
var int32Codec = typeCodec{
	appendCompacted: func(dst []byte, t *metadata.DataType, d *Datum) ([]byte, error) {
		v, err := checkInt32(t, d)
		return appendVarint32(dst, v), err
	},
	readCompacted: func(buf []byte, pos int, _ *metadata.DataType, d *Datum) (int, error) {
		v, p, ok := readVarint32(buf, pos)
		if !ok {
			return pos, errTruncated("int varint", 1, len(buf)-pos)
		}
		*d = Datum{I: int64(v)}
		return p, nil
	},
	skipCompacted: skipVarint32,
	indexedWidth:  4,
	appendIndexed: func(dst []byte, t *metadata.DataType, d *Datum) ([]byte, error) {
		v, err := checkInt32(t, d)
		return appendU32(dst, uint32(v)), err
	},
	readIndexed: func(v []byte, _ *metadata.DataType, d *Datum) error {
		*d = Datum{I: int64(int32(getU32(v, 0)))}
		return nil
	},
	elemSize: 4,
	appendElem: func(dst []byte, _, slot int, t *metadata.DataType, d *Datum, _ rowFormat) ([]byte, error) {
		v, err := checkInt32(t, d)
		if err == nil {
			putU32(dst, slot, uint32(v))
		}
		return dst, err
	},
	readElem: func(buf []byte, slot int, _ *metadata.DataType, d *Datum, _ rowFormat) error {
		*d = Datum{I: int64(int32(getU32(buf, slot)))}
		return nil
	},
	icebergKey: icebergInt64(func(d *Datum) int64 { return d.I }),
	paimonKey:  paimonUint32,
}

var timeOfDayCodec = func() typeCodec {
	c := int32Codec
	c.icebergKey = icebergInt64(func(d *Datum) int64 { return d.I * 1000 }) // microseconds
	return c
}()

var bigIntCodec = typeCodec{
	appendCompacted: func(dst []byte, _ *metadata.DataType, d *Datum) ([]byte, error) { return appendVarint64(dst, d.I), nil },
	readCompacted:   readVarint64Datum("bad long varint"),
	skipCompacted:   skipVarint64("bad long varint"),
	indexedWidth:    8,
	appendIndexed:   appendU64Datum,
	readIndexed:     readU64Datum,
	elemSize:        8,
	appendElem:      putU64Elem,
	readElem:        getU64Elem,
	icebergKey:      icebergInt64(func(d *Datum) int64 { return d.I }),
	paimonKey:       paimonUint64,
}

var floatCodec = typeCodec{
	appendCompacted: appendFloat,
	readCompacted: func(buf []byte, pos int, _ *metadata.DataType, d *Datum) (int, error) {
		if len(buf)-pos < 4 {
			return pos, errTruncated("FLOAT", 4, len(buf)-pos)
		}
		*d = Datum{F: float64(math.Float32frombits(getU32(buf, pos)))}
		return pos + 4, nil
	},
	skipCompacted: skipFixed(4),
	indexedWidth:  4,
	appendIndexed: appendFloat,
	readIndexed: func(v []byte, _ *metadata.DataType, d *Datum) error {
		*d = Datum{F: float64(math.Float32frombits(getU32(v, 0)))}
		return nil
	},
	elemSize: 4,
	appendElem: func(dst []byte, _, slot int, _ *metadata.DataType, d *Datum, _ rowFormat) ([]byte, error) {
		bits := math.Float32bits(float32(d.F))
		if d.F != d.F {
			bits = canonicalNaN32 // Java's BinaryArrayWriter canonicalises NaN
		}
		putU32(dst, slot, bits)
		return dst, nil
	},
	readElem: func(buf []byte, slot int, _ *metadata.DataType, d *Datum, _ rowFormat) error {
		*d = Datum{F: float64(math.Float32frombits(getU32(buf, slot)))}
		return nil
	},
	icebergKey: func(dst []byte, _ *metadata.DataType, d *Datum) ([]byte, error) {
		return binary.LittleEndian.AppendUint32(dst, math.Float32bits(float32(d.F))), nil
	},
	paimonKey: paimonFloat,
}

func appendFloat(dst []byte, _ *metadata.DataType, d *Datum) ([]byte, error) {
	return appendU32(dst, math.Float32bits(float32(d.F))), nil
}

var doubleCodec = typeCodec{
	appendCompacted: appendDouble,
	readCompacted: func(buf []byte, pos int, _ *metadata.DataType, d *Datum) (int, error) {
		if len(buf)-pos < 8 {
			return pos, errTruncated("DOUBLE", 8, len(buf)-pos)
		}
		*d = Datum{F: math.Float64frombits(getU64(buf, pos))}
		return pos + 8, nil
	},
	skipCompacted: skipFixed(8),
	indexedWidth:  8,
	appendIndexed: appendDouble,
	readIndexed: func(v []byte, _ *metadata.DataType, d *Datum) error {
		*d = Datum{F: math.Float64frombits(getU64(v, 0))}
		return nil
	},
	elemSize: 8,
	appendElem: func(dst []byte, _, slot int, _ *metadata.DataType, d *Datum, _ rowFormat) ([]byte, error) {
		bits := math.Float64bits(d.F)
		if d.F != d.F {
			bits = canonicalNaN64
		}
		putU64(dst, slot, bits)
		return dst, nil
	},
	readElem: func(buf []byte, slot int, _ *metadata.DataType, d *Datum, _ rowFormat) error {
		*d = Datum{F: math.Float64frombits(getU64(buf, slot))}
		return nil
	},
	icebergKey: doubleAppend64LE,
	paimonKey:  paimonDouble,
}

func appendDouble(dst []byte, _ *metadata.DataType, d *Datum) ([]byte, error) {
	return appendU64(dst, math.Float64bits(d.F)), nil
}

// varLenCodec serves STRING and BYTES: length-prefixed in a CompactedRow, variable-length in
// an IndexedRow. fixedLenCodec serves CHAR(n) and BINARY(n), which differ only in an
// IndexedRow, where they take exactly n zero-padded bytes.
var varLenCodec = typeCodec{
	appendCompacted: func(dst []byte, _ *metadata.DataType, d *Datum) ([]byte, error) {
		return appendLenPrefixed(dst, d.B), nil // CHAR/BINARY too: unpadded
	},
	readCompacted: func(buf []byte, pos int, _ *metadata.DataType, d *Datum) (int, error) {
		b, p, err := readLenPrefixed(buf, pos)
		if err != nil {
			return pos, err
		}
		*d = Datum{B: b}
		return p, nil
	},
	skipCompacted: skipLenPrefixed,
	indexedWidth:  indexedVarLen,
	appendIndexed: func(dst []byte, _ *metadata.DataType, d *Datum) ([]byte, error) { return append(dst, d.B...), nil },
	readIndexed:   func(v []byte, _ *metadata.DataType, d *Datum) error { *d = Datum{B: v}; return nil },
	elemSize:      8,
	appendElem: func(dst []byte, start, slot int, _ *metadata.DataType, d *Datum, _ rowFormat) ([]byte, error) {
		if len(d.B) <= maxInlineLen {
			copy(dst[slot:], d.B)
			dst[slot+7] = 0x80 | byte(len(d.B))
			return dst, nil
		}
		off := len(dst) - start
		dst = append(dst, d.B...)
		dst = appendZeros(dst, roundUp8(len(d.B))-len(d.B))
		putU64(dst, slot, uint64(off)<<32|uint64(len(d.B)))
		return dst, nil
	},
	readElem: func(buf []byte, slot int, _ *metadata.DataType, d *Datum, _ rowFormat) error {
		v := getU64(buf, slot)
		if v&inlineMark != 0 {
			l := int(v>>56) & 0x7f
			if l > maxInlineLen {
				return corruptf("inline length %d > 7", l)
			}
			*d = Datum{B: buf[slot : slot+l : slot+l]}
			return nil
		}
		b, err := varSpan(buf, v)
		*d = Datum{B: b}
		return err
	},
	icebergKey: func(dst []byte, _ *metadata.DataType, d *Datum) ([]byte, error) { return append(dst, d.B...), nil },
	paimonKey:  paimonBytes,
}

var fixedLenCodec = func() typeCodec {
	c := varLenCodec
	c.widthOf = func(t *metadata.DataType) int {
		if t.Length < 0 {
			return indexedInvalid
		}
		return t.Length
	}
	c.appendIndexed = func(dst []byte, t *metadata.DataType, d *Datum) ([]byte, error) {
		if len(d.B) > t.Length {
			return dst, invalidf("%d bytes do not fit CHAR/BINARY(%d)", len(d.B), t.Length)
		}
		dst = append(dst, d.B...)
		return appendZeros(dst, t.Length-len(d.B)), nil
	}
	c.readIndexed = func(v []byte, _ *metadata.DataType, d *Datum) error {
		l := len(v)
		for l > 0 && v[l-1] == 0 {
			l-- // the padding is stripped, as Java does (lossy for data ending in 0x00)
		}
		*d = Datum{B: v[:l:l]}
		return nil
	}
	return c
}()
