package batchstats

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/internal/row"
)

// ErrCorrupt is wrapped by Decode's errors.
var ErrCorrupt = errors.New("batchstats: corrupt statistics")

// Encoded form of a Batch (little-endian fixed widths, Go varints):
//
//	int16   schema id
//	varint  rows, highest field id
//	uvarint column count C, then C times:
//	  varint  field id
//	  uint8   type root, uvarint precision, uvarint scale
//	  varint  null count
//	  uint8   1 when min and max follow, else 0
//	  min, max: by root — integer-like, date, time, compact decimal: varint;
//	            float, double: 8-byte IEEE bits; timestamps: varint millis, varint nanos;
//	            strings, binaries, wide decimals: uvarint length, bytes
//
// Only what predicate needs of a column type is kept (root, precision, scale).

// Encode appends the encoded form of b to dst.
func Encode(dst []byte, b *Batch) []byte {
	dst = binary.LittleEndian.AppendUint16(dst, uint16(b.SchemaID))
	dst = binary.AppendVarint(dst, b.Rows)
	dst = binary.AppendVarint(dst, int64(b.HighestFieldID))
	dst = binary.AppendUvarint(dst, uint64(len(b.Columns)))
	for i := range b.Columns {
		c := &b.Columns[i]
		dst = binary.AppendVarint(dst, int64(c.FieldID))
		dst = append(dst, byte(c.Type.Root))
		dst = binary.AppendUvarint(dst, uint64(c.Type.Precision))
		dst = binary.AppendUvarint(dst, uint64(c.Type.Scale))
		dst = binary.AppendVarint(dst, c.NullCount)
		if !c.HasMinMax {
			dst = append(dst, 0)
			continue
		}
		dst = append(dst, 1)
		dst = appendValue(dst, c.Type, c.Min)
		dst = appendValue(dst, c.Type, c.Max)
	}
	return dst
}

func appendValue(dst []byte, t metadata.DataType, d row.Datum) []byte {
	switch kindOf(t) {
	case kindInt:
		return binary.AppendVarint(dst, d.I)
	case kindFloat:
		return binary.LittleEndian.AppendUint64(dst, math.Float64bits(d.F))
	case kindTimestamp:
		return binary.AppendVarint(binary.AppendVarint(dst, d.I), int64(d.Nanos))
	}
	return append(binary.AppendUvarint(dst, uint64(len(d.B))), d.B...)
}

type kind int

const (
	kindInt kind = iota
	kindFloat
	kindTimestamp
	kindBytes
)

func kindOf(t metadata.DataType) kind {
	switch t.Root {
	case metadata.Float, metadata.Double:
		return kindFloat
	case metadata.Timestamp, metadata.TimestampLTZ:
		return kindTimestamp
	case metadata.Char, metadata.String, metadata.Binary, metadata.Bytes:
		return kindBytes
	case metadata.Decimal:
		if t.Precision > row.MaxCompactDecimalPrecision {
			return kindBytes
		}
	}
	return kindInt
}

// decoder reads the encoded form; the first error sticks.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: %s", ErrCorrupt, what)
	}
	d.b = nil
}

func (d *decoder) varint() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail("varint")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) uvarint(limit uint64) uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 || v > limit {
		d.fail("uvarint")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) bytes(n int) []byte {
	if n > len(d.b) {
		d.fail("truncated")
		return nil
	}
	out := d.b[:n:n]
	d.b = d.b[n:]
	return out
}

func (d *decoder) value(t metadata.DataType) row.Datum {
	switch kindOf(t) {
	case kindInt:
		return row.Datum{I: d.varint()}
	case kindFloat:
		b := d.bytes(8)
		if b == nil {
			return row.Datum{}
		}
		return row.Datum{F: math.Float64frombits(binary.LittleEndian.Uint64(b))}
	case kindTimestamp:
		return row.Datum{I: d.varint(), Nanos: int32(d.varint())}
	}
	n := d.uvarint(uint64(len(d.b)))
	return row.Datum{B: append([]byte{}, d.bytes(int(n))...)}
}

// Decode reads one encoded Batch, all of b.
func Decode(b []byte) (*Batch, error) {
	d := &decoder{b: b}
	if len(b) < 2 {
		return nil, fmt.Errorf("%w: %d bytes", ErrCorrupt, len(b))
	}
	out := &Batch{SchemaID: int16(binary.LittleEndian.Uint16(b))}
	d.b = b[2:]
	out.Rows = d.varint()
	out.HighestFieldID = int32(d.varint())
	n := d.uvarint(uint64(len(d.b)))
	out.Columns = make([]Column, 0, n)
	for i := uint64(0); i < n && d.err == nil; i++ {
		var c Column
		c.FieldID = int32(d.varint())
		root := d.bytes(1)
		if root == nil {
			break
		}
		c.Type = metadata.DataType{Root: metadata.TypeRoot(root[0]), Precision: int(d.uvarint(1 << 16)), Scale: int(d.uvarint(1 << 16))}
		c.NullCount = d.varint()
		flag := d.bytes(1)
		if flag == nil {
			break
		}
		if flag[0] == 1 {
			c.HasMinMax = true
			c.Min = d.value(c.Type)
			c.Max = d.value(c.Type)
		} else if flag[0] != 0 {
			d.fail("flag")
		}
		out.Columns = append(out.Columns, c)
	}
	if d.err == nil && len(d.b) != 0 {
		d.fail("trailing bytes")
	}
	if d.err != nil {
		return nil, d.err
	}
	return out, nil
}
