package row

import (
	"encoding/binary"
	"math"

	"github.com/stromdb/strom/internal/metadata"
)

// typeCodec is everything the row formats know about one Fluss type root: how a non-NULL value
// is written and read in a CompactedRow (and a compacted key, which uses the same value
// encodings), in an IndexedRow, as a BinaryArray element, and as an Iceberg bucket key.
// typeCodecs holds one per root. Which entry serves which root is listed, with the Arrow and
// Go client entries of the same root, in internal/typetable/table.go, from which
// typecodecs_gen.go is generated. The layouts themselves are described where
// they are driven: compacted_encode.go, indexed.go, array.go, iceberg_key.go.
type typeCodec struct {
	// appendCompacted appends the CompactedRow encoding of d.
	appendCompacted func(dst []byte, t *metadata.DataType, d *Datum) ([]byte, error)
	// readCompacted decodes the value at buf[pos:] into d and returns the position after it.
	readCompacted func(buf []byte, pos int, t *metadata.DataType, d *Datum) (int, error)
	// skipCompacted returns the position after the value at buf[pos:] without decoding it
	// (nested values are skipped by their length prefix and not validated).
	skipCompacted func(buf []byte, pos int, t *metadata.DataType) (int, error)

	// indexedWidth is the size of the value in an IndexedRow: a byte count, indexedVarLen
	// (the value takes a slot in the variable-length list) or indexedInvalid. widthOf, when
	// set, computes it from t's parameters instead (it is data, not a function, where it can
	// be: the indexed codec asks for every field of every row).
	indexedWidth int
	widthOf      func(t *metadata.DataType) int
	// appendIndexed appends the IndexedRow value bytes of d.
	appendIndexed func(dst []byte, t *metadata.DataType, d *Datum) ([]byte, error)
	// readIndexed decodes the value bytes v (already sized for t) into d.
	readIndexed func(v []byte, t *metadata.DataType, d *Datum) error

	// elemSize is the width of a BinaryArray element's slot in the fixed part.
	elemSize int
	// appendElem writes d into its slot at dst[slot:], appending any variable-length data;
	// start is the array's first byte, f the format of nested rows.
	appendElem func(dst []byte, start, slot int, t *metadata.DataType, d *Datum, f rowFormat) ([]byte, error)
	// readElem decodes the element in the slot at buf[slot:] (buf is the whole array).
	readElem func(buf []byte, slot int, t *metadata.DataType, d *Datum, f rowFormat) error

	// icebergKey appends the Iceberg single-value form of d (EncodeIcebergKey); nil where
	// Java's IcebergBinaryRowWriter refuses the type.
	icebergKey func(dst []byte, t *metadata.DataType, d *Datum) ([]byte, error)
}

// typeCodecs is indexed by TypeRoot, over every value of its uint8 so that a lookup needs no
// bounds check; the roots the row formats do not know hold unsupportedCodec. It is filled by
// init because the nested types' entries call back into the row and array codecs, which
// read it.
var typeCodecs [256]typeCodec

func init() {
	known := typeCodecTable()
	for i := range typeCodecs {
		typeCodecs[i] = unsupportedCodec(metadata.TypeRoot(i))
	}
	copy(typeCodecs[:], known[:])
	typeCodecs[0] = unsupportedCodec(0)
}

// IndexedRow widths that are not a byte count.
const (
	indexedVarLen  = -1
	indexedInvalid = -2
)

// indexedWidthOf returns c's indexedWidth for t.
func (c *typeCodec) indexedWidthOf(t *metadata.DataType) int {
	if c.widthOf != nil {
		return c.widthOf(t)
	}
	return c.indexedWidth
}

// codecOf returns t's entry.
func codecOf(t *metadata.DataType) *typeCodec { return &typeCodecs[t.Root] }

