package lake

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go/table"

	"github.com/stromdb/strom/internal/arrowlog"
)

// primaryKeyChanges reduces a primary-key table's changelog in this round to its net effect
// per key and tiers it merge-on-read, as Fluss tiers primary-key tables into Iceberg:
//
//   - one equality delete on the primary key for every key changed in the round, which
//     removes the key's rows written by earlier snapshots (an equality delete applies only to
//     data files of lower sequence numbers, so not to the rows committed with it);
//   - one data row for every key whose last change is an insert or update-after, carrying the
//     offset of that change in __offset.
//
// A key deleted in the round thus ends with no row, an updated key with exactly its newest row,
// whatever the changelog image (FULL with -U/+U pairs, or WAL with +U only).
func (t *Tierer) primaryKeyChanges(ctx context.Context, tbl *table.Table, layout *Layout, target *arrow.Schema, batches []logBatch) (*roundFiles, error) {
	sc := tbl.Schema()
	var pkNames []string
	for _, id := range layout.PrimaryKey {
		name, ok := sc.FindColumnName(id)
		if !ok {
			return nil, fmt.Errorf("primary-key field %d is not in the Iceberg schema", id)
		}
		pkNames = append(pkNames, name)
	}
	delSchema, err := sc.Select(true, pkNames...)
	if err != nil {
		return nil, err
	}
	delArrow, err := table.SchemaToArrowSchema(delSchema, nil, true, false)
	if err != nil {
		return nil, err
	}
	w := &roundFiles{target: target, deleteSchema: delArrow, equalityIDs: layout.PrimaryKey, rowDelta: true}

	type at struct{ batch, row int }
	last := map[string]at{}
	for bi, b := range batches {
		cols := make([]arrow.Array, len(pkNames))
		for i, name := range pkNames {
			idx := b.rec.Schema().FieldIndices(name)
			if len(idx) == 0 {
				return nil, fmt.Errorf("primary-key column %s missing from a changelog batch", name)
			}
			cols[i] = b.rec.Column(idx[0])
		}
		var key strings.Builder
		for r := b.from; r < int(b.rec.NumRows()); r++ {
			key.Reset()
			for _, c := range cols {
				v := c.ValueStr(r)
				key.WriteString(strconv.Itoa(len(v)))
				key.WriteByte(':')
				key.WriteString(v)
			}
			last[key.String()] = at{bi, r}
		}
	}
	keep := make([][]int, len(batches))
	for _, p := range last {
		keep[p.batch] = append(keep[p.batch], p.row)
	}
	ok := false
	defer func() {
		if !ok {
			w.release()
		}
	}()
	mem := memory.DefaultAllocator
	for bi, b := range batches {
		rows := keep[bi]
		if len(rows) == 0 {
			continue
		}
		slices.Sort(rows)
		conv, err := toIceberg(ctx, mem, target, b.rowsOf, rows)
		if err != nil {
			return nil, fmt.Errorf("convert bucket %d batch at %d: %w", b.bucket, b.baseOffset, err)
		}
		delCols := make([]arrow.Array, delArrow.NumFields())
		for i := range delCols {
			delCols[i] = conv.Column(target.FieldIndices(delArrow.Field(i).Name)[0])
		}
		w.deleteRecs = append(w.deleteRecs, array.NewRecordBatch(delArrow, delCols, conv.NumRows()))
		w.deletes += conv.NumRows()

		var upserts []int
		for j, r := range rows {
			if b.changeTypes == nil || isUpsert(b.changeTypes[r]) {
				upserts = append(upserts, j)
			}
		}
		switch {
		case len(upserts) == len(rows):
			w.data = append(w.data, conv)
			w.rows += conv.NumRows()
			continue
		case len(upserts) > 0:
			data, err := takeRows(ctx, mem, conv, upserts)
			if err != nil {
				conv.Release()
				return nil, err
			}
			w.data = append(w.data, data)
			w.rows += data.NumRows()
		}
		conv.Release()
	}
	ok = true
	return w, nil
}

func isUpsert(ct byte) bool {
	return ct == arrowlog.ChangeAppendOnly || ct == arrowlog.ChangeInsert || ct == arrowlog.ChangeUpdateAfter
}

// takeRows returns the rows idx of rec.
func takeRows(ctx context.Context, mem memory.Allocator, rec arrow.RecordBatch, idx []int) (arrow.RecordBatch, error) {
	b := array.NewInt32Builder(mem)
	for _, i := range idx {
		b.Append(int32(i))
	}
	sel := b.NewArray()
	b.Release()
	defer sel.Release()
	cols := make([]arrow.Array, rec.NumCols())
	for i := range cols {
		c, err := compute.TakeArray(ctx, rec.Column(i), sel)
		if err != nil {
			for _, done := range cols[:i] {
				done.Release()
			}
			return nil, fmt.Errorf("select rows: %w", err)
		}
		cols[i] = c
	}
	out := array.NewRecordBatch(rec.Schema(), cols, int64(len(idx)))
	for _, c := range cols {
		c.Release()
	}
	return out, nil
}
