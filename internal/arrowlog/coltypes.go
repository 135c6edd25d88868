package arrowlog

import (
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"

	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/internal/row"
)

// columnCodec is everything the Arrow log codec knows about one Fluss type root. columnCodecs
// holds one per root; which entry serves which root is listed, with the row and Go client
// entries of the same root, in internal/typetable/table.go, from which columncodecs_gen.go
// is generated.
type columnCodec struct {
	// arrowType returns the Arrow type of t (Fluss ArrowUtils.toArrowSchema).
	arrowType func(t metadata.DataType) (arrow.DataType, error)
	// appender compiles the appender of t onto bld, whose type is arrowType(t). Its
	// appender may still reject a value; validate (below) runs first so that a row is
	// either appended whole or not at all.
	appender func(bld array.Builder, t metadata.DataType) (appender, error)
	// reader compiles the getter of non-null elements of a, which holds values of t.
	reader func(a arrow.Array, t metadata.DataType) (getter, error)
	// validate, if set, checks a non-null value of t before anything is appended.
	validate func(t *metadata.DataType, d *row.Datum) error
}

// getter fills a zeroed d with the non-null element i of the array it was compiled for.
type getter func(i int, d *row.Datum)

// columnCodecs is indexed by TypeRoot. It is filled by init because the nested types'
// entries call back into compileAppender and compileReader, which read it.
var columnCodecs [metadata.LastTypeRoot + 1]columnCodec

func init() { columnCodecs = codecTable() }

// The entries of codecTable (columncodecs_gen.go) that serve one root each; shared ones
// (stringCodec, timestampCodec) follow.

var booleanColumn = columnCodec{
	arrowType: fixedType(arrow.FixedWidthTypes.Boolean),
	appender: scalarAppender(func(b *array.BooleanBuilder, d *row.Datum) error {
		b.Append(d.I != 0)
		return nil
	}),
	reader: scalarReader(func(x *array.Boolean, i int, d *row.Datum) {
		if x.Value(i) {
			d.I = 1
		}
	}),
}

var tinyIntColumn = narrowIntCodec[int8, *array.Int8Builder, *array.Int8](arrow.PrimitiveTypes.Int8, math.MinInt8, math.MaxInt8)

var smallIntColumn = narrowIntCodec[int16, *array.Int16Builder, *array.Int16](arrow.PrimitiveTypes.Int16, math.MinInt16, math.MaxInt16)

var intColumn = narrowIntCodec[int32, *array.Int32Builder, *array.Int32](arrow.PrimitiveTypes.Int32, math.MinInt32, math.MaxInt32)

var bigIntColumn = columnCodec{
	arrowType: fixedType(arrow.PrimitiveTypes.Int64),
	appender: scalarAppender(func(b *array.Int64Builder, d *row.Datum) error {
		b.Append(d.I)
		return nil
	}),
	reader: scalarReader(func(x *array.Int64, i int, d *row.Datum) { d.I = x.Value(i) }),
}

var floatColumn = columnCodec{
	arrowType: fixedType(arrow.PrimitiveTypes.Float32),
	appender: scalarAppender(func(b *array.Float32Builder, d *row.Datum) error {
		b.Append(float32(d.F))
		return nil
	}),
	reader: scalarReader(func(x *array.Float32, i int, d *row.Datum) { d.F = float64(x.Value(i)) }),
}

var doubleColumn = columnCodec{
	arrowType: fixedType(arrow.PrimitiveTypes.Float64),
	appender: scalarAppender(func(b *array.Float64Builder, d *row.Datum) error {
		b.Append(d.F)
		return nil
	}),
	reader: scalarReader(func(x *array.Float64, i int, d *row.Datum) { d.F = x.Value(i) }),
}

var binaryColumn = columnCodec{
	arrowType: func(t metadata.DataType) (arrow.DataType, error) {
		if t.Length < 1 {
			return nil, fmt.Errorf("BINARY length %d must be positive", t.Length)
		}
		return &arrow.FixedSizeBinaryType{ByteWidth: t.Length}, nil
	},
	appender: func(bld array.Builder, t metadata.DataType) (appender, error) {
		b := bld.(*array.FixedSizeBinaryBuilder)
		return nullable(bld, func(d *row.Datum) error {
			if err := checkBinaryLength(&t, d); err != nil {
				return err
			}
			b.Append(d.B)
			return nil
		}), nil
	},
	reader:   scalarReader(func(x *array.FixedSizeBinary, i int, d *row.Datum) { d.B = x.Value(i) }),
	validate: checkBinaryLength,
}

