package rest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/ipc"

	"github.com/stromdb/strom/cmd/strom/cli"
	"github.com/stromdb/strom/fluss"
)

// arrowStream is the media type of an Arrow IPC stream body.
const arrowStream = "application/vnd.apache.arrow.stream"

type rowsBody struct {
	Rows []map[string]any `json:"rows"`
	// Columns, for a primary-key table, makes the write a partial update of these columns
	// (the primary key among them): the others keep their values.
	Columns []string `json:"columns"`
}

// decodeRows converts every row of the body before anything is written, so that a bad row
// fails the request without writing the rows before it.
func decodeRows(cols []fluss.Column, objs []map[string]any, what string) ([]fluss.Row, error) {
	if len(objs) == 0 {
		return nil, badRequest(fluss.ErrCorruptMessage, fmt.Sprintf(`"%s" is required and must not be empty`, what))
	}
	rows := make([]fluss.Row, len(objs))
	for i, o := range objs {
		if o == nil {
			return nil, badRequest(fluss.ErrCorruptMessage, fmt.Sprintf("%s[%d]: want an object", what, i))
		}
		row, err := cli.RowFromJSON(cols, o)
		if err != nil {
			return nil, badRequest(fluss.ErrCorruptMessage, fmt.Sprintf("%s[%d]: %v", what, i, err))
		}
		rows[i] = row
	}
	return rows, nil
}

// writer is what the append and upsert writers have in common here.
type writer interface {
	Flush(ctx context.Context) error
	Close() error
}

// writeRows appends (log table) or upserts (primary-key table) the rows of the body and
// answers once every row is acknowledged (writer.acks as the client's default, "all").
func (g *Gateway) writeRows(ctx context.Context, c *fluss.Connection, w http.ResponseWriter, r *http.Request) error {
	t, err := c.Table(ctx, tablePath(r))
	if err != nil {
		return err
	}
	if strings.HasPrefix(r.Header.Get("Content-Type"), arrowStream) {
		return g.writeArrow(ctx, t, w, r)
	}
	var b rowsBody
	if err := g.readJSON(w, r, &b); err != nil {
		return err
	}
	rows, err := decodeRows(t.Info().Schema().Columns, b.Rows, "rows")
	if err != nil {
		return err
	}
	if len(b.Columns) > 0 {
		if !t.HasPrimaryKey() {
			return badRequest(fluss.ErrNonPrimaryKeyTable, `"columns" (a partial update) needs a primary-key table`)
		}
		for i, o := range b.Rows {
			for k := range o {
				if !slices.Contains(b.Columns, k) {
					return badRequest(fluss.ErrInvalidTargetColumn, fmt.Sprintf("rows[%d]: column %q is not one of \"columns\" %v", i, k, b.Columns))
				}
			}
		}
	} else {
		// Whole rows are checked here (NOT NULL columns); a partial row leaves its other
		// columns out, so only the server can judge it.
		for i, row := range rows {
			if err := t.CheckRow(row); err != nil {
				return badRequest(fluss.ErrCorruptMessage, fmt.Sprintf("rows[%d]: %v", i, err))
			}
		}
	}
	var results []*fluss.WriteResult
	var wr writer
	var write func(context.Context, fluss.Row) (*fluss.WriteResult, error)
	if t.HasPrimaryKey() {
		ub := t.NewUpsert()
		if len(b.Columns) > 0 {
			ub = ub.PartialUpdateByName(b.Columns...)
		}
		u, err := ub.CreateWriter()
		if err != nil {
			return badRequest(fluss.ErrInvalidTargetColumn, err.Error())
		}
		wr, write = u, u.Upsert
	} else {
		a, err := t.NewAppend().CreateWriter()
		if err != nil {
			return err
		}
		wr, write = a, a.Append
	}
	defer wr.Close()
	for _, row := range rows {
		h, err := write(ctx, row)
		if err != nil {
			return err
		}
		results = append(results, h)
	}
	if err := waitAll(ctx, wr, results); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"rows_written": len(rows)})
	return nil
}

