package arrowlog

import (
	"github.com/apache/arrow-go/v18/arrow"

	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/internal/row"
)

// ColumnReader returns a function that fills d with element i of a, a column of Fluss type
// t, as RecordToRows would (NULL elements become row.NullDatum; string and binary values
// alias a's buffers). It lets a caller walk one column without building rows.
func ColumnReader(a arrow.Array, t metadata.DataType) (func(i int, d *row.Datum), error) {
	r, err := compileReader(a, t)
	if err != nil {
		return nil, err
	}
	return r, nil
}
