package arrowlog

import (
	"fmt"
	"math"

	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/internal/row"
)

// validateDatum checks that d can be appended as a value of t, so that RowBuilder.Append
// either appends a whole row or nothing (arrow builders cannot take back a partial row).
func validateDatum(t *metadata.DataType, d *row.Datum) error {
	if d.Null {
		return nil
	}
	switch t.Root {
	case metadata.TinyInt:
		return intRange(d.I, math.MinInt8, math.MaxInt8)
	case metadata.SmallInt:
		return intRange(d.I, math.MinInt16, math.MaxInt16)
	case metadata.Int, metadata.Date:
		return intRange(d.I, math.MinInt32, math.MaxInt32)
	case metadata.Binary:
		if len(d.B) != t.Length {
			return fmt.Errorf("BINARY(%d) value has %d bytes", t.Length, len(d.B))
		}
	case metadata.Decimal:
		if t.Precision > row.MaxCompactDecimalPrecision && (len(d.B) == 0 || len(d.B) > 16) {
			return fmt.Errorf("decimal unscaled value of %d bytes", len(d.B))
		}
	case metadata.Array:
		for i := range d.Elems {
			if err := validateDatum(t.Elem, &d.Elems[i]); err != nil {
				return err
			}
		}
	case metadata.Map:
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
	case metadata.Row:
		if len(d.Elems) != len(t.Fields) {
			return fmt.Errorf("row value has %d fields, type %d", len(d.Elems), len(t.Fields))
		}
		for i := range t.Fields {
			if err := validateDatum(&t.Fields[i].Type, &d.Elems[i]); err != nil {
				return err
			}
		}
	}
	return nil
}
