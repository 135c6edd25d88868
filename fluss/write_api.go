package fluss

import (
	"context"
	"fmt"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/arrowlog"
	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/internal/row"
)

// AppendBuilder configures an append writer for a log table.
type AppendBuilder struct{ t *Table }

// NewAppend starts building an append writer (log tables only).
func (t *Table) NewAppend() *AppendBuilder { return &AppendBuilder{t: t} }

// CreateWriter returns a new append writer. Close it (or the Connection) when done.
func (b *AppendBuilder) CreateWriter() (*AppendWriter, error) {
	if b.t.HasPrimaryKey() {
		return nil, fmt.Errorf("fluss: table %s has a primary key: use NewUpsert", b.t.info.Path)
	}
	w, err := newWriter(b.t, false, nil)
	if err != nil {
		return nil, err
	}
	return &AppendWriter{w: w}, nil
}

// AppendWriter appends rows to a log table. Rows are batched per bucket and sent in the
// background; every call returns a WriteResult to wait for its acknowledgement. Safe for
// concurrent use.
type AppendWriter struct{ w *writer }

// Append adds one row (one value per column, see Row). It blocks only while the writer's
// buffer is full (backpressure), until ctx ends.
func (a *AppendWriter) Append(ctx context.Context, r Row) (*WriteResult, error) {
	scratch := getDatums()
	defer putDatums(scratch)
	vals, err := toDatums(a.w.t.cols, r, *scratch)
	if err != nil {
		return nil, err
	}
	*scratch = vals
	return a.w.addLog(ctx, vals)
}

// AppendRecord adds the rows of an Arrow record whose columns match the table's
// (Table.ArrowSchema). For a non-partitioned table without bucket key the record is sent as
// one batch, without per-row conversion; otherwise its rows are routed one by one. The
// returned result completes when all of its rows are acknowledged.
func (a *AppendWriter) AppendRecord(ctx context.Context, rec arrow.RecordBatch) (*WriteResult, error) {
	t := a.w.t
	if err := checkRecordSchema(t, rec); err != nil {
		return nil, err
	}
	if len(t.bucketKey) == 0 && len(t.partKeys) == 0 && a.w.logFormat == metadata.LogFormatArrow {
		if rec.NumRows() == 0 {
			return completedResult(nil), nil
		}
		size := 64
		for _, col := range rec.Columns() {
			for _, buf := range col.Data().Buffers() {
				if buf != nil {
					size += buf.Len()
				}
			}
		}
		return a.w.addRecord(ctx, rec, size)
	}
	rows, err := arrowlog.RecordToRows(rec, t.cols)
	if err != nil {
		return nil, fmt.Errorf("fluss: %w", err)
	}
	var results []*WriteResult
	for _, vals := range rows {
		r, err := a.w.addLog(ctx, vals)
		if err != nil {
			return nil, err
		}
		results = append(results, r)
	}
	return joinResults(results), nil
}

// Flush sends every buffered row now and waits until all are acknowledged; it returns the
// first write error among them.
func (a *AppendWriter) Flush(ctx context.Context) error { return a.w.flush(ctx) }

// Close drains the writer — it sends every buffered row and waits, at most the configured
// RequestTimeout, for the acknowledgements — and then stops it. It returns the first write
// error of the drain; rows still unacknowledged after the timeout fail with ErrClosed.
func (a *AppendWriter) Close() error { return a.w.drainAndClose() }

// UpsertBuilder configures an upsert writer for a primary-key table.
type UpsertBuilder struct {
	t         *Table
	names     []string
	indexes   []int
	overwrite bool
}

// NewUpsert starts building an upsert writer (primary-key tables only).
func (t *Table) NewUpsert() *UpsertBuilder { return &UpsertBuilder{t: t} }

// PartialUpdateByName restricts upserts to the named columns (which must include the primary
// key): other columns keep their stored values.
func (b *UpsertBuilder) PartialUpdateByName(columns ...string) *UpsertBuilder {
	b.names, b.indexes = columns, nil
	return b
}

// PartialUpdateByIndex is PartialUpdateByName with column indexes.
func (b *UpsertBuilder) PartialUpdateByIndex(columns ...int) *UpsertBuilder {
	b.indexes, b.names = columns, nil
	return b
}

// Overwrite makes the writer's rows replace the stored ones (their targeted columns) as they
// are, bypassing the table's merge engine and its delete behaviour: Fluss's MergeMode
// OVERWRITE (PUT_KV agg_mode 1), used to correct or restore an aggregated table. Deletes
// always remove the row.
func (b *UpsertBuilder) Overwrite() *UpsertBuilder {
	b.overwrite = true
	return b
}

// CreateWriter returns a new upsert writer. Close it (or the Connection) when done.
func (b *UpsertBuilder) CreateWriter() (*UpsertWriter, error) {
	t := b.t
	if !t.HasPrimaryKey() {
		return nil, fmt.Errorf("fluss: table %s has no primary key: use NewAppend", t.info.Path)
	}
	idx := b.indexes
	if b.names != nil {
		idx = nil
		for _, n := range b.names {
			i := t.info.desc.Schema.ColumnIndex(n)
			if i < 0 {
				return nil, fmt.Errorf("fluss: table %s has no column %q", t.info.Path, n)
			}
			idx = append(idx, i)
		}
	}
	var target []int32
	if idx != nil {
		set := map[int]bool{}
		for _, i := range idx {
			if i < 0 || i >= len(t.cols) {
				return nil, fmt.Errorf("fluss: column index %d out of range", i)
			}
			set[i] = true
			target = append(target, int32(i))
		}
		for _, p := range t.pk {
			if !set[p] {
				return nil, fmt.Errorf("fluss: partial update columns must include primary-key column %s", t.cols[p].Name)
			}
		}
	}
	w, err := newWriter(t, true, target)
	if err != nil {
		return nil, err
	}
	if b.overwrite {
		w.aggMode = proto.Int32(aggModeOverwrite)
	}
	return &UpsertWriter{w: w, target: idx}, nil
}