// checkBinaryLength refuses a BINARY(n) value of another length.
func checkBinaryLength(t *metadata.DataType, d *row.Datum) error {
	if len(d.B) != t.Length {
		return fmt.Errorf("BINARY(%d) value has %d bytes", t.Length, len(d.B))
	}
	return nil
}

var bytesColumn = columnCodec{
	arrowType: fixedType(arrow.BinaryTypes.Binary),
	appender: scalarAppender(func(b *array.BinaryBuilder, d *row.Datum) error {
		b.Append(d.B)
		return nil
	}),
	reader: scalarReader(func(x *array.Binary, i int, d *row.Datum) { d.B = x.Value(i) }),
}

var decimalColumn = columnCodec{
	arrowType: func(t metadata.DataType) (arrow.DataType, error) {
		if t.Precision < 1 || t.Precision > 38 || t.Scale < 0 || t.Scale > t.Precision {
			return nil, fmt.Errorf("invalid DECIMAL(%d, %d)", t.Precision, t.Scale)
		}
		return &arrow.Decimal128Type{Precision: int32(t.Precision), Scale: int32(t.Scale)}, nil
	},
	appender: func(bld array.Builder, t metadata.DataType) (appender, error) {
		b := bld.(*array.Decimal128Builder)
		if t.Precision <= row.MaxCompactDecimalPrecision {
			return nullable(bld, func(d *row.Datum) error {
				b.Append(decimal128.FromI64(d.I))
				return nil
			}), nil
		}
		return nullable(bld, func(d *row.Datum) error {
			n, err := decimalFromBytes(d.B)
			if err != nil {
				return err
			}
			b.Append(n)
			return nil
		}), nil
	},
	reader: func(a arrow.Array, t metadata.DataType) (getter, error) {
		x, ok := a.(*array.Decimal128)
		if !ok {
			return nil, typeMismatch(a, t)
		}
		if t.Precision <= row.MaxCompactDecimalPrecision {
			return func(i int, d *row.Datum) { d.I = int64(x.Value(i).LowBits()) }, nil
		}
		return func(i int, d *row.Datum) { d.B = appendDecimalBytes(nil, x.Value(i)) }, nil
	},
	validate: func(t *metadata.DataType, d *row.Datum) error {
		if t.Precision > row.MaxCompactDecimalPrecision && (len(d.B) == 0 || len(d.B) > 16) {
			return fmt.Errorf("decimal unscaled value of %d bytes", len(d.B))
		}
		return nil
	},
}

var dateColumn = columnCodec{
	arrowType: fixedType(arrow.FixedWidthTypes.Date32),
	appender: scalarAppender(func(b *array.Date32Builder, d *row.Datum) error {
		if err := intRange(d.I, math.MinInt32, math.MaxInt32); err != nil {
			return err
		}
		b.Append(arrow.Date32(d.I))
		return nil
	}),
	reader:   scalarReader(func(x *array.Date32, i int, d *row.Datum) { d.I = int64(x.Value(i)) }),
	validate: validateInt32,
}

var timeColumn = columnCodec{
	arrowType: func(t metadata.DataType) (arrow.DataType, error) {
		switch p := t.Precision; {
		case p == 0:
			return arrow.FixedWidthTypes.Time32s, nil
		case p >= 1 && p <= 3:
			return arrow.FixedWidthTypes.Time32ms, nil
		case p >= 4 && p <= 6:
			return arrow.FixedWidthTypes.Time64us, nil
		case p >= 7 && p <= 9:
			return arrow.FixedWidthTypes.Time64ns, nil
		}
		return nil, fmt.Errorf("invalid TIME precision %d", t.Precision)
	},
	appender: func(bld array.Builder, t metadata.DataType) (appender, error) {
		return timeAppender(bld, t.Precision)
	},
	reader: func(a arrow.Array, t metadata.DataType) (getter, error) {
		switch x := a.(type) {
		case *array.Time32:
			mul := int64(1)
			if x.DataType().(*arrow.Time32Type).Unit == arrow.Second {
				mul = 1000
			}
			return func(i int, d *row.Datum) { d.I = int64(x.Value(i)) * mul }, nil
		case *array.Time64:
			div := int64(1000)
			if x.DataType().(*arrow.Time64Type).Unit == arrow.Nanosecond {
				div = 1_000_000
			}
			return func(i int, d *row.Datum) { d.I = int64(x.Value(i)) / div }, nil
		}
		return nil, typeMismatch(a, t)
	},
}

