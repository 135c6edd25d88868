package rest

import (
	"context"
	"fmt"
	"net/http"

	"github.com/stromdb/strom/cmd/strom/cli"
	"github.com/stromdb/strom/fluss"
)

// keyRow converts a JSON object holding exactly the named columns into a row in that order.
func keyRow(schema fluss.Schema, names []string, obj map[string]any, what string) (fluss.Row, error) {
	if obj == nil {
		return nil, badRequest(fluss.ErrCorruptMessage, what+": want an object")
	}
	row := make(fluss.Row, len(names))
	for i, n := range names {
		v, ok := obj[n]
		if !ok {
			return nil, badRequest(fluss.ErrCorruptMessage, fmt.Sprintf("%s: column %q is missing (want %v)", what, n, names))
		}
		col := schema.Columns[schema.ColumnIndex(n)]
		val, err := cli.ValueFromJSON(col.Type, v)
		if err != nil {
			return nil, badRequest(fluss.ErrCorruptMessage, fmt.Sprintf("%s: column %q: %v", what, n, err))
		}
		row[i] = val
	}
	if len(obj) != len(names) {
		for k := range obj {
			if !contains(names, k) {
				return nil, badRequest(fluss.ErrCorruptMessage, fmt.Sprintf("%s: column %q is not a key column (want %v)", what, k, names))
			}
		}
	}
	return row, nil
}

func contains(s []string, x string) bool {
	for _, v := range s {
		if v == x {
			return true
		}
	}
	return false
}

func rowsJSON(cols []fluss.Column, rows []fluss.Row) []any {
	out := make([]any, len(rows))
	for i, r := range rows {
		if r != nil {
			out[i] = cli.RowToJSON(cols, r)
		}
	}
	return out
}

// lookup answers the rows of a primary-key table with the given primary keys, null where
// there is none, in the order of the keys.
func (g *Gateway) lookup(ctx context.Context, c *fluss.Connection, w http.ResponseWriter, r *http.Request) error {
	t, err := c.Table(ctx, tablePath(r))
	if err != nil {
		return err
	}
	if !t.HasPrimaryKey() {
		return badRequest(fluss.ErrNonPrimaryKeyTable, fmt.Sprintf("%s is a log table: lookups need a primary key", t.Path()))
	}
	var b keysBody
	if err := g.readJSON(w, r, &b); err != nil {
		return err
	}
	if len(b.Keys) == 0 {
		return badRequest(fluss.ErrCorruptMessage, `"keys" is required: [{"id": 1}, ...]`)
	}
	schema := t.Info().Schema()
	keys := make([]fluss.Row, len(b.Keys))
	for i, o := range b.Keys {
		if keys[i], err = keyRow(schema, schema.PrimaryKey, o, fmt.Sprintf("keys[%d]", i)); err != nil {
			return err
		}
	}
	lk, err := t.NewLookup().CreateLookuper()
	if err != nil {
		return err
	}
	rows := make([]fluss.Row, len(keys))
	for i, k := range keys {
		if rows[i], err = lk.Lookup(ctx, k); err != nil {
			return err
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"rows": rowsJSON(schema.Columns, rows)})
	return nil
}

type prefixBody struct {
	Columns  []string         `json:"columns"`
	Prefixes []map[string]any `json:"prefixes"`
}

// prefixLookup answers, per prefix, the rows whose primary key starts with it. The prefix
// columns default to the partition keys and the bucket key.
func (g *Gateway) prefixLookup(ctx context.Context, c *fluss.Connection, w http.ResponseWriter, r *http.Request) error {
	t, err := c.Table(ctx, tablePath(r))
	if err != nil {
		return err
	}
	if !t.HasPrimaryKey() {
		return badRequest(fluss.ErrNonPrimaryKeyTable, fmt.Sprintf("%s is a log table: lookups need a primary key", t.Path()))
	}
	var b prefixBody
	if err := g.readJSON(w, r, &b); err != nil {
		return err
	}
	if len(b.Prefixes) == 0 {
		return badRequest(fluss.ErrCorruptMessage, `"prefixes" is required: [{"user": 1}, ...]`)
	}
	info := t.Info()
	cols := b.Columns
	if len(cols) == 0 {
		cols = append(append([]string{}, info.PartitionKeys()...), info.BucketKeys()...)
	}
	schema := info.Schema()
	for _, n := range cols {
		if schema.ColumnIndex(n) < 0 {
			return badRequest(fluss.ErrInvalidTargetColumn, fmt.Sprintf("no column %q in the table", n))
		}
	}
	pl, err := t.NewLookup().LookupBy(cols...).CreatePrefixLookuper()
	if err != nil {
		return badRequest(fluss.ErrInvalidTargetColumn, err.Error())
	}
	out := make([]any, len(b.Prefixes))
	for i, o := range b.Prefixes {
		key, err := keyRow(schema, cols, o, fmt.Sprintf("prefixes[%d]", i))
		if err != nil {
			return err
		}
		rows, err := pl.Lookup(ctx, key)
		if err != nil {
			return err
		}
		out[i] = rowsJSON(schema.Columns, rows)
	}
	writeJSON(w, http.StatusOK, map[string]any{"columns": cols, "results": out})
	return nil
}
