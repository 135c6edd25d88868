package arrowlog

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/internal/row"
)

// RowBuilder accumulates decoded rows into Arrow arrays. It is reusable: after NewRecord the
// builders are empty again and keep their capacity, so building batch after batch allocates
// only what the arrow builders grow. Not safe for concurrent use.
type RowBuilder struct {
	schema *arrow.Schema
	rb     *array.RecordBuilder
	types  []metadata.DataType
	cols   []appender
}

// appender appends one value (or NULL) to the builder it was compiled for.
type appender func(d *row.Datum) error

// NewRowBuilder returns a builder for rows of the given columns; schema must be
// ArrowSchema(cols) (it is taken as a parameter so that callers can cache it).
func NewRowBuilder(schema *arrow.Schema, cols []metadata.Column, mem memory.Allocator) (*RowBuilder, error) {
	if schema.NumFields() != len(cols) {
		return nil, fmt.Errorf("arrowlog: schema has %d fields for %d columns", schema.NumFields(), len(cols))
	}
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	rb := array.NewRecordBuilder(mem, schema)
	b := &RowBuilder{schema: schema, rb: rb, types: make([]metadata.DataType, len(cols)), cols: make([]appender, len(cols))}
	for i, c := range cols {
		b.types[i] = c.Type
		a, err := compileAppender(rb.Field(i), c.Type)
		if err != nil {
			rb.Release()
			return nil, fmt.Errorf("arrowlog: column %q: %w", c.Name, err)
		}
		b.cols[i] = a
	}
	return b, nil
}

// Append adds one row; it must hold one Datum per column. A row that is rejected leaves the
// builder unchanged.
func (b *RowBuilder) Append(r []row.Datum) error {
	if len(r) != len(b.cols) {
		return fmt.Errorf("arrowlog: row has %d fields, schema %d", len(r), len(b.cols))
	}
	for i := range r {
		if err := validateDatum(&b.types[i], &r[i]); err != nil {
			return fmt.Errorf("arrowlog: field %d: %w", i, err)
		}
	}
	for i := range r {
		if err := b.cols[i](&r[i]); err != nil {
			return fmt.Errorf("arrowlog: field %d: %w", i, err)
		}
	}
	return nil
}

// NewRecord returns the rows appended so far as a record (the caller releases it) and
// empties the builder.
func (b *RowBuilder) NewRecord() arrow.RecordBatch { return b.rb.NewRecordBatch() }

// Release frees the builder's memory.
func (b *RowBuilder) Release() { b.rb.Release() }

// RowsToRecord converts decoded rows of the given columns to an Arrow record (schema must be
// ArrowSchema(cols)). The caller releases the record.
func RowsToRecord(schema *arrow.Schema, cols []metadata.Column, rows [][]row.Datum, mem memory.Allocator) (arrow.RecordBatch, error) {
	b, err := NewRowBuilder(schema, cols, mem)
	if err != nil {
		return nil, err
	}
	defer b.Release()
	for _, r := range rows {
		if err := b.Append(r); err != nil {
			return nil, err
		}
	}
	return b.NewRecord(), nil
}

func intRange(v, lo, hi int64) error {
	if v < lo || v > hi {
		return fmt.Errorf("value %d out of range [%d, %d]", v, lo, hi)
	}
	return nil
}

func timeAppender(bld array.Builder, precision int) (appender, error) {
	switch b := bld.(type) {
	case *array.Time32Builder:
		div := int64(1)
		if precision == 0 {
			div = 1000
		}
		return func(d *row.Datum) error {
			if d.Null {
				b.AppendNull()
			} else {
				b.Append(arrow.Time32(d.I / div))
			}
			return nil
		}, nil
	case *array.Time64Builder:
		mul := int64(1000)
		if precision > 6 {
			mul = 1_000_000
		}
		return func(d *row.Datum) error {
			if d.Null {
				b.AppendNull()
			} else {
				b.Append(arrow.Time64(d.I * mul))
			}
			return nil
		}, nil
	}
	return nil, fmt.Errorf("unexpected builder %T for TIME", bld)
}

// timestampToArrow converts Fluss's (epoch millis, nanos of milli) to the Arrow unit, as
// Fluss's ArrowTimestamp*Writer does (seconds truncate toward zero like Java's division).
func timestampToArrow(ms int64, nanos int32, unit arrow.TimeUnit) int64 {
	switch unit {
	case arrow.Second:
		return ms / 1000
	case arrow.Millisecond:
		return ms
	case arrow.Microsecond:
		return ms*1000 + int64(nanos)/1000
	default:
		return ms*1_000_000 + int64(nanos)
	}
}

// timestampFromArrow is the inverse; nanos is always in [0, 999999].
func timestampFromArrow(v int64, unit arrow.TimeUnit) (ms int64, nanos int32) {
	switch unit {
	case arrow.Second:
		return v * 1000, 0
	case arrow.Millisecond:
		return v, 0
	case arrow.Microsecond:
		ms, rem := floorDivMod(v, 1000)
		return ms, int32(rem * 1000)
	default:
		ms, rem := floorDivMod(v, 1_000_000)
		return ms, int32(rem)
	}
}

func floorDivMod(a, b int64) (int64, int64) {
	q, r := a/b, a%b
	if r < 0 {
		q--
		r += b
	}
	return q, r
}

// decimalFromBytes reads an unscaled value in Java BigInteger.toByteArray form (big-endian
// two's complement, minimal length).
func decimalFromBytes(b []byte) (decimal128.Num, error) {
	if len(b) == 0 || len(b) > 16 {
		return decimal128.Num{}, fmt.Errorf("decimal unscaled value of %d bytes", len(b))
	}
	var buf [16]byte
	if b[0]&0x80 != 0 {
		for i := range buf {
			buf[i] = 0xff
		}
	}
	copy(buf[16-len(b):], b)
	var hi, lo uint64
	for i := 0; i < 8; i++ {
		hi = hi<<8 | uint64(buf[i])
		lo = lo<<8 | uint64(buf[8+i])
	}
	return decimal128.New(int64(hi), lo), nil
}

// appendDecimalBytes appends n in BigInteger.toByteArray form.
func appendDecimalBytes(dst []byte, n decimal128.Num) []byte {
	var buf [16]byte
	hi, lo := uint64(n.HighBits()), n.LowBits()
	for i := 0; i < 8; i++ {
		buf[7-i] = byte(hi >> (8 * i))
		buf[15-i] = byte(lo >> (8 * i))
	}
	i := 0
	for i < 15 {
		if buf[i] == 0x00 && buf[i+1]&0x80 == 0 || buf[i] == 0xff && buf[i+1]&0x80 != 0 {
			i++
			continue
		}
		break
	}
	return append(dst, buf[i:]...)
}