var arrayColumn = columnCodec{
	arrowType: func(t metadata.DataType) (arrow.DataType, error) {
		if t.Elem == nil {
			return nil, fmt.Errorf("ARRAY without element type")
		}
		et, err := ArrowType(*t.Elem)
		if err != nil {
			return nil, fmt.Errorf("array element: %w", err)
		}
		return arrow.ListOfField(arrow.Field{Name: listItemName, Type: et, Nullable: !t.Elem.NotNull}), nil
	},
	appender: func(bld array.Builder, t metadata.DataType) (appender, error) {
		b := bld.(*array.ListBuilder)
		elem, err := compileAppender(b.ValueBuilder(), *t.Elem)
		if err != nil {
			return nil, err
		}
		return nullable(bld, func(d *row.Datum) error {
			b.Append(true)
			for i := range d.Elems {
				if err := elem(&d.Elems[i]); err != nil {
					return err
				}
			}
			return nil
		}), nil
	},
	reader: func(a arrow.Array, t metadata.DataType) (getter, error) {
		x, ok := a.(*array.List)
		if !ok || t.Elem == nil {
			return nil, typeMismatch(a, t)
		}
		elem, err := compileReader(x.ListValues(), *t.Elem)
		if err != nil {
			return nil, err
		}
		offs := x.Offsets()
		return func(i int, d *row.Datum) {
			lo, hi := int(offs[i]), int(offs[i+1])
			d.Elems = make([]row.Datum, hi-lo)
			for j := range d.Elems {
				elem(lo+j, &d.Elems[j])
			}
		}, nil
	},
	validate: func(t *metadata.DataType, d *row.Datum) error {
		for i := range d.Elems {
			if err := validateDatum(t.Elem, &d.Elems[i]); err != nil {
				return err
			}
		}
		return nil
	},
}

var mapColumn = columnCodec{
	arrowType: func(t metadata.DataType) (arrow.DataType, error) {
		if t.Elem == nil || t.Value == nil {
			return nil, fmt.Errorf("MAP without key or value type")
		}
		kt, err := ArrowType(*t.Elem)
		if err != nil {
			return nil, fmt.Errorf("map key: %w", err)
		}
		vt, err := ArrowType(*t.Value)
		if err != nil {
			return nil, fmt.Errorf("map value: %w", err)
		}
		// Map keys are always NOT NULL in Fluss (MapType forces it).
		return arrow.MapOfFields(
			arrow.Field{Name: mapKeyName, Type: kt},
			arrow.Field{Name: mapValueName, Type: vt, Nullable: !t.Value.NotNull},
		), nil
	},
	appender: func(bld array.Builder, t metadata.DataType) (appender, error) {
		b := bld.(*array.MapBuilder)
		key, err := compileAppender(b.KeyBuilder(), *t.Elem)
		if err != nil {
			return nil, err
		}
		val, err := compileAppender(b.ItemBuilder(), *t.Value)
		if err != nil {
			return nil, err
		}
		return nullable(bld, func(d *row.Datum) error {
			if len(d.Elems) != len(d.Vals) {
				return fmt.Errorf("map has %d keys and %d values", len(d.Elems), len(d.Vals))
			}
			b.Append(true)
			for i := range d.Elems {
				if d.Elems[i].Null {
					return fmt.Errorf("map key is NULL")
				}
				if err := key(&d.Elems[i]); err != nil {
					return err
				}
				if err := val(&d.Vals[i]); err != nil {
					return err
				}
			}
			return nil
		}), nil
	},
	reader: func(a arrow.Array, t metadata.DataType) (getter, error) {
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
		return func(i int, d *row.Datum) {
			lo, hi := int(offs[i]), int(offs[i+1])
			d.Elems = make([]row.Datum, hi-lo)
			d.Vals = make([]row.Datum, hi-lo)
			for j := range d.Elems {
				key(lo+j, &d.Elems[j])
				val(lo+j, &d.Vals[j])
			}
		}, nil
	},
	validate: func(t *metadata.DataType, d *row.Datum) error {
		if len(d.Elems) != len(d.Vals) {
			return fmt.Errorf("map has %d keys and %d values", len(d.Elems), len(d.Vals))
		}
		for i := range d.Elems {
			if d.Elems[i].Null {
				return fmt.Errorf("map key is NULL")
			}
			if err := validateDatum(t.Elem, &d.Elems[i]); err != nil {
				return err
			}
			if err := validateDatum(t.Value, &d.Vals[i]); err != nil {
				return err
			}
		}
		return nil
	},
}

