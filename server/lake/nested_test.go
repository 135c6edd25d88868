package lake

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/stromdb/strom/internal/arrowlog"
	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/internal/record"
	"github.com/stromdb/strom/server/cluster"
	"github.com/stromdb/strom/server/lakeconf"
	"github.com/stromdb/strom/server/logstore"
)

// Nested columns (ARRAY, MAP, ROW) and the narrow and sub-microsecond types are tiered and
// read back with their values.
func TestTierNestedAndCastTypes(t *testing.T) {
	ctx := context.Background()
	intT := metadata.DataType{Root: metadata.Int}
	strT := metadata.DataType{Root: metadata.String}
	info := &cluster.TableInfo{
		Path: cluster.TablePath{Database: "fluss", Table: "nested"}, ID: 11, SchemaID: 1,
		Descriptor: metadata.TableDescriptor{
			Schema: metadata.Schema{Columns: []metadata.Column{
				{Name: "tags", Type: metadata.DataType{Root: metadata.Array, Elem: &metadata.DataType{Root: metadata.TinyInt}}},
				{Name: "attrs", Type: metadata.DataType{Root: metadata.Map, Elem: &metadata.DataType{Root: metadata.String, NotNull: true}, Value: &intT}},
				{Name: "who", Type: metadata.DataType{Root: metadata.Row, Fields: []metadata.Field{{Name: "n", Type: intT}, {Name: "s", Type: strT}}}},
				{Name: "raw", Type: metadata.DataType{Root: metadata.Binary, Length: 2}},
				{Name: "at", Type: metadata.DataType{Root: metadata.TimestampLTZ, Precision: 9}},
				{Name: "t", Type: metadata.DataType{Root: metadata.Time, Precision: 3}},
			}},
			BucketCount: 1,
			Properties:  map[string]string{metadata.PropDatalakeEnabled: "true"},
		},
	}
	layout, err := NewLayout(&info.Descriptor)
	if err != nil {
		t.Fatal(err)
	}
	if got := layout.Schema.String(); got == "" {
		t.Fatal("empty schema")
	}
	dir := t.TempDir()
	l, err := logstore.Open(ctx, filepath.Join(dir, "log"), logstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	sc, err := arrowlog.ArrowSchema(info.Descriptor.Schema.Columns)
	if err != nil {
		t.Fatal(err)
	}
	rb := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer rb.Release()
	lb := rb.Field(0).(*array.ListBuilder)
	lb.Append(true)
	lb.ValueBuilder().(*array.Int8Builder).AppendValues([]int8{1, 2}, nil)
	mb := rb.Field(1).(*array.MapBuilder)
	mb.Append(true)
	mb.KeyBuilder().(*array.StringBuilder).Append("k")
	mb.ItemBuilder().(*array.Int32Builder).Append(7)
	sb := rb.Field(2).(*array.StructBuilder)
	sb.Append(true)
	sb.FieldBuilder(0).(*array.Int32Builder).Append(5)
	sb.FieldBuilder(1).(*array.StringBuilder).Append("x")
	rb.Field(3).(*array.FixedSizeBinaryBuilder).Append([]byte{0xab, 0xcd})
	rb.Field(4).(*array.TimestampBuilder).Append(arrow.Timestamp(1_000_000_123_456_789))
	rb.Field(5).(*array.Time32Builder).Append(arrow.Time32(1234))
	rec := rb.NewRecordBatch()
	defer rec.Release()
	batch, err := arrowlog.AppendBatch(nil, record.V0Header{SchemaID: 1, WriterID: -1, BatchSequence: -1}, rec, nil, arrowlog.CompressionNone, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append([]record.Batch{batch}, time.Now().UnixMilli()); err != nil {
		t.Fatal(err)
	}
	cfg, err := ConfigFrom(map[string]string{lakeconf.OptFormat: "iceberg"}, dir)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := New(ctx, Options{Config: cfg, Catalog: fakeCatalog{t: info}})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if _, err := tr.TierOnce(ctx, []Bucket{{Table: info, ID: cluster.Bucket{TableID: info.ID, PartitionID: cluster.NoPartition}, Log: LocalLog(l)}}); err != nil {
		t.Fatal(err)
	}
	tbl, err := tr.cat.LoadTable(ctx, Identifier(info.Path))
	if err != nil {
		t.Fatal(err)
	}
	at, err := tbl.Scan().ToArrowTable(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer at.Release()
	if at.NumRows() != 1 {
		t.Fatalf("%d rows", at.NumRows())
	}
	want := map[string]string{
		"tags":  "[[1 2]]",
		"attrs": `[{["k"] [7]}]`,
		"who":   `{[5] ["x"]}`,
		"raw":   `["\xab\xcd"]`,
		"at":    "[1000000123456]", // nanoseconds truncated to microseconds
		"t":     "[1234000]",
	}
	for name, w := range want {
		col := at.Column(at.Schema().FieldIndices(name)[0]).Data().Chunk(0)
		if got := col.String(); got != w {
			t.Errorf("%s = %s (%s), want %s", name, got, col.DataType(), w)
		}
	}
}