func waitAll(ctx context.Context, wr writer, results []*fluss.WriteResult) error {
	if err := wr.Flush(ctx); err != nil {
		return err
	}
	var errs []error
	for _, h := range results {
		if err := h.Wait(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%d of %d rows failed: %w", len(errs), len(results), errs[0])
	}
	return nil
}

// writeArrow writes the record batches of an Arrow IPC stream body, whose schema must be
// the table's (fluss.Table.ArrowSchema).
func (g *Gateway) writeArrow(ctx context.Context, t *fluss.Table, w http.ResponseWriter, r *http.Request) error {
	body := http.MaxBytesReader(w, r.Body, g.opts.MaxBodyBytes)
	rd, err := ipc.NewReader(body)
	if err != nil {
		return arrowBodyError(err, g.opts.MaxBodyBytes)
	}
	defer rd.Release()
	var wr writer
	var results []*fluss.WriteResult
	n := 0
	if t.HasPrimaryKey() {
		u, err := t.NewUpsert().CreateWriter()
		if err != nil {
			return err
		}
		defer u.Close()
		wr = u
		for rd.Next() {
			rec := rd.RecordBatch()
			h, err := u.UpsertRecord(ctx, rec)
			if err != nil {
				return badRequest(fluss.ErrCorruptMessage, "Arrow record batch: "+err.Error())
			}
			results = append(results, h)
			n += int(rec.NumRows())
		}
	} else {
		a, err := t.NewAppend().CreateWriter()
		if err != nil {
			return err
		}
		defer a.Close()
		wr = a
		for rd.Next() {
			rec := rd.RecordBatch()
			h, err := a.AppendRecord(ctx, rec)
			if err != nil {
				return badRequest(fluss.ErrCorruptMessage, "Arrow record batch: "+err.Error())
			}
			results = append(results, h)
			n += int(rec.NumRows())
		}
	}
	if err := rd.Err(); err != nil {
		if werr := waitAll(ctx, wr, results); werr != nil {
			return werr
		}
		return fmt.Errorf("after %d rows were written: %w", n, arrowBodyError(err, g.opts.MaxBodyBytes))
	}
	if err := waitAll(ctx, wr, results); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"rows_written": n})
	return nil
}

func arrowBodyError(err error, limit int64) error {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return &apiError{status: http.StatusRequestEntityTooLarge, code: fluss.ErrRecordTooLarge,
			msg: fmt.Sprintf("request body larger than %d bytes", limit)}
	}
	return badRequest(fluss.ErrCorruptMessage, "not an Arrow IPC stream: "+err.Error())
}

type keysBody struct {
	Keys []map[string]any `json:"keys"`
}

// deleteRows deletes the rows of a primary-key table with the given keys (objects with the
// primary-key columns).
func (g *Gateway) deleteRows(ctx context.Context, c *fluss.Connection, w http.ResponseWriter, r *http.Request) error {
	t, err := c.Table(ctx, tablePath(r))
	if err != nil {
		return err
	}
	if !t.HasPrimaryKey() {
		return badRequest(fluss.ErrNonPrimaryKeyTable, fmt.Sprintf("%s is a log table: rows cannot be deleted", t.Path()))
	}
	var b keysBody
	if err := g.readJSON(w, r, &b); err != nil {
		return err
	}
	rows, err := decodeRows(t.Info().Schema().Columns, b.Keys, "keys")
	if err != nil {
		return err
	}
	u, err := t.NewUpsert().CreateWriter()
	if err != nil {
		return err
	}
	defer u.Close()
	var results []*fluss.WriteResult
	for _, row := range rows {
		h, err := u.Delete(ctx, row)
		if err != nil {
			return badRequest(fluss.ErrCorruptMessage, err.Error())
		}
		results = append(results, h)
	}
	if err := waitAll(ctx, u, results); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"rows_deleted": len(rows)})
	return nil
}
