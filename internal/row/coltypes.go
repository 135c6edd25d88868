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
	// paimonKey writes d as a field of a Paimon BinaryRow key (EncodePaimonKey): into its
	// zeroed 8-byte slot at dst[slot:], appending any variable-length data to the row that
	// starts at dst[start]; nil where Java's PaimonBinaryRowWriter refuses the type. Its
	// error describes the value; EncodePaimonKey names the column.
	paimonKey func(dst []byte, start, slot int, t *metadata.DataType, d *Datum) ([]byte, error)
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
		paimonKey: paimonDecimal,
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
	c.paimonKey = paimonTimestamp
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
