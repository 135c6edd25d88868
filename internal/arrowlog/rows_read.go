package arrowlog

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/internal/row"
)

// reader fills d with element i of the array it was compiled for.
type reader func(i int, d *row.Datum)

// RecordToRows converts a record whose columns have the given Fluss types to decoded rows.
// String, binary and fixed-size binary values alias the record's buffers (copy them before
// releasing the record). Top-level Datums come from one allocation; nested values allocate
// their element slices.
func RecordToRows(rec arrow.RecordBatch, cols []metadata.Column) ([][]row.Datum, error) {
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
