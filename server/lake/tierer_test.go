package lake

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
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

// fakeCatalog is the coordinator's catalog for one table.
type fakeCatalog struct {
	t *cluster.TableInfo
	// older holds earlier schema versions (ALTER TABLE ADD COLUMN).
	older map[int32]metadata.Schema
}

func (c fakeCatalog) TableByID(id int64) (*cluster.TableInfo, bool) { return c.t, id == c.t.ID }
func (c fakeCatalog) TableByPath(p cluster.TablePath) (*cluster.TableInfo, bool) {
	return c.t, p == c.t.Path
}
func (c fakeCatalog) Schema(tableID int64, schemaID int32) (metadata.Schema, bool) {
	if s, ok := c.older[schemaID]; ok && tableID == c.t.ID {
		return s, true
	}
	return c.t.Descriptor.Schema, tableID == c.t.ID && schemaID == c.t.SchemaID
}
func (c fakeCatalog) PartitionByID(int64) (*cluster.PartitionInfo, bool) { return nil, false }
func (c fakeCatalog) PartitionByName(int64, string) (*cluster.PartitionInfo, bool) {
	return nil, false
}
func (c fakeCatalog) Partitions(int64) []*cluster.PartitionInfo { return nil }

type fakeSource []Bucket

func (s fakeSource) LakeBuckets() []Bucket { return s }

func logTable(buckets int32) *cluster.TableInfo {
	return &cluster.TableInfo{
		Path: cluster.TablePath{Database: "fluss", Table: "events"}, ID: 7, SchemaID: 1,
		Descriptor: metadata.TableDescriptor{
			Schema: metadata.Schema{Columns: []metadata.Column{
				{Name: "id", Type: metadata.DataType{Root: metadata.Int, NotNull: true}},
				{Name: "tag", Type: metadata.DataType{Root: metadata.SmallInt}},
				{Name: "name", Type: metadata.DataType{Root: metadata.String}},
				{Name: "at", Type: metadata.DataType{Root: metadata.Timestamp, Precision: 3}},
			}},
			BucketCount: buckets,
			Properties:  map[string]string{metadata.PropDatalakeEnabled: "true", metadata.PropDatalakeFreshness: "1s"},
		},
	}
}

type harness struct {
	t       testing.TB
	dir     string
	info    *cluster.TableInfo
	buckets []Bucket
	logs    []*logstore.Log // of buckets, by index
	next    int32           // next id to write
}

