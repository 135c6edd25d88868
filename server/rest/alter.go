package rest

import (
	"context"
	"fmt"
	"net/http"

	"github.com/stromdb/strom/cmd/strom/cli"
	"github.com/stromdb/strom/fluss"
)

// alterTableBody is an ALTER TABLE: options to set and to reset, and nullable columns to
// append. Every change goes into one ALTER_TABLE request, so the server applies all or none.
type alterTableBody struct {
	Set               map[string]string `json:"set"`
	Reset             []string          `json:"reset"`
	AddColumns        []columnJSON      `json:"add_columns"`
	IgnoreIfNotExists bool              `json:"ignore_if_not_exists"`
}

// alterTable answers PATCH .../tables/{table}: the table's info after the change.
func (g *Gateway) alterTable(ctx context.Context, c *fluss.Connection, w http.ResponseWriter, r *http.Request) error {
	var b alterTableBody
	if err := g.readJSON(w, r, &b); err != nil {
		return err
	}
	var changes []fluss.TableChange
	for k, v := range b.Set {
		changes = append(changes, fluss.SetOption(k, v))
	}
	for _, k := range b.Reset {
		if _, both := b.Set[k]; both {
			return badRequest(fluss.ErrInvalidAlterTable, fmt.Sprintf("option %q is both set and reset", k))
		}
		changes = append(changes, fluss.ResetOption(k))
	}
	for _, cj := range b.AddColumns {
		if cj.Name == "" {
			return badRequest(fluss.ErrInvalidAlterTable, `a column of "add_columns" has no "name"`)
		}
		t, err := cli.ParseType(cj.Type)
		if err != nil {
			return badRequest(fluss.ErrInvalidAlterTable, fmt.Sprintf("column %q: %v", cj.Name, err))
		}
		if !t.IsNullable() { // the server's answer would be an UNKNOWN_SERVER_ERROR, a 500
			return badRequest(fluss.ErrInvalidAlterTable, fmt.Sprintf("column %q: an added column must be nullable (rows written before read NULL)", cj.Name))
		}
		changes = append(changes, fluss.AddColumn(cj.Name, t, cj.Comment))
	}
	if len(changes) == 0 {
		return badRequest(fluss.ErrInvalidAlterTable, `nothing to change: give "set", "reset" or "add_columns"`)
	}
	path := tablePath(r)
	if err := c.Admin().AlterTable(ctx, path, changes, b.IgnoreIfNotExists); err != nil {
		return err
	}
	info, err := c.Admin().GetTableInfo(ctx, path)
	if err != nil {
		if b.IgnoreIfNotExists && fluss.CodeOf(err) == fluss.ErrTableNotExist {
			w.WriteHeader(http.StatusNoContent)
			return nil
		}
		return err
	}
	writeJSON(w, http.StatusOK, tableJSON(info))
	return nil
}