var rowColumn = columnCodec{
	arrowType: func(t metadata.DataType) (arrow.DataType, error) {
		fs := make([]arrow.Field, len(t.Fields))
		for i, f := range t.Fields {
			ft, err := ArrowType(f.Type)
			if err != nil {
				return nil, fmt.Errorf("row field %q: %w", f.Name, err)
			}
			fs[i] = arrow.Field{Name: f.Name, Type: ft, Nullable: !f.Type.NotNull}
		}
		return arrow.StructOf(fs...), nil
	},
	appender: func(bld array.Builder, t metadata.DataType) (appender, error) {
		b := bld.(*array.StructBuilder)
		fields := make([]appender, len(t.Fields))
		for i, f := range t.Fields {
			a, err := compileAppender(b.FieldBuilder(i), f.Type)
			if err != nil {
				return nil, err
			}
			fields[i] = a
		}
		return nullable(bld, func(d *row.Datum) error {
			if len(d.Elems) != len(fields) {
				return fmt.Errorf("row value has %d fields, type %d", len(d.Elems), len(fields))
			}
			b.Append(true)
			for i := range fields {
				if err := fields[i](&d.Elems[i]); err != nil {
					return err
				}
			}
			return nil
		}), nil
	},
	reader: func(a arrow.Array, t metadata.DataType) (getter, error) {
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
		return func(i int, d *row.Datum) {
			d.Elems = make([]row.Datum, len(fields))
			for k, r := range fields {
				r(i, &d.Elems[k])
			}
		}, nil
	},
	validate: func(t *metadata.DataType, d *row.Datum) error {
		if len(d.Elems) != len(t.Fields) {
			return fmt.Errorf("row value has %d fields, type %d", len(d.Elems), len(t.Fields))
		}
		for i := range t.Fields {
			if err := validateDatum(&t.Fields[i].Type, &d.Elems[i]); err != nil {
				return err
			}
		}
		return nil
	},
}

// stringCodec serves CHAR and STRING. Reading slices the array's value buffer directly
// (no per-value string conversion).
var stringCodec = columnCodec{
	arrowType: fixedType(arrow.BinaryTypes.String),
	appender: func(bld array.Builder, _ metadata.DataType) (appender, error) {
		b := bld.(*array.StringBuilder).BinaryBuilder
		return nullable(bld, func(d *row.Datum) error {
			b.Append(d.B)
			return nil
		}), nil
	},
	reader: func(a arrow.Array, t metadata.DataType) (getter, error) {
		x, ok := a.(*array.String)
		if !ok {
			return nil, typeMismatch(a, t)
		}
		offs, vb := x.ValueOffsets(), x.ValueBytes()
		return func(i int, d *row.Datum) {
			base := offs[0]
			d.B = vb[offs[i]-base : offs[i+1]-base : offs[i+1]-base]
		}, nil
	},
}

// timestampCodec serves TIMESTAMP and TIMESTAMP_LTZ, which differ only in the Arrow time zone.
var timestampCodec = columnCodec{
	arrowType: func(t metadata.DataType) (arrow.DataType, error) {
		unit, err := timestampUnit(t.Precision)
		if err != nil {
			return nil, err
		}
		tz := ""
		if t.Root == metadata.TimestampLTZ {
			tz = ltzTimeZone
		}
		return &arrow.TimestampType{Unit: unit, TimeZone: tz}, nil
	},
	appender: func(bld array.Builder, t metadata.DataType) (appender, error) {
		b := bld.(*array.TimestampBuilder)
		unit, err := timestampUnit(t.Precision)
		if err != nil {
			return nil, err
		}
		return nullable(bld, func(d *row.Datum) error {
			b.Append(arrow.Timestamp(timestampToArrow(d.I, d.Nanos, unit)))
			return nil
		}), nil
	},
	reader: func(a arrow.Array, t metadata.DataType) (getter, error) {
		x, ok := a.(*array.Timestamp)
		if !ok {
			return nil, typeMismatch(a, t)
		}
		unit := x.DataType().(*arrow.TimestampType).Unit
		return func(i int, d *row.Datum) { d.I, d.Nanos = timestampFromArrow(int64(x.Value(i)), unit) }, nil
	},
}