// unsupportedCodec refuses every value of root: writes fail with ErrInvalidValue, reads with
// ErrCorrupt, and it has no IndexedRow width and no array slot (elemSize 0).
func unsupportedCodec(root metadata.TypeRoot) typeCodec {
	refuse := func() error { return invalidf("unsupported type root %d", root) }
	corrupt := func() error { return corruptf("unsupported type root %d", root) }
	return typeCodec{
		appendCompacted: func(dst []byte, _ *metadata.DataType, _ *Datum) ([]byte, error) { return dst, refuse() },
		readCompacted:   func(_ []byte, pos int, _ *metadata.DataType, _ *Datum) (int, error) { return pos, corrupt() },
		skipCompacted:   func(_ []byte, pos int, _ *metadata.DataType) (int, error) { return pos, corrupt() },
		indexedWidth:    indexedInvalid,
		appendIndexed:   func(dst []byte, _ *metadata.DataType, _ *Datum) ([]byte, error) { return dst, refuse() },
		readIndexed:     func([]byte, *metadata.DataType, *Datum) error { return corrupt() },
		appendElem: func(dst []byte, _, _ int, _ *metadata.DataType, _ *Datum, _ rowFormat) ([]byte, error) {
			return dst, refuse()
		},
		readElem: func([]byte, int, *metadata.DataType, *Datum, rowFormat) error { return corrupt() },
	}
}

// scalarCodecSet holds the entries of the roots whose codecs take no parameters from the
// type beyond a length; internal/typetable names them as scalars.<field>.
type scalarCodecSet struct {
	boolean, tinyInt, smallInt, int32Like, timeOfDay, bigInt, float, double, str, fixedStr typeCodec
}

// scalars is built once; its entries are copied into typeCodecs by init.
var scalars = buildScalarCodecs()

