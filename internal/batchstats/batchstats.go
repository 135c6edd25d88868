// Package batchstats computes per-column statistics of a log batch — row count, and per
// top-level column a null count and, for ordered types, the minimum and maximum non-NULL
// value — and encodes them compactly. The tablet server computes them for every batch it
// appends, whatever client wrote it, and FETCH_LOG prunes with them (internal/predicate).
//
// Invariant: for every column listed with HasMinMax, Min <= v <= Max (in the order of
// predicate's compare) for every non-NULL value v of the column in the batch, and
// NullCount is exact. Floating-point columns holding a NaN list no min/max, and a zero
// bound is widened to the nearest non-zero value so that -0.0 and +0.0 are both inside it
// whichever way a client orders them.
package batchstats

import (
	"bytes"
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/stromdb/strom/internal/arrowlog"
	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/internal/predicate"
	"github.com/stromdb/strom/internal/record"
	"github.com/stromdb/strom/internal/row"
)

// Column is the statistics of one top-level column.
type Column struct {
	FieldID   int32
	Type      metadata.DataType
	NullCount int64
	HasMinMax bool
	Min, Max  row.Datum
}

// Batch is the statistics of one log batch, written under schema SchemaID.
type Batch struct {
	SchemaID int16
	Rows     int64
	// HighestFieldID is the batch schema's highest field id: a column with a larger id was
	// added after the batch was written and is NULL in every row of it.
	HighestFieldID int32
	Columns        []Column
}

// RowCount implements predicate.Stats.
func (b *Batch) RowCount() int64 { return b.Rows }

// Column implements predicate.Stats: the column with that field id, a column added after
// the batch was written as all NULL, anything else unknown.
func (b *Batch) Column(fieldID int32) (predicate.ColumnStats, bool) {
	for i := range b.Columns {
		if c := &b.Columns[i]; c.FieldID == fieldID {
			return predicate.ColumnStats{Type: c.Type, NullCount: c.NullCount, HasMinMax: c.HasMinMax, Min: c.Min, Max: c.Max}, true
		}
	}
	if fieldID > b.HighestFieldID {
		return predicate.ColumnStats{NullCount: b.Rows}, true
	}
	return predicate.ColumnStats{}, false
}

// Ordered reports whether columns of type root r get a min and max.
func Ordered(r metadata.TypeRoot) bool {
	switch r {
	case metadata.Boolean, metadata.TinyInt, metadata.SmallInt, metadata.Int, metadata.BigInt,
		metadata.Float, metadata.Double, metadata.Char, metadata.String, metadata.Binary,
		metadata.Bytes, metadata.Decimal, metadata.Date, metadata.Time, metadata.Timestamp,
		metadata.TimestampLTZ:
		return true
	}
	return false
}

// Compute returns the statistics of an ARROW-format batch written under schema (the schema
// of b.SchemaID()). Columns of unordered types (ARRAY, MAP, ROW) get a null count only.
func Compute(b record.Batch, schema metadata.Schema, mem memory.Allocator) (*Batch, error) {
	out := &Batch{SchemaID: b.SchemaID(), Rows: int64(b.RecordCount()), HighestFieldID: highestFieldID(schema)}
	if b.RecordCount() == 0 {
		return out, nil
	}
	as, err := arrowlog.ArrowSchema(schema.Columns)
	if err != nil {
		return nil, fmt.Errorf("batchstats: %w", err)
	}
	_, rec, err := arrowlog.Decode(as, b.AppendOnly(), int(b.RecordCount()), b.Records(), mem)
	if err != nil {
		return nil, fmt.Errorf("batchstats: %w", err)
	}
	defer rec.Release()
	return FromRecord(b, schema, rec)
}

