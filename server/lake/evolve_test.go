package lake

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/stromdb/strom/internal/arrowlog"
	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/internal/record"
)

// A column added by ALTER TABLE is added to the Iceberg table before the system columns;
// rows written before it read as null there.
func TestTierAfterAddColumn(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t, 1)
	h.write(0, 2)
	tr := h.tierer()
	if _, err := tr.TierOnce(ctx, h.buckets); err != nil {
		t.Fatal(err)
	}
	old := h.info.Descriptor.Schema
	evolved := *h.info
	evolved.SchemaID = 2
	evolved.Descriptor.Schema.Columns = append(slices.Clone(old.Columns), metadata.Column{Name: "extra", Type: metadata.DataType{Root: metadata.String}})
	h.buckets[0].Table = &evolved
	tr.opts.Catalog = fakeCatalog{t: &evolved, older: map[int32]metadata.Schema{1: old}}

	sc, err := arrowlog.ArrowSchema(evolved.Descriptor.Schema.Columns)
	if err != nil {
		t.Fatal(err)
	}
	rb := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer rb.Release()
	rb.Field(0).(*array.Int32Builder).Append(2)
	rb.Field(1).(*array.Int16Builder).Append(2)
	rb.Field(2).(*array.StringBuilder).Append("n2")
	rb.Field(3).(*array.TimestampBuilder).Append(2000)
	rb.Field(4).(*array.StringBuilder).Append("more")
	rec := rb.NewRecordBatch()
	defer rec.Release()
	batch, err := arrowlog.AppendBatch(nil, record.V0Header{SchemaID: 2, WriterID: -1, BatchSequence: -1}, rec, nil, arrowlog.CompressionNone, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.logs[0].Append([]record.Batch{batch}, time.Now().UnixMilli()); err != nil {
		t.Fatal(err)
	}
	if _, err := tr.TierOnce(ctx, h.buckets); err != nil {
		t.Fatal(err)
	}
	tbl, err := tr.cat.LoadTable(ctx, Identifier(h.info.Path))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range tbl.Schema().Fields() {
		names = append(names, f.Name)
	}
	if want := []string{"id", "tag", "name", "at", "extra", BucketColumn, OffsetColumn, TimestampColumn}; !slices.Equal(names, want) {
		t.Fatalf("Iceberg columns %v, want %v", names, want)
	}
	at, err := tbl.Scan().ToArrowTable(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer at.Release()
	var got []string
	rd := array.NewTableReader(at, 16)
	defer rd.Release()
	for rd.Next() {
		r := rd.RecordBatch()
		ids := r.Column(r.Schema().FieldIndices("id")[0]).(*array.Int32)
		extra := r.Column(r.Schema().FieldIndices("extra")[0]).(*array.String)
		for i := 0; i < int(r.NumRows()); i++ {
			v := "null"
			if extra.IsValid(i) {
				v = extra.Value(i)
			}
			got = append(got, fmt.Sprintf("%d:%s", ids.Value(i), v))
		}
	}
	slices.Sort(got)
	if want := []string{"0:null", "1:null", "2:more"}; !slices.Equal(got, want) {
		t.Fatalf("rows %v, want %v", got, want)
	}
}