func buildScalarCodecs() scalarCodecSet {
	oneByte := func(decode func(byte) Datum) (read func([]byte, int, *metadata.DataType, *Datum) (int, error), readIdx func([]byte, *metadata.DataType, *Datum) error, readElem func([]byte, int, *metadata.DataType, *Datum, rowFormat) error) {
		read = func(buf []byte, pos int, _ *metadata.DataType, d *Datum) (int, error) {
			if pos >= len(buf) {
				return pos, errTruncated("1-byte value", 1, 0)
			}
			*d = decode(buf[pos])
			return pos + 1, nil
		}
		readIdx = func(v []byte, _ *metadata.DataType, d *Datum) error { *d = decode(v[0]); return nil }
		readElem = func(buf []byte, slot int, _ *metadata.DataType, d *Datum, _ rowFormat) error {
			*d = decode(buf[slot])
			return nil
		}
		return read, readIdx, readElem
	}

	boolRead, boolReadIdx, boolReadElem := oneByte(func(b byte) Datum { return Datum{I: int64(boolOf(b))} })
	tinyRead, tinyReadIdx, tinyReadElem := oneByte(func(b byte) Datum { return Datum{I: int64(int8(b))} })
	boolean := typeCodec{
		appendCompacted: func(dst []byte, _ *metadata.DataType, d *Datum) ([]byte, error) { return append(dst, boolByte(d)), nil },
		readCompacted:   boolRead,
		skipCompacted:   skipFixed(1),
		indexedWidth:    1,
		appendIndexed:   func(dst []byte, _ *metadata.DataType, d *Datum) ([]byte, error) { return append(dst, boolByte(d)), nil },
		readIndexed:     boolReadIdx,
		elemSize:        1,
		appendElem: func(dst []byte, _, slot int, _ *metadata.DataType, d *Datum, _ rowFormat) ([]byte, error) {
			dst[slot] = boolByte(d)
			return dst, nil
		},
		readElem: boolReadElem,
	}
	tinyAppend := func(dst []byte, _ *metadata.DataType, d *Datum) ([]byte, error) {
		b, err := checkInt8(d)
		return append(dst, b), err
	}
	tinyInt := typeCodec{
		appendCompacted: tinyAppend, readCompacted: tinyRead, skipCompacted: skipFixed(1),
		indexedWidth: 1, appendIndexed: tinyAppend, readIndexed: tinyReadIdx,
		elemSize: 1,
		appendElem: func(dst []byte, _, slot int, _ *metadata.DataType, d *Datum, _ rowFormat) ([]byte, error) {
			b, err := checkInt8(d)
			if err == nil {
				dst[slot] = b
			}
			return dst, err
		},
		readElem: tinyReadElem,
	}
	smallAppend := func(dst []byte, _ *metadata.DataType, d *Datum) ([]byte, error) {
		v, err := checkInt16(d)
		return appendU16(dst, uint16(v)), err
	}
	smallInt := typeCodec{
		appendCompacted: smallAppend,
		readCompacted: func(buf []byte, pos int, _ *metadata.DataType, d *Datum) (int, error) {
			if len(buf)-pos < 2 {
				return pos, errTruncated("SMALLINT", 2, len(buf)-pos)
			}
			*d = Datum{I: int64(int16(getU16(buf, pos)))}
			return pos + 2, nil
		},
		skipCompacted: skipFixed(2),
		indexedWidth:  2, appendIndexed: smallAppend,
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
	}
	// INT, DATE (days since epoch) and TIME (milliseconds of day) are stored alike.
	int32Like := typeCodec{
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
	}
	timeOfDay := int32Like
	timeOfDay.icebergKey = icebergInt64(func(d *Datum) int64 { return d.I * 1000 }) // microseconds

	bigInt := typeCodec{
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
	}
	floatAppend := func(dst []byte, _ *metadata.DataType, d *Datum) ([]byte, error) {
		return appendU32(dst, math.Float32bits(float32(d.F))), nil
	}
	float := typeCodec{
		appendCompacted: floatAppend,
		readCompacted: func(buf []byte, pos int, _ *metadata.DataType, d *Datum) (int, error) {
			if len(buf)-pos < 4 {
				return pos, errTruncated("FLOAT", 4, len(buf)-pos)
			}
			*d = Datum{F: float64(math.Float32frombits(getU32(buf, pos)))}
			return pos + 4, nil
		},
		skipCompacted: skipFixed(4),
		indexedWidth:  4, appendIndexed: floatAppend,
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
	}
	doubleAppend := func(dst []byte, _ *metadata.DataType, d *Datum) ([]byte, error) {
		return appendU64(dst, math.Float64bits(d.F)), nil
	}
	double := typeCodec{
		appendCompacted: doubleAppend,
		readCompacted: func(buf []byte, pos int, _ *metadata.DataType, d *Datum) (int, error) {
			if len(buf)-pos < 8 {
				return pos, errTruncated("DOUBLE", 8, len(buf)-pos)
			}
			*d = Datum{F: math.Float64frombits(getU64(buf, pos))}
			return pos + 8, nil
		},
		skipCompacted: skipFixed(8),
		indexedWidth:  8, appendIndexed: doubleAppend,
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
	}
	// STRING and BYTES: length-prefixed in a CompactedRow, variable-length in an IndexedRow.
	// CHAR(n) and BINARY(n) differ only in an IndexedRow, where they take exactly n
	// zero-padded bytes.
	str := typeCodec{
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
	}
	fixedStr := str
	fixedStr.widthOf = func(t *metadata.DataType) int {
		if t.Length < 0 {
			return indexedInvalid
		}
		return t.Length
	}
	fixedStr.appendIndexed = func(dst []byte, t *metadata.DataType, d *Datum) ([]byte, error) {
		if len(d.B) > t.Length {
			return dst, invalidf("%d bytes do not fit CHAR/BINARY(%d)", len(d.B), t.Length)
		}
		dst = append(dst, d.B...)
		return appendZeros(dst, t.Length-len(d.B)), nil
	}
	fixedStr.readIndexed = func(v []byte, _ *metadata.DataType, d *Datum) error {
		l := len(v)
		for l > 0 && v[l-1] == 0 {
			l-- // the padding is stripped, as Java does (lossy for data ending in 0x00)
		}
		*d = Datum{B: v[:l:l]}
		return nil
	}

	return scalarCodecSet{
		boolean: boolean, tinyInt: tinyInt, smallInt: smallInt, int32Like: int32Like, timeOfDay: timeOfDay,
		bigInt: bigInt, float: float, double: double, str: str, fixedStr: fixedStr,
	}
}

