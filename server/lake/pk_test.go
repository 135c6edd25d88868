package lake

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go/catalog"

	"github.com/stromdb/strom/internal/arrowlog"
	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/internal/record"
	"github.com/stromdb/strom/server/cluster"
	"github.com/stromdb/strom/server/lakeconf"
	"github.com/stromdb/strom/server/logstore"
)

func pkTable() *cluster.TableInfo {
	return &cluster.TableInfo{
		Path: cluster.TablePath{Database: "fluss", Table: "users"}, ID: 9, SchemaID: 1,
		Descriptor: metadata.TableDescriptor{
			Schema: metadata.Schema{Columns: []metadata.Column{
				{Name: "id", Type: metadata.DataType{Root: metadata.BigInt, NotNull: true}},
				{Name: "name", Type: metadata.DataType{Root: metadata.String}},
			}, PrimaryKey: []string{"id"}},
			BucketKeys:  []string{"id"},
			BucketCount: 1,
			Properties:  map[string]string{metadata.PropDatalakeEnabled: "true"},
		},
	}
}

type change struct {
	ct   byte
	id   int64
	name string
}

func appendChanges(t *testing.T, l *logstore.Log, info *cluster.TableInfo, cs ...change) {
	t.Helper()
	sc, err := arrowlog.ArrowSchema(info.Descriptor.Schema.Columns)
	if err != nil {
		t.Fatal(err)
	}
	rb := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer rb.Release()
	var cts []byte
	for _, c := range cs {
		rb.Field(0).(*array.Int64Builder).Append(c.id)
		rb.Field(1).(*array.StringBuilder).Append(c.name)
		cts = append(cts, c.ct)
	}
	rec := rb.NewRecordBatch()
	defer rec.Release()
	batch, err := arrowlog.AppendBatch(nil, record.V0Header{SchemaID: 1, WriterID: -1, BatchSequence: -1}, rec, cts, arrowlog.CompressionNone, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append([]record.Batch{batch}, time.Now().UnixMilli()); err != nil {
		t.Fatal(err)
	}
}

// scanPK reads the merge-on-read table back with iceberg-go, which applies equality deletes.
func scanPK(t *testing.T, tr *Tierer, info *cluster.TableInfo) []string {
	t.Helper()
	return scanPKCatalog(t, tr.cat, info)
}

// scanPKCatalog is scanPK through cat.
func scanPKCatalog(t *testing.T, cat catalog.Catalog, info *cluster.TableInfo) []string {
	t.Helper()
	ctx := context.Background()
	tbl, err := cat.LoadTable(ctx, Identifier(info.Path))
	if err != nil {
		t.Fatal(err)
	}
	at, err := tbl.Scan().ToArrowTable(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer at.Release()
	var out []string
	rd := array.NewTableReader(at, 1024)
	defer rd.Release()
	for rd.Next() {
		r := rd.RecordBatch()
		col := func(n string) arrow.Array { return r.Column(r.Schema().FieldIndices(n)[0]) }
		for i := 0; i < int(r.NumRows()); i++ {
			out = append(out, fmt.Sprintf("%d=%s@%d", col("id").(*array.Int64).Value(i), col("name").(*array.String).Value(i), col(OffsetColumn).(*array.Int64).Value(i)))
		}
	}
	slices.Sort(out)
	return out
}

func TestTierPrimaryKeyTableMergeOnRead(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	info := pkTable()
	l, err := logstore.Open(ctx, filepath.Join(dir, "log"), logstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	buckets := []Bucket{{Table: info, ID: cluster.Bucket{TableID: info.ID, PartitionID: cluster.NoPartition}, Log: LocalLog(l)}}
	open := func() *Tierer {
		cfg, err := ConfigFrom(map[string]string{lakeconf.OptFormat: "iceberg"}, dir)
		if err != nil {
			t.Fatal(err)
		}
		tr, err := New(ctx, Options{Config: cfg, Catalog: fakeCatalog{t: info}})
		if err != nil {
			t.Fatal(err)
		}
		return tr
	}
	tr := open()
	defer func() { tr.Close() }()

	const I, UB, UA, D = arrowlog.ChangeInsert, arrowlog.ChangeUpdateBefore, arrowlog.ChangeUpdateAfter, arrowlog.ChangeDelete
	appendChanges(t, l, info, change{I, 1, "a"}, change{I, 2, "b"}, change{I, 3, "c"}) // offsets 0-2
	if _, err := tr.TierOnce(ctx, buckets); err != nil {
		t.Fatal(err)
	}
	if got, want := scanPK(t, tr, info), []string{"1=a@0", "2=b@1", "3=c@2"}; !slices.Equal(got, want) {
		t.Fatalf("after round 1: %v, want %v", got, want)
	}

	// FULL-image update of 1, delete of 2, insert then WAL-image update of 4 in one round.
	appendChanges(t, l, info, change{UB, 1, "a"}, change{UA, 1, "a2"}, change{D, 2, "b"}) // 3-5
	appendChanges(t, l, info, change{I, 4, "d"}, change{UA, 4, "d2"})                     // 6-7
	if _, err := tr.TierOnce(ctx, buckets); err != nil {
		t.Fatal(err)
	}
	want := []string{"1=a2@4", "3=c@2", "4=d2@7"}
	if got := scanPK(t, tr, info); !slices.Equal(got, want) {
		t.Fatalf("after round 2: %v, want %v", got, want)
	}
	snap, err := tr.Snapshot(ctx, info, nil)
	if err != nil || snap.Offsets[BucketKey{PartitionID: cluster.NoPartition, Bucket: 0}] != 8 {
		t.Fatalf("snapshot %+v %v", snap, err)
	}

	// After a restart nothing is re-applied; a re-inserted key comes back.
	tr.Close()
	tr = open()
	if _, err := tr.TierOnce(ctx, buckets); err != nil {
		t.Fatal(err)
	}
	if got := scanPK(t, tr, info); !slices.Equal(got, want) {
		t.Fatalf("after restart: %v, want %v", got, want)
	}
	appendChanges(t, l, info, change{I, 2, "b2"}, change{D, 3, "c"}) // 8-9
	if _, err := tr.TierOnce(ctx, buckets); err != nil {
		t.Fatal(err)
	}
	if got, want := scanPK(t, tr, info), []string{"1=a2@4", "2=b2@8", "4=d2@7"}; !slices.Equal(got, want) {
		t.Fatalf("after round 3: %v, want %v", got, want)
	}
}
