package arrowlog

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/internal/row"
)

// reader fills d with element i of the array it was compiled for.
type reader func(i int, d *row.Datum)

// RecordToRows converts a record whose columns have the given Fluss types to decoded rows.
// String, binary and fixed-size binary values alias the record's buffers (copy them before
// releasing the record). Top-level Datums come from one allocation; nested values allocate
// their element slices.
func RecordToRows(rec arrow.Record, cols []metadata.Column) ([][]row.Datum, error) {
	if int(rec.NumCols()) != len(cols) {
		return nil, fmt.Errorf("arrowlog: record has %d columns, schema %d", rec.NumCols(), len(cols))
	}
	readers := make([]reader, len(cols))
	for i, c := range cols {
		r, err := compileReader(rec.Column(i), c.Type)
		if err != nil {
			return nil, fmt.Errorf("arrowlog: column %q: %w", c.Name, err)
		}
		readers[i] = r
	}
	n := int(rec.NumRows())
	rows := make([][]row.Datum, n)
	slab := make([]row.Datum, n*len(cols))
	for i := range rows {
		r := slab[i*len(cols) : (i+1)*len(cols) : (i+1)*len(cols)]
		for c, rd := range readers {
			rd(i, &r[c])
		}
		rows[i] = r
	}
	return rows, nil
}

func typeMismatch(a arrow.Array, t metadata.DataType) error {
	return fmt.Errorf("arrow type %s does not hold Fluss type root %d", a.DataType(), t.Root)
}