func newHarness(t testing.TB, buckets int32) *harness {
	h := &harness{t: t, dir: t.TempDir(), info: logTable(buckets)}
	for b := int32(0); b < buckets; b++ {
		id := cluster.Bucket{TableID: h.info.ID, PartitionID: cluster.NoPartition, Bucket: b}
		l, err := logstore.Open(context.Background(), filepath.Join(h.dir, "log", fmt.Sprint(b)), logstore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		h.buckets = append(h.buckets, Bucket{Table: h.info, ID: id, Log: LocalLog(l)})
		h.logs = append(h.logs, l)
	}
	return h
}

func (h *harness) tierer() *Tierer {
	cfg, err := ConfigFrom(map[string]string{lakeconf.OptFormat: "iceberg"}, h.dir)
	if err != nil {
		h.t.Fatal(err)
	}
	tr, err := New(context.Background(), Options{Config: cfg, Catalog: fakeCatalog{t: h.info},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { tr.Close() })
	return tr
}

// write appends one batch of n rows to bucket b; ids are consecutive across calls.
func (h *harness) write(b, n int) {
	sc, err := arrowlog.ArrowSchema(h.info.Descriptor.Schema.Columns)
	if err != nil {
		h.t.Fatal(err)
	}
	rb := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer rb.Release()
	for i := 0; i < n; i++ {
		id := h.next
		h.next++
		rb.Field(0).(*array.Int32Builder).Append(id)
		rb.Field(1).(*array.Int16Builder).Append(int16(id % 7))
		rb.Field(2).(*array.StringBuilder).Append(fmt.Sprintf("n%d", id))
		rb.Field(3).(*array.TimestampBuilder).Append(arrow.Timestamp(int64(id) * 1000))
	}
	rec := rb.NewRecordBatch()
	defer rec.Release()
	batch, err := arrowlog.AppendBatch(nil, record.V0Header{SchemaID: 1, WriterID: -1, BatchSequence: -1}, rec, nil, arrowlog.CompressionNone, 0)
	if err != nil {
		h.t.Fatal(err)
	}
	if _, err := h.logs[b].Append([]record.Batch{batch}, time.Now().UnixMilli()); err != nil {
		h.t.Fatal(err)
	}
}

type lakeRow struct {
	id, tag      int32
	name         string
	atMicros     int64
	bucket       int32
	offset       int64
	hasTimestamp bool
}

// scan reads the Iceberg table back with iceberg-go.
func (h *harness) scan(tr *Tierer) []lakeRow { return h.scanCatalog(tr.cat) }

// scanCatalog reads the Iceberg table back through cat.
func (h *harness) scanCatalog(cat catalog.Catalog) []lakeRow {
	ctx := context.Background()
	tbl, err := cat.LoadTable(ctx, Identifier(h.info.Path))
	if err != nil {
		h.t.Fatal(err)
	}
	at, err := tbl.Scan().ToArrowTable(ctx)
	if err != nil {
		h.t.Fatal(err)
	}
	defer at.Release()
	var out []lakeRow
	tr2 := array.NewTableReader(at, 1024)
	defer tr2.Release()
	for tr2.Next() {
		r := tr2.RecordBatch()
		col := func(name string) arrow.Array { return r.Column(r.Schema().FieldIndices(name)[0]) }
		for i := 0; i < int(r.NumRows()); i++ {
			out = append(out, lakeRow{
				id:           col("id").(*array.Int32).Value(i),
				tag:          col("tag").(*array.Int32).Value(i),
				name:         col("name").(*array.String).Value(i),
				atMicros:     int64(col("at").(*array.Timestamp).Value(i)),
				bucket:       col(BucketColumn).(*array.Int32).Value(i),
				offset:       col(OffsetColumn).(*array.Int64).Value(i),
				hasTimestamp: col(TimestampColumn).(*array.Timestamp).Value(i) > 0,
			})
		}
	}
	slices.SortFunc(out, func(a, b lakeRow) int { return int(a.id - b.id) })
	return out
}

func (h *harness) checkExactly(rows []lakeRow, want int) {
	h.t.Helper()
	if len(rows) != want {
		h.t.Fatalf("Iceberg has %d rows, want %d", len(rows), want)
	}
	for i, r := range rows {
		if r.id != int32(i) || r.name != fmt.Sprintf("n%d", i) || r.tag != int32(i%7) || r.atMicros != int64(i)*1000*1000 || !r.hasTimestamp {
			h.t.Fatalf("row %d = %+v", i, r)
		}
	}
}

func TestTierLogTableAndResume(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t, 2)
	h.write(0, 3)
	h.write(1, 2)
	h.write(0, 4)
	tr := h.tierer()
	if _, err := tr.TierOnce(ctx, h.buckets); err != nil {
		t.Fatal(err)
	}
	rows := h.scan(tr)
	h.checkExactly(rows, 9)
	// __bucket and __offset say where each row came from.
	for _, r := range rows {
		wantBucket, wantOffset := int32(0), int64(r.id)
		switch {
		case r.id >= 3 && r.id < 5:
			wantBucket, wantOffset = 1, int64(r.id-3)
		case r.id >= 5:
			wantOffset = int64(r.id - 2)
		}
		if r.bucket != wantBucket || r.offset != wantOffset {
			t.Fatalf("row %d: bucket %d offset %d, want %d %d", r.id, r.bucket, r.offset, wantBucket, wantOffset)
		}
	}
	snap, err := tr.Snapshot(ctx, h.info, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := Offsets{{PartitionID: cluster.NoPartition, Bucket: 0}: 7, {PartitionID: cluster.NoPartition, Bucket: 1}: 2}
	if !mapsEqual(snap.Offsets, want) {
		t.Fatalf("snapshot offsets %v, want %v", snap.Offsets, want)
	}
	if f := tr.Floor(h.buckets[0].ID); f != 7 {
		t.Fatalf("retention floor %d, want 7", f)
	}

	// A new tierer (a restart) resumes from the offsets in Iceberg: nothing is tiered twice.
	tr.Close()
	tr = h.tierer()
	if f := tr.Floor(h.buckets[0].ID); f != 0 {
		t.Fatalf("retention floor before the offsets are known = %d, want 0", f)
	}
	if _, err := tr.TierOnce(ctx, h.buckets); err != nil {
		t.Fatal(err)
	}
	h.checkExactly(h.scan(tr), 9)
	h.write(1, 5)
	if _, err := tr.TierOnce(ctx, h.buckets); err != nil {
		t.Fatal(err)
	}
	h.checkExactly(h.scan(tr), 14)
	snap2, err := tr.Snapshot(ctx, h.info, nil)
	if err != nil {
		t.Fatal(err)
	}
	if snap2.SnapshotID == snap.SnapshotID || snap2.Offsets[BucketKey{PartitionID: cluster.NoPartition, Bucket: 1}] != 7 {
		t.Fatalf("second snapshot %+v", snap2)
	}
	// The first snapshot stays addressable by id.
	old, err := tr.Snapshot(ctx, h.info, &snap.SnapshotID)
	if err != nil || !mapsEqual(old.Offsets, want) {
		t.Fatalf("snapshot by id: %+v %v", old, err)
	}
}

// A crash after the data files are written but before the catalog commit leaves orphan
// files only: the offsets file of the uncommitted round is not referenced, and the next
// round re-tiers the same records exactly once.
func TestTierCrashBeforeCommitDoesNotDuplicate(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t, 1)
	h.write(0, 5)
	tr := h.tierer()
	if _, err := tr.TierOnce(ctx, h.buckets); err != nil {
		t.Fatal(err)
	}
	h.write(0, 5)
	// Simulate the uncommitted round: an offsets file claiming everything, and parquet files
	// the catalog never heard of.
	if _, err := tr.writeOffsets(h.info, Offsets{{PartitionID: cluster.NoPartition, Bucket: 0}: 10}); err != nil {
		t.Fatal(err)
	}
	tbl, err := tr.cat.LoadTable(ctx, Identifier(h.info.Path))
	if err != nil {
		t.Fatal(err)
	}
	orphan := filepath.Join(tbl.Location()[len("file://"):], "data", "orphan.parquet")
	if err := os.MkdirAll(filepath.Dir(orphan), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(orphan, []byte("PAR1 partial"), 0o644); err != nil {
		t.Fatal(err)
	}
	tr.Close()
	tr = h.tierer()
	if _, err := tr.TierOnce(ctx, h.buckets); err != nil {
		t.Fatal(err)
	}
	h.checkExactly(h.scan(tr), 10)
}

func TestFloorOfTableWithoutLake(t *testing.T) {
	h := newHarness(t, 1)
	h.info.Descriptor.Properties[metadata.PropDatalakeEnabled] = "false"
	tr := h.tierer()
	if f := tr.Floor(h.buckets[0].ID); f != math.MaxInt64 {
		t.Fatalf("floor %d, want no constraint", f)
	}
}

func TestOffsetsFileRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		o    Offsets
		json string
	}{
		{Offsets{{PartitionID: -1, Bucket: 0}: 100, {PartitionID: -1, Bucket: 2}: 300}, `{"version":1,"table_id":5,"bucket_offsets":[100,-1,300]}`},
		{Offsets{{PartitionID: 2, Bucket: 1}: 400, {PartitionID: 1, Bucket: 0}: 100}, `{"version":1,"table_id":5,"partition_offsets":[{"partition_id":1,"bucket_offsets":[100]},{"partition_id":2,"bucket_offsets":[-1,400]}]}`},
	} {
		data, err := EncodeOffsets(5, tc.o)
		if err != nil || string(data) != tc.json {
			t.Fatalf("encode %v = %s, %v; want %s", tc.o, data, err, tc.json)
		}
		id, got, err := DecodeOffsets(data)
		if err != nil || id != 5 || !mapsEqual(got, tc.o) {
			t.Fatalf("decode %s = %d %v %v", data, id, got, err)
		}
	}
	if _, _, err := DecodeOffsets([]byte(`{"version":2,"table_id":1}`)); err == nil {
		t.Fatal("version 2 accepted")
	}
}

func mapsEqual(a, b Offsets) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}