// UpsertWriter writes rows to a primary-key table: Upsert inserts or replaces by key, Delete
// removes a key. Safe for concurrent use.
type UpsertWriter struct {
	w      *writer
	target []int // partial-update columns, nil for full rows
}

// Upsert inserts or updates a row (one value per column). For a partial-update writer only
// the primary key and target columns are used; the others may be nil.
func (u *UpsertWriter) Upsert(ctx context.Context, r Row) (*WriteResult, error) {
	scratch := getDatums()
	defer putDatums(scratch)
	vals, err := toDatums(u.w.t.cols, u.masked(r), *scratch)
	if err != nil {
		return nil, err
	}
	*scratch = vals
	return u.w.addKv(ctx, vals, false)
}

// Delete deletes the row with the primary key of r. r has one value per column; only the
// primary-key (and partition) columns are used.
func (u *UpsertWriter) Delete(ctx context.Context, r Row) (*WriteResult, error) {
	t := u.w.t
	if len(r) != len(t.cols) {
		return nil, fmt.Errorf("fluss: row has %d values, the table has %d columns", len(r), len(t.cols))
	}
	vals := make([]row.Datum, len(r))
	for i := range vals {
		vals[i] = row.NullDatum
	}
	for _, p := range t.pk {
		d, err := toDatum(t.cols[p].Type, r[p])
		if err != nil {
			return nil, fmt.Errorf("fluss: column %s: %w", t.cols[p].Name, err)
		}
		vals[p] = d
	}
	return u.w.addKv(ctx, vals, true)
}

// UpsertRecord upserts every row of an Arrow record whose columns match the table's.
func (u *UpsertWriter) UpsertRecord(ctx context.Context, rec arrow.RecordBatch) (*WriteResult, error) {
	if err := checkRecordSchema(u.w.t, rec); err != nil {
		return nil, err
	}
	rows, err := arrowlog.RecordToRows(rec, u.w.t.cols)
	if err != nil {
		return nil, fmt.Errorf("fluss: %w", err)
	}
	var results []*WriteResult
	for _, vals := range rows {
		r, err := u.w.addKv(ctx, vals, false)
		if err != nil {
			return nil, err
		}
		results = append(results, r)
	}
	return joinResults(results), nil
}

// masked nulls the non-target columns of a partial-update row.
func (u *UpsertWriter) masked(r Row) Row {
	if u.target == nil || len(r) != len(u.w.t.cols) {
		return r
	}
	out := make(Row, len(r))
	for _, i := range u.target {
		out[i] = r[i]
	}
	return out
}

// Flush sends every buffered write now and waits until all are acknowledged; it returns the
// first write error among them.
func (u *UpsertWriter) Flush(ctx context.Context) error { return u.w.flush(ctx) }

// Close drains the writer — it sends every buffered write and waits, at most the configured
// RequestTimeout, for the acknowledgements — and then stops it. It returns the first write
// error of the drain; writes still unacknowledged after the timeout fail with ErrClosed.
func (u *UpsertWriter) Close() error { return u.w.drainAndClose() }

// checkRecordSchema verifies that rec's column types match the table's Arrow schema.
func checkRecordSchema(t *Table, rec arrow.RecordBatch) error {
	want := t.arrowSchema
	if int(rec.NumCols()) != want.NumFields() {
		return fmt.Errorf("fluss: record has %d columns, table %s has %d", rec.NumCols(), t.info.Path, want.NumFields())
	}
	for i := range want.NumFields() {
		if !arrow.TypeEqual(rec.Schema().Field(i).Type, want.Field(i).Type) {
			return fmt.Errorf("fluss: record column %d has type %s, table column %s is %s", i, rec.Schema().Field(i).Type, want.Field(i).Name, want.Field(i).Type)
		}
	}
	return nil
}

// completedResult returns an already completed result.
func completedResult(err error) *WriteResult {
	b := &writeBatch{done: make(chan struct{}), err: err}
	close(b.done)
	return &WriteResult{b: b}
}

// joinResults returns a result that completes when all of rs have, with the first error.
func joinResults(rs []*WriteResult) *WriteResult {
	if len(rs) == 1 {
		return rs[0]
	}
	b := &writeBatch{done: make(chan struct{})}
	go func() {
		seen := map[*writeBatch]bool{}
		for _, r := range rs {
			if seen[r.b] {
				continue
			}
			seen[r.b] = true
			<-r.b.done
			if r.b.err != nil && b.err == nil {
				b.err = r.b.err
			}
		}
		close(b.done)
	}()
	return &WriteResult{b: b}
}

// datumPool holds the per-call row conversions of Append and Upsert. A row's datums live
// only for the call: addLog and addKv copy or encode every value (into Arrow builders, row
// bytes, keys, partition names) before they return, and never keep the slice. Without the
// pool each row cost a growing slice of 96-byte datums (five allocations and copies for ten
// columns), the largest CPU item of the Go client's append path (docs/benchmarks.md).
var datumPool = sync.Pool{New: func() any { s := make([]row.Datum, 0, 16); return &s }}

func getDatums() *[]row.Datum { return datumPool.Get().(*[]row.Datum) }

// putDatums clears the values (so that the pool pins no caller's byte slices) and returns
// the slice to the pool.
func putDatums(s *[]row.Datum) {
	clear((*s)[:cap(*s)])
	*s = (*s)[:0]
	datumPool.Put(s)
}
