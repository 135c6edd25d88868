package arrowlog

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/stromdb/strom/internal/metadata"
)

// Names of the synthetic child fields. They never travel on the wire (there is no Schema
// message); these are the names the Rust client (fluss-rs, pyfluss) gives them, so Arrow
// records handed to Go users look like the ones Python users see.
const (
	listItemName   = "item"
	mapEntriesName = "entries"
	mapKeyName     = "key"
	mapValueName   = "value"
	// ltzTimeZone is the zone the Rust client attaches to TIMESTAMP_LTZ columns (Java
	// attaches none). The zone does not change the physical layout.
	ltzTimeZone = "UTC"
)

// ArrowSchema returns the Arrow schema of a Fluss row type: one field per column, in column
// order, named after the column and nullable unless the column type is NOT NULL.
func ArrowSchema(cols []metadata.Column) (*arrow.Schema, error) {
	fields := make([]arrow.Field, len(cols))
	for i, c := range cols {
		t, err := ArrowType(c.Type)
		if err != nil {
			return nil, fmt.Errorf("arrowlog: column %q: %w", c.Name, err)
		}
		fields[i] = arrow.Field{Name: c.Name, Type: t, Nullable: !c.Type.NotNull}
	}
	return arrow.NewSchema(fields, nil), nil
}

// ArrowType maps one Fluss type to its Arrow type (Fluss ArrowUtils.toArrowSchema; fluss-rs
// to_arrow_type). Nullability is a property of the enclosing field, not of the result.
func ArrowType(t metadata.DataType) (arrow.DataType, error) {
	switch t.Root {
	case metadata.Boolean:
		return arrow.FixedWidthTypes.Boolean, nil
	case metadata.TinyInt:
		return arrow.PrimitiveTypes.Int8, nil
	case metadata.SmallInt:
		return arrow.PrimitiveTypes.Int16, nil
	case metadata.Int:
		return arrow.PrimitiveTypes.Int32, nil
	case metadata.BigInt:
		return arrow.PrimitiveTypes.Int64, nil
	case metadata.Float:
		return arrow.PrimitiveTypes.Float32, nil
	case metadata.Double:
		return arrow.PrimitiveTypes.Float64, nil
	case metadata.Char, metadata.String:
		return arrow.BinaryTypes.String, nil
	case metadata.Binary:
		if t.Length < 1 {
			return nil, fmt.Errorf("BINARY length %d must be positive", t.Length)
		}
		return &arrow.FixedSizeBinaryType{ByteWidth: t.Length}, nil
	case metadata.Bytes:
		return arrow.BinaryTypes.Binary, nil
	case metadata.Decimal:
		if t.Precision < 1 || t.Precision > 38 || t.Scale < 0 || t.Scale > t.Precision {
			return nil, fmt.Errorf("invalid DECIMAL(%d, %d)", t.Precision, t.Scale)
		}
		return &arrow.Decimal128Type{Precision: int32(t.Precision), Scale: int32(t.Scale)}, nil
	case metadata.Date:
		return arrow.FixedWidthTypes.Date32, nil
	case metadata.Time:
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
	case metadata.Timestamp, metadata.TimestampLTZ:
		unit, err := timestampUnit(t.Precision)
		if err != nil {
			return nil, err
		}
		tz := ""
		if t.Root == metadata.TimestampLTZ {
			tz = ltzTimeZone
		}
		return &arrow.TimestampType{Unit: unit, TimeZone: tz}, nil
	case metadata.Array:
		if t.Elem == nil {
			return nil, fmt.Errorf("ARRAY without element type")
		}
		et, err := ArrowType(*t.Elem)
		if err != nil {
			return nil, fmt.Errorf("array element: %w", err)
		}
		return arrow.ListOfField(arrow.Field{Name: listItemName, Type: et, Nullable: !t.Elem.NotNull}), nil
	case metadata.Map:
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
	case metadata.Row:
		fs := make([]arrow.Field, len(t.Fields))
		for i, f := range t.Fields {
			ft, err := ArrowType(f.Type)
			if err != nil {
				return nil, fmt.Errorf("row field %q: %w", f.Name, err)
			}
			fs[i] = arrow.Field{Name: f.Name, Type: ft, Nullable: !f.Type.NotNull}
		}
		return arrow.StructOf(fs...), nil
	}
	return nil, fmt.Errorf("unsupported Fluss type root %d", t.Root)
}

func timestampUnit(p int) (arrow.TimeUnit, error) {
	switch {
	case p == 0:
		return arrow.Second, nil
	case p >= 1 && p <= 3:
		return arrow.Millisecond, nil
	case p >= 4 && p <= 6:
		return arrow.Microsecond, nil
	case p >= 7 && p <= 9:
		return arrow.Nanosecond, nil
	}
	return 0, fmt.Errorf("invalid TIMESTAMP precision %d", p)
}
