package cli

import (
	"encoding/json"
	"fmt"

	"github.com/stromdb/strom/fluss"
)

// This file exports the JSON forms of values that `strom produce` reads and `strom tail
// --json` prints, so that the REST gateway (server/rest) speaks exactly the same JSON as the
// command line: one table of forms (valueforms.go), two front ends.

// RowFromJSON converts a JSON object, decoded by encoding/json with UseNumber, into a row of
// cols in column order. Columns the object leaves out are NULL; a key naming no column is an
// error that lists the columns.
func RowFromJSON(cols []fluss.Column, obj map[string]any) (fluss.Row, error) {
	row := make(fluss.Row, len(cols))
	idx := make(map[string]int, len(cols))
	for i, c := range cols {
		idx[c.Name] = i
	}
	for k, v := range obj {
		i, ok := idx[k]
		if !ok {
			return nil, fmt.Errorf("no column %q in the table (columns: %s)", k, columnNames(cols))
		}
		val, err := fromJSON(cols[i].Type, v)
		if err != nil {
			return nil, jsonValue(k, cols[i].Type, v, err)
		}
		row[i] = val
	}
	return row, nil
}

// ValueFromJSON converts one JSON value (decoded with UseNumber) of column type t.
func ValueFromJSON(t fluss.DataType, v any) (any, error) { return fromJSON(t, v) }

// RowToJSON returns the JSON form of a row of cols: an object with the columns in order.
func RowToJSON(cols []fluss.Column, r fluss.Row) json.Marshaler { return rowJSON(cols, r) }
