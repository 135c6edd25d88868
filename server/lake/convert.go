package lake

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// rowsOf is a run of log rows to tier: a decoded batch (in the schema it was written with),
// the log offset of its first row, its commit timestamp and the bucket it belongs to.
type rowsOf struct {
	rec        arrow.RecordBatch
	baseOffset int64
	commitMs   int64
	bucket     int32
}

// toIceberg converts rows to target, the Arrow form of the Iceberg schema: user columns are
// matched by name (a column the batch's schema lacks, added later by ALTER TABLE, is null)
// and cast to the Iceberg type (TINYINT and SMALLINT widen to INT, timestamps and times become
// microseconds, BINARY(n) becomes variable-length binary); the three system columns follow.
// keep, when non-nil, selects the rows to convert (by index into rows.rec).
func toIceberg(ctx context.Context, mem memory.Allocator, target *arrow.Schema, r rowsOf, keep []int) (arrow.RecordBatch, error) {
	src := r.rec
	var sel arrow.Array
	if keep != nil {
		b := array.NewInt32Builder(mem)
		for _, i := range keep {
			b.Append(int32(i))
		}
		sel = b.NewArray()
		defer sel.Release()
	}
	n := int(src.NumRows())
	if keep != nil {
		n = len(keep)
	}
	nUser := target.NumFields() - 3
	cols := make([]arrow.Array, 0, target.NumFields())
	defer func() {
		for _, c := range cols {
			c.Release()
		}
	}()
	for i := 0; i < nUser; i++ {
		f := target.Field(i)
		idx := src.Schema().FieldIndices(f.Name)
		if len(idx) == 0 {
			if !f.Nullable {
				return nil, fmt.Errorf("column %s is NOT NULL in Iceberg but absent from the batch's schema", f.Name)
			}
			cols = append(cols, array.MakeArrayOfNull(mem, f.Type, n))
			continue
		}
		col := src.Column(idx[0])
		var err error
		if sel != nil {
			col, err = compute.TakeArray(ctx, col, sel)
			if err != nil {
				return nil, fmt.Errorf("select rows of column %s: %w", f.Name, err)
			}
		} else {
			col.Retain()
		}
		if !arrow.TypeEqual(col.DataType(), f.Type) {
			cast, err := castColumn(ctx, col, f.Type)
			col.Release()
			if err != nil {
				return nil, fmt.Errorf("column %s: %w", f.Name, err)
			}
			col = cast
		}
		cols = append(cols, col)
	}

	bb := array.NewInt32Builder(mem)
	ob := array.NewInt64Builder(mem)
	tb := array.NewTimestampBuilder(mem, target.Field(nUser+2).Type.(*arrow.TimestampType))
	ts := arrow.Timestamp(r.commitMs * 1000)
	for j := 0; j < n; j++ {
		row := j
		if keep != nil {
			row = keep[j]
		}
		bb.Append(r.bucket)
		ob.Append(r.baseOffset + int64(row))
		tb.Append(ts)
	}
	cols = append(cols, bb.NewArray(), ob.NewArray(), tb.NewArray())
	bb.Release()
	ob.Release()
	tb.Release()
	return array.NewRecordBatch(target, cols, int64(n)), nil
}

// castColumn converts one column to the Iceberg column's Arrow type.
func castColumn(ctx context.Context, col arrow.Array, to arrow.DataType) (arrow.Array, error) {
	if fsb, ok := col.(*array.FixedSizeBinary); ok && to.ID() == arrow.BINARY {
		b := array.NewBinaryBuilder(memory.DefaultAllocator, arrow.BinaryTypes.Binary)
		defer b.Release()
		for i := 0; i < fsb.Len(); i++ {
			if fsb.IsNull(i) {
				b.AppendNull()
			} else {
				b.Append(fsb.Value(i))
			}
		}
		return b.NewArray(), nil
	}
	out, err := compute.CastArray(ctx, col, compute.UnsafeCastOptions(to))
	if err != nil {
		return nil, fmt.Errorf("cast %s to %s: %w", col.DataType(), to, err)
	}
	return out, nil
}