// decimalCodec: an unscaled int64 up to precision 18 (MaxCompactDecimalPrecision), otherwise
// the unscaled value's minimal big-endian two's complement.
func decimalCodec() typeCodec {
	return typeCodec{
		appendCompacted: func(dst []byte, t *metadata.DataType, d *Datum) ([]byte, error) {
			if isCompactDecimal(t) {
				return appendVarint64(dst, d.I), nil
			}
			return appendLenPrefixed(dst, minimalDecimalBytes(d.B)), nil
		},
		readCompacted: func(buf []byte, pos int, t *metadata.DataType, d *Datum) (int, error) {
			if isCompactDecimal(t) {
				return readVarint64Datum("bad decimal varint")(buf, pos, t, d)
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
		},
		skipCompacted: func(buf []byte, pos int, t *metadata.DataType) (int, error) {
			if isCompactDecimal(t) {
				return skipVarint64("bad decimal varint")(buf, pos, t)
			}
			return skipLenPrefixed(buf, pos, t)
		},
		widthOf: func(t *metadata.DataType) int {
			if isCompactDecimal(t) {
				return 8
			}
			return indexedVarLen
		},
		appendIndexed: func(dst []byte, t *metadata.DataType, d *Datum) ([]byte, error) {
			if isCompactDecimal(t) {
				return appendU64(dst, uint64(d.I)), nil
			}
			return append(dst, minimalDecimalBytes(d.B)...), nil
		},
		readIndexed: func(v []byte, t *metadata.DataType, d *Datum) error {
			if isCompactDecimal(t) {
				return readU64Datum(v, t, d)
			}
			if len(v) == 0 {
				return corruptf("empty decimal")
			}
			*d = Datum{B: minimalDecimalBytes(v)}
			return nil
		},
		elemSize: 8,
		appendElem: func(dst []byte, start, slot int, t *metadata.DataType, d *Datum, f rowFormat) ([]byte, error) {
			if isCompactDecimal(t) {
				return putU64Elem(dst, start, slot, t, d, f)
			}
			b := minimalDecimalBytes(d.B)
			if len(b) > maxDecimalBytes {
				return dst, invalidf("decimal of %d bytes does not fit 16", len(b))
			}
			off := len(dst) - start
			dst = append(dst, b...)
			dst = appendZeros(dst, maxDecimalBytes-len(b))
			putU64(dst, slot, uint64(off)<<32|uint64(len(b)))
			return dst, nil
		},
		readElem: func(buf []byte, slot int, t *metadata.DataType, d *Datum, f rowFormat) error {
			if isCompactDecimal(t) {
				return getU64Elem(buf, slot, t, d, f)
			}
			b, err := varSpan(buf, getU64(buf, slot))
			if err != nil {
				return err
			}
			// Java's array writer reserves 16 bytes and never writes more.
			if len(b) == 0 || len(b) > maxDecimalBytes {
				return corruptf("decimal of %d bytes", len(b))
			}
			*d = Datum{B: minimalDecimalBytes(b)}
			return nil
		},
		icebergKey: func(dst []byte, t *metadata.DataType, d *Datum) ([]byte, error) {
			if isCompactDecimal(t) {
				return append(dst, twosComplement(d.I)...), nil
			}
			return append(dst, minimalDecimalBytes(d.B)...), nil
		},
	}
}

// timestampCodec: epoch milliseconds, plus the nanosecond of the millisecond when the
// precision is above 3 (MaxCompactTimestampPrecision). iceberg tells whether the type can be
// an Iceberg bucket key (TIMESTAMP can, TIMESTAMP_LTZ cannot).
func timestampCodec(iceberg bool) typeCodec {
	c := typeCodec{
		appendCompacted: func(dst []byte, t *metadata.DataType, d *Datum) ([]byte, error) {
			dst = appendVarint64(dst, d.I)
			if isCompactTimestamp(t) {
				return dst, nil
			}
			if err := checkNanos(d); err != nil {
				return dst, err
			}
			return appendVarint32(dst, d.Nanos), nil
		},
		readCompacted: func(buf []byte, pos int, t *metadata.DataType, d *Datum) (int, error) {
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
		},
		skipCompacted: func(buf []byte, pos int, t *metadata.DataType) (int, error) {
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
		},
		widthOf: func(t *metadata.DataType) int {
			if isCompactTimestamp(t) {
				return 8
			}
			return 12
		},
		appendIndexed: func(dst []byte, t *metadata.DataType, d *Datum) ([]byte, error) {
			dst = appendU64(dst, uint64(d.I))
			if isCompactTimestamp(t) {
				return dst, nil
			}
			if err := checkNanos(d); err != nil {
				return dst, err
			}
			return appendU32(dst, uint32(d.Nanos)), nil
		},
		readIndexed: func(v []byte, t *metadata.DataType, d *Datum) error {
			*d = Datum{I: int64(getU64(v, 0))}
			if isCompactTimestamp(t) {
				return nil
			}
			d.Nanos = int32(getU32(v, 8))
			return checkNanosDecoded(d)
		},
		elemSize: 8,
		appendElem: func(dst []byte, start, slot int, t *metadata.DataType, d *Datum, f rowFormat) ([]byte, error) {
			if isCompactTimestamp(t) {
				return putU64Elem(dst, start, slot, t, d, f)
			}
			if err := checkNanos(d); err != nil {
				return dst, err
			}
			off := len(dst) - start
			dst = appendU64(dst, uint64(d.I))
			putU64(dst, slot, uint64(off)<<32|uint64(uint32(d.Nanos)))
			return dst, nil
		},
		readElem: func(buf []byte, slot int, t *metadata.DataType, d *Datum, _ rowFormat) error {
			v := getU64(buf, slot)
			if isCompactTimestamp(t) {
				*d = Datum{I: int64(v)}
				return nil
			}
			off := int64(int32(v >> 32))
			if off < 0 || off+8 > int64(len(buf)) {
				return corruptf("timestamp millis at %d outside %d bytes", off, len(buf))
			}
			*d = Datum{I: int64(getU64(buf, int(off))), Nanos: int32(v)}
			return checkNanosDecoded(d)
		},
	}
	if iceberg {
		c.icebergKey = icebergInt64(func(d *Datum) int64 { return d.I*1000 + int64(d.Nanos)/1000 }) // microseconds
	}
	return c
}

// nestedCodec: ARRAY, MAP and ROW, a BinaryArray, a BinaryMap or a row in the parent's
// format, length-prefixed in a CompactedRow, variable-length in an IndexedRow and an array.
func nestedCodec() typeCodec {
	return typeCodec{
		appendCompacted: func(dst []byte, t *metadata.DataType, d *Datum) ([]byte, error) {
			start := len(dst)
			dst, err := appendNested(dst, t, d, formatCompacted)
			if err != nil {
				return dst[:start], err
			}
			return prefixLength(dst, start), nil
		},
		readCompacted: func(buf []byte, pos int, t *metadata.DataType, d *Datum) (int, error) {
			b, p, err := readLenPrefixed(buf, pos)
			if err != nil {
				return pos, err
			}
			return p, decodeNested(b, t, d, formatCompacted)
		},
		skipCompacted: skipLenPrefixed,
		indexedWidth:  indexedVarLen,
		appendIndexed: func(dst []byte, t *metadata.DataType, d *Datum) ([]byte, error) {
			return appendNested(dst, t, d, formatIndexed)
		},
		readIndexed: func(v []byte, t *metadata.DataType, d *Datum) error {
			return decodeNested(v, t, d, formatIndexed)
		},
		elemSize: 8,
		appendElem: func(dst []byte, start, slot int, t *metadata.DataType, d *Datum, f rowFormat) ([]byte, error) {
			off := len(dst) - start
			dst, err := appendNested(dst, t, d, f)
			if err != nil {
				return dst, err
			}
			size := len(dst) - start - off
			dst = appendZeros(dst, roundUp8(size)-size)
			putU64(dst, slot, uint64(off)<<32|uint64(size))
			return dst, nil
		},
		readElem: func(buf []byte, slot int, t *metadata.DataType, d *Datum, f rowFormat) error {
			b, err := varSpan(buf, getU64(buf, slot))
			if err != nil {
				return err
			}
			return decodeNested(b, t, d, f)
		},
	}
}

// Building blocks shared by several entries.

func skipFixed(w int) func([]byte, int, *metadata.DataType) (int, error) {
	return func(buf []byte, pos int, _ *metadata.DataType) (int, error) {
		if len(buf)-pos < w {
			return pos, errTruncated("fixed-width value", w, len(buf)-pos)
		}
		return pos + w, nil
	}
}

func skipVarint32(buf []byte, pos int, _ *metadata.DataType) (int, error) {
	_, p, ok := readVarint32(buf, pos)
	if !ok {
		return pos, errTruncated("int varint", 1, len(buf)-pos)
	}
	return p, nil
}

func skipVarint64(what string) func([]byte, int, *metadata.DataType) (int, error) {
	return func(buf []byte, pos int, _ *metadata.DataType) (int, error) {
		_, p, ok := readVarint64(buf, pos)
		if !ok {
			return pos, corruptf("%s", what)
		}
		return p, nil
	}
}

func readVarint64Datum(what string) func([]byte, int, *metadata.DataType, *Datum) (int, error) {
	return func(buf []byte, pos int, _ *metadata.DataType, d *Datum) (int, error) {
		v, p, ok := readVarint64(buf, pos)
		if !ok {
			return pos, corruptf("%s", what)
		}
		*d = Datum{I: v}
		return p, nil
	}
}

func skipLenPrefixed(buf []byte, pos int, _ *metadata.DataType) (int, error) {
	_, p, err := readLenPrefixed(buf, pos)
	return p, err
}

func appendU64Datum(dst []byte, _ *metadata.DataType, d *Datum) ([]byte, error) {
	return appendU64(dst, uint64(d.I)), nil
}

func readU64Datum(v []byte, _ *metadata.DataType, d *Datum) error {
	*d = Datum{I: int64(getU64(v, 0))}
	return nil
}

func putU64Elem(dst []byte, _, slot int, _ *metadata.DataType, d *Datum, _ rowFormat) ([]byte, error) {
	putU64(dst, slot, uint64(d.I))
	return dst, nil
}

func getU64Elem(buf []byte, slot int, _ *metadata.DataType, d *Datum, _ rowFormat) error {
	*d = Datum{I: int64(getU64(buf, slot))}
	return nil
}

func icebergInt64(v func(d *Datum) int64) func([]byte, *metadata.DataType, *Datum) ([]byte, error) {
	return func(dst []byte, _ *metadata.DataType, d *Datum) ([]byte, error) {
		return binary.LittleEndian.AppendUint64(dst, uint64(v(d))), nil
	}
}

func doubleAppend64LE(dst []byte, _ *metadata.DataType, d *Datum) ([]byte, error) {
	return binary.LittleEndian.AppendUint64(dst, math.Float64bits(d.F)), nil
}