// compileReader returns the reader of array a holding Fluss type t.
func compileReader(a arrow.Array, t metadata.DataType) (reader, error) {
	wrap := func(get func(i int, d *row.Datum)) reader {
		return func(i int, d *row.Datum) {
			if a.IsNull(i) {
				*d = row.NullDatum
				return
			}
			*d = row.Datum{}
			get(i, d)
		}
	}
	var get func(i int, d *row.Datum)
	switch t.Root {
	case metadata.Boolean:
		x, ok := a.(*array.Boolean)
		if !ok {
			return nil, typeMismatch(a, t)
		}
		get = func(i int, d *row.Datum) {
			if x.Value(i) {
				d.I = 1
			}
		}
	case metadata.TinyInt:
		x, ok := a.(*array.Int8)
		if !ok {
			return nil, typeMismatch(a, t)
		}
		get = func(i int, d *row.Datum) { d.I = int64(x.Value(i)) }
	case metadata.SmallInt:
		x, ok := a.(*array.Int16)
		if !ok {
			return nil, typeMismatch(a, t)
		}
		get = func(i int, d *row.Datum) { d.I = int64(x.Value(i)) }
	case metadata.Int:
		x, ok := a.(*array.Int32)
		if !ok {
			return nil, typeMismatch(a, t)
		}
		get = func(i int, d *row.Datum) { d.I = int64(x.Value(i)) }
	case metadata.BigInt:
		x, ok := a.(*array.Int64)
		if !ok {
			return nil, typeMismatch(a, t)
		}
		get = func(i int, d *row.Datum) { d.I = x.Value(i) }
	case metadata.Float:
		x, ok := a.(*array.Float32)
		if !ok {
			return nil, typeMismatch(a, t)
		}
		get = func(i int, d *row.Datum) { d.F = float64(x.Value(i)) }
	case metadata.Double:
		x, ok := a.(*array.Float64)
		if !ok {
			return nil, typeMismatch(a, t)
		}
		get = func(i int, d *row.Datum) { d.F = x.Value(i) }
	case metadata.Char, metadata.String:
		x, ok := a.(*array.String)
		if !ok {
			return nil, typeMismatch(a, t)
		}
		offs, vb := x.ValueOffsets(), x.ValueBytes()
		get = func(i int, d *row.Datum) {
			base := offs[0]
			d.B = vb[offs[i]-base : offs[i+1]-base : offs[i+1]-base]
		}
	case metadata.Bytes:
		x, ok := a.(*array.Binary)
		if !ok {
			return nil, typeMismatch(a, t)
		}
		get = func(i int, d *row.Datum) { d.B = x.Value(i) }
	case metadata.Binary:
		x, ok := a.(*array.FixedSizeBinary)
		if !ok {
			return nil, typeMismatch(a, t)
		}
		get = func(i int, d *row.Datum) { d.B = x.Value(i) }
	case metadata.Decimal:
		x, ok := a.(*array.Decimal128)
		if !ok {
			return nil, typeMismatch(a, t)
		}
		if t.Precision <= row.MaxCompactDecimalPrecision {
			get = func(i int, d *row.Datum) { d.I = int64(x.Value(i).LowBits()) }
		} else {
			get = func(i int, d *row.Datum) { d.B = appendDecimalBytes(nil, x.Value(i)) }
		}
	case metadata.Date:
		x, ok := a.(*array.Date32)
		if !ok {
			return nil, typeMismatch(a, t)
		}
		get = func(i int, d *row.Datum) { d.I = int64(x.Value(i)) }
	case metadata.Time:
		switch x := a.(type) {
		case *array.Time32:
			mul := int64(1)
			if x.DataType().(*arrow.Time32Type).Unit == arrow.Second {
				mul = 1000
			}
			get = func(i int, d *row.Datum) { d.I = int64(x.Value(i)) * mul }
		case *array.Time64:
			div := int64(1000)
			if x.DataType().(*arrow.Time64Type).Unit == arrow.Nanosecond {
				div = 1_000_000
			}
			get = func(i int, d *row.Datum) { d.I = int64(x.Value(i)) / div }
		default:
			return nil, typeMismatch(a, t)
		}
	case metadata.Timestamp, metadata.TimestampLTZ:
		x, ok := a.(*array.Timestamp)
		if !ok {
			return nil, typeMismatch(a, t)
		}
		unit := x.DataType().(*arrow.TimestampType).Unit
		get = func(i int, d *row.Datum) { d.I, d.Nanos = timestampFromArrow(int64(x.Value(i)), unit) }
	case metadata.Array:
		x, ok := a.(*array.List)
		if !ok || t.Elem == nil {
			return nil, typeMismatch(a, t)
		}
		elem, err := compileReader(x.ListValues(), *t.Elem)
		if err != nil {
			return nil, err
		}
		offs := x.Offsets()
		get = func(i int, d *row.Datum) {
			lo, hi := int(offs[i]), int(offs[i+1])
			d.Elems = make([]row.Datum, hi-lo)
			for j := range d.Elems {
				elem(lo+j, &d.Elems[j])
			}
		}
	case metadata.Map:
		x, ok := a.(*array.Map)
		if !ok || t.Elem == nil || t.Value == nil {
			return nil, typeMismatch(a, t)
		}
		key, err := compileReader(x.Keys(), *t.Elem)
		if err != nil {
			return nil, err
		}
		val, err := compileReader(x.Items(), *t.Value)
		if err != nil {
			return nil, err
		}
		offs := x.Offsets()
		get = func(i int, d *row.Datum) {
			lo, hi := int(offs[i]), int(offs[i+1])
			d.Elems = make([]row.Datum, hi-lo)
			d.Vals = make([]row.Datum, hi-lo)
			for j := range d.Elems {
				key(lo+j, &d.Elems[j])
				val(lo+j, &d.Vals[j])
			}
		}
	case metadata.Row:
		x, ok := a.(*array.Struct)
		if !ok || x.NumField() != len(t.Fields) {
			return nil, typeMismatch(a, t)
		}
		fields := make([]reader, len(t.Fields))
		for k, f := range t.Fields {
			r, err := compileReader(x.Field(k), f.Type)
			if err != nil {
				return nil, err
			}
			fields[k] = r
		}
		get = func(i int, d *row.Datum) {
			d.Elems = make([]row.Datum, len(fields))
			for k, r := range fields {
				r(i, &d.Elems[k])
			}
		}
	default:
		return nil, fmt.Errorf("unsupported Fluss type root %d", t.Root)
	}
	return wrap(get), nil
}
