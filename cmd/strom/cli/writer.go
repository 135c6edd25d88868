package cli

import (
	"context"
	"fmt"
	"slices"

	"github.com/stromdb/strom/fluss"
)

// rowWriter appends to a log table or upserts into a primary-key table, and keeps track of
// which input rows are known written, so that a stopped load can say where to resume.
//
// Invariant: every input row before pending[0].row that needed a write was acknowledged;
// pending holds the unacknowledged (or unchecked) writes in input order.
type rowWriter struct {
	append  *fluss.AppendWriter
	upsert  *fluss.UpsertWriter
	pending []pendingWrite
	reapAt  int // reap when pending reaches this length
	// createPartition, when set, creates the partition of row (--create-partitions).
	createPartition func(row fluss.Row) error
}

// pendingWrite is the write of input row number row (0-based), from line.
type pendingWrite struct {
	res  *fluss.WriteResult
	row  int64
	line int
}

// writeError is a write of the input row at line that failed, synchronously (the client
// refused the row) or as the first failed acknowledgement found.
type writeError struct {
	row  int64
	line int
	err  error
}

func (e *writeError) Error() string {
	return fmt.Sprintf("the write of line %d failed: %v", e.line, plainClientError{e.err})
}
func (e *writeError) Unwrap() error { return e.err }

// partitionCreator returns a function that creates the partition a row belongs to.
func partitionCreator(ctx context.Context, admin *fluss.Admin, t *fluss.Table) func(fluss.Row) error {
	info := t.Info()
	schema := info.Schema()
	keys := info.PartitionKeys()
	return func(row fluss.Row) error {
		spec := make(map[string]string, len(keys))
		for _, k := range keys {
			i := schema.ColumnIndex(k)
			if row[i] == nil {
				return fmt.Errorf("partition column %s is NULL", k)
			}
			spec[k] = textOf(toJSON(schema.Columns[i].Type, row[i]))
		}
		return admin.CreatePartition(ctx, t.Path(), spec, true)
	}
}

func newRowWriter(t *fluss.Table) (*rowWriter, error) {
	if t.HasPrimaryKey() {
		u, err := t.NewUpsert().CreateWriter()
		return &rowWriter{upsert: u}, err
	}
	w, err := t.NewAppend().CreateWriter()
	return &rowWriter{append: w}, err
}

// write writes input row number idx (from line). An error is a *writeError.
func (w *rowWriter) write(ctx context.Context, idx int64, line int, op changeOp, row fluss.Row) error {
	var res *fluss.WriteResult
	var err error
	switch {
	case w.append != nil && op == opDelete:
		return &writeError{idx, line, fmt.Errorf("a log table cannot delete rows")}
	case w.append != nil:
		res, err = w.append.Append(ctx, row)
	case op == opDelete:
		res, err = w.upsert.Delete(ctx, row)
	default:
		res, err = w.upsert.Upsert(ctx, row)
	}
	if fluss.CodeOf(err) == fluss.ErrPartitionNotExists && w.createPartition != nil {
		if err := w.createPartition(row); err != nil {
			return &writeError{idx, line, fmt.Errorf("create partition: %w", err)}
		}
		return w.write(ctx, idx, line, op, row)
	}
	if err != nil {
		return &writeError{idx, line, err}
	}
	w.pending = append(w.pending, pendingWrite{res: res, row: idx, line: line})
	if len(w.pending) >= w.reapAt {
		if err := w.reap(); err != nil {
			return err
		}
		w.reapAt = len(w.pending) + 4096
	}
	return nil
}

// reap checks the oldest writes, in order, up to the first one still unacknowledged, and
// forgets the acknowledged ones. Batches complete roughly in write order, so this keeps
// pending near the writes in flight at an amortised constant cost per row. A failed write
// stays in pending (settle counts from it) and is returned.
func (w *rowWriter) reap() error {
	n := 0
	for _, p := range w.pending {
		select {
		case <-p.res.Done():
			if err := p.res.Wait(context.Background()); err != nil {
				w.pending = slices.Delete(w.pending, 0, n)
				return &writeError{p.row, p.line, err}
			}
			n++
			continue
		default:
		}
		break
	}
	w.pending = slices.Delete(w.pending, 0, n)
	return nil
}

// flush waits for every write and returns the first failure (a *writeError), or ctx's error
// when it ended first (the writes' outcome is then unknown: settle finds it out).
func (w *rowWriter) flush(ctx context.Context) error {
	if w.append != nil {
		_ = w.append.Flush(ctx)
	} else {
		_ = w.upsert.Flush(ctx)
	}
	for _, p := range w.pending {
		if err := p.res.Wait(ctx); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return &writeError{p.row, p.line, err}
		}
	}
	w.pending = w.pending[:0]
	return nil
}

// written is what a stopped load left in the table.
type written struct {
	prefix int64       // input rows 0..prefix-1 are all written (or needed no write)
	later  int64       // rows after prefix that were written as well
	failed *writeError // the first failed write in input order, if any
}

// settle waits for the outstanding writes after a load stopped at input row stop (rows from
// stop on were not written) and reports what is in the table. A write still unanswered when
// ctx ends counts as failed.
func (w *rowWriter) settle(ctx context.Context, stop int64) written {
	if w.append != nil {
		_ = w.append.Flush(ctx)
	} else {
		_ = w.upsert.Flush(ctx)
	}
	out := written{prefix: stop}
	for _, p := range w.pending {
		err := p.res.Wait(ctx)
		switch {
		case out.failed == nil && err != nil:
			out.failed = &writeError{p.row, p.line, err}
			out.prefix = p.row
		case out.failed != nil && err == nil:
			out.later++
		}
	}
	w.pending = w.pending[:0]
	return out
}

func (w *rowWriter) close() {
	if w.append != nil {
		w.append.Close()
	} else {
		w.upsert.Close()
	}
}