// FromRecord returns the statistics of ARROW-format batch b from rec, b's records already
// decoded (arrowlog.Decode) under schema, the schema of b.SchemaID(): what Compute returns,
// without decoding b again. The produce path validates each batch by decoding it and takes
// its statistics from that one decode. rec is only read; the caller still releases it.
func FromRecord(b record.Batch, schema metadata.Schema, rec arrow.RecordBatch) (*Batch, error) {
	out := &Batch{SchemaID: b.SchemaID(), Rows: int64(b.RecordCount()), HighestFieldID: highestFieldID(schema)}
	if b.RecordCount() == 0 {
		return out, nil
	}
	if int(rec.NumCols()) != len(schema.Columns) || rec.NumRows() != int64(b.RecordCount()) {
		return nil, fmt.Errorf("batchstats: record of %d columns and %d rows for a batch of %d columns and %d records",
			rec.NumCols(), rec.NumRows(), len(schema.Columns), b.RecordCount())
	}
	n := int(rec.NumRows())
	out.Columns = make([]Column, len(schema.Columns))
	for ci := range schema.Columns {
		sc := &schema.Columns[ci]
		col := rec.Column(ci)
		c := &out.Columns[ci]
		c.FieldID, c.Type, c.NullCount = sc.ID, sc.Type, int64(col.NullN())
		if !Ordered(sc.Type.Root) || int(c.NullCount) == n {
			continue
		}
		if ok, handled := fastMinMax(c, col); handled {
			c.HasMinMax = ok
			continue
		}
		read, err := arrowlog.ColumnReader(col, sc.Type)
		if err != nil {
			return nil, fmt.Errorf("batchstats: column %q: %w", sc.Name, err)
		}
		c.HasMinMax = minMax(c, n, read)
	}
	return out, nil
}

// minMax fills c.Min and c.Max over the n elements read returns and reports whether they
// are valid bounds.
func minMax(c *Column, n int, read func(int, *row.Datum)) bool {
	var d row.Datum
	first := true
	for i := 0; i < n; i++ {
		read(i, &d)
		if d.Null {
			continue
		}
		if isFloat(c.Type.Root) && math.IsNaN(d.F) {
			return false
		}
		if first {
			c.Min, c.Max, first = d, d, false
			continue
		}
		if less(c.Type, d, c.Min) {
			c.Min = d
		}
		if less(c.Type, c.Max, d) {
			c.Max = d
		}
	}
	if first {
		return false
	}
	c.Min, c.Max = own(c.Min), own(c.Max) // they alias the record until here
	if isFloat(c.Type.Root) {
		if c.Min.F == 0 {
			c.Min.F = -math.SmallestNonzeroFloat64
		}
		if c.Max.F == 0 {
			c.Max.F = math.SmallestNonzeroFloat64
		}
	}
	return true
}

// own copies the bytes a Datum may alias from the record's buffers.
func own(d row.Datum) row.Datum {
	if d.B != nil {
		d.B = bytes.Clone(d.B)
	}
	return d
}

func isFloat(r metadata.TypeRoot) bool { return r == metadata.Float || r == metadata.Double }

// less orders two non-NULL, non-NaN values of t the way predicate compares them.
func less(t metadata.DataType, a, b row.Datum) bool {
	r, _ := predicate.Compare(t, a, b)
	return r < 0
}

// highestFieldID is the largest field id the schema uses, nested fields included, and never
// below its HighestFieldID; a schema with a column of unknown id (-1) gets MaxInt32, so that
// no field is taken for a column added later (all NULL) when it may be that column.
func highestFieldID(s metadata.Schema) int32 {
	hi := s.HighestFieldID
	var walk func(t *metadata.DataType)
	walk = func(t *metadata.DataType) {
		for i := range t.Fields {
			hi = max(hi, t.Fields[i].ID)
			walk(&t.Fields[i].Type)
		}
		if t.Elem != nil {
			walk(t.Elem)
		}
		if t.Value != nil {
			walk(t.Value)
		}
	}
	for i := range s.Columns {
		if s.Columns[i].ID < 0 {
			return math.MaxInt32
		}
		hi = max(hi, s.Columns[i].ID)
		walk(&s.Columns[i].Type)
	}
	return hi
}