// codecOf returns the codec of t's root, or an error for roots this package does not know.
func codecOf(t metadata.DataType) (*columnCodec, error) {
	if int(t.Root) >= len(columnCodecs) || columnCodecs[t.Root].arrowType == nil {
		return nil, fmt.Errorf("unsupported Fluss type root %d", t.Root)
	}
	return &columnCodecs[t.Root], nil
}

// fixedType is the arrowType of roots with one Arrow type whatever their parameters.
func fixedType(at arrow.DataType) func(metadata.DataType) (arrow.DataType, error) {
	return func(metadata.DataType) (arrow.DataType, error) { return at, nil }
}

// nullable wraps the appender of non-null values with NULL handling.
func nullable(bld array.Builder, appendValue appender) appender {
	return func(d *row.Datum) error {
		if d.Null {
			bld.AppendNull()
			return nil
		}
		return appendValue(d)
	}
}

// scalarAppender is the appender of a root whose builder is always a B.
func scalarAppender[B array.Builder](appendValue func(b B, d *row.Datum) error) func(array.Builder, metadata.DataType) (appender, error) {
	return func(bld array.Builder, _ metadata.DataType) (appender, error) {
		b := bld.(B)
		return nullable(bld, func(d *row.Datum) error { return appendValue(b, d) }), nil
	}
}

// scalarReader is the reader of a root whose array is always an A.
func scalarReader[A arrow.Array](get func(x A, i int, d *row.Datum)) func(arrow.Array, metadata.DataType) (getter, error) {
	return func(a arrow.Array, t metadata.DataType) (getter, error) {
		x, ok := a.(A)
		if !ok {
			return nil, typeMismatch(a, t)
		}
		return func(i int, d *row.Datum) { get(x, i, d) }, nil
	}
}

// narrowIntCodec is the entry of an integer type narrower than BIGINT, stored as Arrow type at
// with Go type T: a value outside [lo, hi] is refused before anything is appended.
func narrowIntCodec[T int8 | int16 | int32, B interface {
	array.Builder
	Append(T)
}, A interface {
	arrow.Array
	Value(int) T
}](at arrow.DataType, lo, hi int64) columnCodec {
	return columnCodec{
		arrowType: fixedType(at),
		appender: scalarAppender(func(b B, d *row.Datum) error {
			if err := intRange(d.I, lo, hi); err != nil {
				return err
			}
			b.Append(T(d.I))
			return nil
		}),
		reader:   scalarReader(func(x A, i int, d *row.Datum) { d.I = int64(x.Value(i)) }),
		validate: func(_ *metadata.DataType, d *row.Datum) error { return intRange(d.I, lo, hi) },
	}
}

func validateInt32(_ *metadata.DataType, d *row.Datum) error {
	return intRange(d.I, math.MinInt32, math.MaxInt32)
}

// ArrowType maps one Fluss type to its Arrow type (Fluss ArrowUtils.toArrowSchema; fluss-rs
// to_arrow_type). Nullability is a property of the enclosing field, not of the result.
func ArrowType(t metadata.DataType) (arrow.DataType, error) {
	c, err := codecOf(t)
	if err != nil {
		return nil, err
	}
	return c.arrowType(t)
}

// compileAppender returns the appender of one Fluss type onto builder bld (whose Arrow type
// is ArrowType(t)).
func compileAppender(bld array.Builder, t metadata.DataType) (appender, error) {
	c, err := codecOf(t)
	if err != nil {
		return nil, err
	}
	return c.appender(bld, t)
}

// compileReader returns the reader of array a holding Fluss type t.
func compileReader(a arrow.Array, t metadata.DataType) (reader, error) {
	c, err := codecOf(t)
	if err != nil {
		return nil, err
	}
	get, err := c.reader(a, t)
	if err != nil {
		return nil, err
	}
	return func(i int, d *row.Datum) {
		if a.IsNull(i) {
			*d = row.NullDatum
			return
		}
		*d = row.Datum{}
		get(i, d)
	}, nil
}

// validateDatum checks that d can be appended as a value of t, so that RowBuilder.Append
// either appends a whole row or nothing (arrow builders cannot take back a partial row).
func validateDatum(t *metadata.DataType, d *row.Datum) error {
	if d.Null || int(t.Root) >= len(columnCodecs) || columnCodecs[t.Root].validate == nil {
		return nil
	}
	return columnCodecs[t.Root].validate(t, d)
}
