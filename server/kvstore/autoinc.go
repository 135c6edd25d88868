package kvstore

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/internal/row"
)

// Auto-increment columns (docs/primary-keys.md §2.9), as Fluss's kv/autoinc/ package does
// them: a table has at most one, an INT or BIGINT column outside the primary key. The value is
// assigned when a key is inserted and never changed afterwards: updates, partial or not, take
// it from the stored row. Ids come from one counter per table and column in the metadata
// store (SequenceSource), which hands each bucket leader ranges of
// table.auto-increment.cache-size ids; a tablet uses its range in order and fetches the next
// one when it is used up.
//
// Invariants: the counter only grows and a range belongs to one tablet, so no id is handed
// out twice in a table's life, whatever fails or restarts (a range a tablet did not use up
// is lost: ids have gaps, as in Fluss). The ids a bucket stored are in its changelog, so
// recovery and followers rebuild them with the rows.

// SequenceSource hands out ranges of auto-increment values (Fluss's SequenceIDCounter, a
// ZooKeeper counter there). Allocate reserves the next n values of the counter of the table's
// column and returns the value before them: the caller owns prev+1 … prev+n. The first
// Allocate of a counter returns 0, so ids start at 1.
type SequenceSource interface {
	Allocate(ctx context.Context, tableID int64, columnID int32, n int64) (prev int64, err error)
}

// sequenceTimeout bounds one range allocation: it runs while the bucket's writes are staged
// (under mu), once per cache-size ids.
const sequenceTimeout = 10 * time.Second

// autoInc is the compiled auto-increment column of a table (col < 0: none).
type autoInc struct {
	col   int   // position in the latest schema
	id    int32 // column id: the counter is per column id, as Fluss's
	name  string
	max   int64 // largest value the column's type holds
	cache int64 // table.auto-increment.cache-size, at least 1
}

// compileAutoInc finds the auto-increment column of t's latest schema.
func compileAutoInc(t Table) (autoInc, error) {
	a := autoInc{col: -1}
	if len(t.Schema.AutoIncrement) == 0 {
		return a, nil
	}
	if len(t.Schema.AutoIncrement) > 1 {
		return a, fmt.Errorf("kvstore: table %d: only one auto-increment column is supported", t.ID)
	}
	a.name = t.Schema.AutoIncrement[0]
	a.col = t.Schema.ColumnIndex(a.name)
	if a.col < 0 {
		return a, fmt.Errorf("kvstore: table %d: auto-increment column %q not in the schema", t.ID, a.name)
	}
	c := t.Schema.Columns[a.col]
	a.id = c.ID
	switch c.Type.Root {
	case metadata.Int:
		a.max = math.MaxInt32
	case metadata.BigInt:
		a.max = math.MaxInt64
	default:
		return a, fmt.Errorf("kvstore: table %d: auto-increment column %q must be INT or BIGINT", t.ID, a.name)
	}
	// Fluss does not check the option; a range of fewer than one id would hand out nothing.
	a.cache = max(t.Config.AutoIncrementCache, 1)
	return a, nil
}

// checkTargets refuses a write that would set the auto-increment column (Java
// PerSchemaAutoIncrementUpdater.validateTargetColumns): a whole-row write, or target columns
// that include it. Clients must write the other columns as a partial update.
func (a *autoInc) checkTargets(targets []int32) error {
	if a.col < 0 {
		return nil
	}
	if len(targets) == 0 {
		return ferr.New(ferr.InvalidTargetColumn, "The table contains an auto-increment column [%s], but update target columns are not explicitly specified. "+
			"Please specify the update target columns and exclude the auto-increment column from them.", a.name)
	}
	for _, c := range targets {
		if int(c) == a.col {
			return ferr.New(ferr.InvalidTargetColumn, "Auto-increment column [%s] at index %d must not be included in target columns.", a.name, a.col)
		}
	}
	return nil
}

// sequence is a tablet's current range of auto-increment ids: next … end (empty when next >
// end). Guarded by the tablet's mu.
type sequence struct {
	next, end int64
}

// assignAutoInc sets the auto-increment column of r, a row about to be inserted, to the next
// id of the tablet's range, fetching a new range when it is used up. Caller holds mu.
func (rw *rowWriter) assignAutoInc(r []row.Datum) error {
	t := rw.t
	a := &t.tbl.autoInc
	if t.seq.next > t.seq.end {
		src := t.store.seqs
		if src == nil {
			return ferr.New(ferr.UnknownServerError, "Failed to fetch auto-increment values, table_id=%d, column_name=%s: no sequence source", t.tbl.ID, a.name)
		}
		ctx, cancel := context.WithTimeout(context.Background(), sequenceTimeout)
		prev, err := src.Allocate(ctx, t.tbl.ID, a.id, a.cache)
		cancel()
		if err != nil {
			return ferr.New(ferr.UnknownServerError, "Failed to fetch auto-increment values, table_id=%d, column_name=%s: %v", t.tbl.ID, a.name, err)
		}
		t.seq = sequence{next: prev + 1, end: prev + a.cache}
		t.store.log.Info("fetched auto-increment values", "bucket", t.bucket, "column", a.name, "from", t.seq.next, "to", t.seq.end)
	}
	id := t.seq.next
	if id > a.max || id < 1 {
		// Java SequenceOverflowException, which has no error code of its own.
		return ferr.New(ferr.UnknownServerError, "Reached maximum value of sequence \"<%s>\" (%d).", a.name, a.max)
	}
	t.seq.next++
	r[a.col] = row.Datum{I: id}
	return nil
}
