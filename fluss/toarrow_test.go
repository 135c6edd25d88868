package fluss_test

import (
	"slices"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/stromdb/strom/fluss"
)

// TableScan.ToArrow reads every bucket (and partition) of a log table up to its end as of the
// call, with the projection applied.
func TestToArrow(t *testing.T) {
	conn, ctx := connect(t)
	tbl := createTable(t, ctx, conn, "to_arrow", fluss.TableDescriptor{
		Schema: fluss.NewSchema([]fluss.Column{
			fluss.NewColumn("day", fluss.String()),
			fluss.NewColumn("id", fluss.Int()),
			fluss.NewColumn("v", fluss.Double()),
		}),
		PartitionKeys: []string{"day"},
		BucketCount:   3,
	})
	w, err := tbl.NewAppend().CreateWriter()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	const n = 500
	for i := range n {
		day := []string{"mon", "tue"}[i%2]
		if _, err := w.Append(ctx, fluss.Row{day, int32(i), float64(i) / 2}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	at, err := tbl.NewScan().ProjectByName("id", "day").ToArrow(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer at.Release()
	if at.NumRows() != n || at.NumCols() != 2 || at.Schema().Field(0).Name != "id" {
		t.Fatalf("table: %d rows, schema %v", at.NumRows(), at.Schema())
	}
	var ids []int
	tr := array.NewTableReader(at, 0)
	defer tr.Release()
	for tr.Next() {
		rec := tr.RecordBatch()
		col, days := rec.Column(0).(*array.Int32), rec.Column(1).(*array.String)
		for i := range col.Len() {
			id := int(col.Value(i))
			if days.Value(i) != []string{"mon", "tue"}[id%2] {
				t.Fatalf("row %d has day %s", id, days.Value(i))
			}
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	for i, id := range ids {
		if id != i {
			t.Fatalf("ids %v...", ids[:i+1])
		}
	}

	// A scanner's ToArrow stops at the end as of the call and leaves the position there.
	sc, err := tbl.NewScan().CreateRecordBatchLogScanner()
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	parts, err := conn.Admin().ListPartitionInfos(ctx, tbl.Path(), map[string]string{"day": "mon"})
	if err != nil || len(parts) != 1 {
		t.Fatalf("partitions %v, %v", parts, err)
	}
	for b := range int32(3) {
		if err := sc.SubscribePartition(ctx, parts[0].ID, b, fluss.EarliestOffset); err != nil {
			t.Fatal(err)
		}
	}
	first, err := sc.ToArrow(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Release()
	if first.NumRows() != n/2 {
		t.Fatalf("first read %d rows, want %d", first.NumRows(), n/2)
	}
	if _, err := w.Append(ctx, fluss.Row{"mon", int32(n), 0.0}); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	batches, err := sc.Poll(ctx, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	rows := 0
	for _, b := range batches {
		rows += int(b.Record.NumRows())
		b.Record.Release()
	}
	if rows != 1 {
		t.Fatalf("poll after ToArrow returned %d rows, want only the new one", rows)
	}

	pk := createTable(t, ctx, conn, "to_arrow_pk", pkDesc(1))
	if _, err := pk.NewScan().ToArrow(ctx); err == nil {
		t.Fatal("ToArrow of a primary-key table succeeded")
	}
}
