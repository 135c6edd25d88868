package fluss_test

import (
	"slices"
	"testing"

	"github.com/stromdb/strom/fluss"
)

func pkDesc(buckets int32) fluss.TableDescriptor {
	return fluss.TableDescriptor{
		Schema: fluss.NewSchema([]fluss.Column{
			fluss.NewColumn("id", fluss.Int()),
			fluss.NewColumn("name", fluss.String()),
			fluss.NewColumn("age", fluss.BigInt()),
		}, "id"),
		BucketCount: buckets,
	}
}

func TestPrimaryKeyTable(t *testing.T) {
	conn, ctx := connect(t)
	tbl := createTable(t, ctx, conn, "users", pkDesc(3))
	w, err := tbl.NewUpsert().CreateWriter()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for i := range 20 {
		if _, err := w.Upsert(ctx, fluss.Row{int32(i), "user", int64(20 + i)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	h, err := w.Upsert(ctx, fluss.Row{int32(3), "charlie", int64(35)})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	h, err = w.Delete(ctx, fluss.Row{int32(2), nil, nil})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Wait(ctx); err != nil {
		t.Fatal(err)
	}

	lk, err := tbl.NewLookup().CreateLookuper()
	if err != nil {
		t.Fatal(err)
	}
	got, err := lk.Lookup(ctx, fluss.Row{int32(3)})
	if err != nil || !slices.Equal(got, fluss.Row{int32(3), "charlie", int64(35)}) {
		t.Fatalf("Lookup(3) = %v, %v", got, err)
	}
	got, err = lk.Lookup(ctx, fluss.Row{int32(2)})
	if err != nil || got != nil {
		t.Fatalf("Lookup(2) = %v, %v (deleted)", got, err)
	}
	got, err = lk.Lookup(ctx, fluss.Row{int32(1000)})
	if err != nil || got != nil {
		t.Fatalf("Lookup(1000) = %v, %v", got, err)
	}

	// Partial update: only age changes.
	pw, err := tbl.NewUpsert().PartialUpdateByName("id", "age").CreateWriter()
	if err != nil {
		t.Fatal(err)
	}
	defer pw.Close()
	if _, err := pw.Upsert(ctx, fluss.Row{int32(3), nil, int64(99)}); err != nil {
		t.Fatal(err)
	}
	if err := pw.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	got, err = lk.Lookup(ctx, fluss.Row{int32(3)})
	if err != nil || !slices.Equal(got, fluss.Row{int32(3), "charlie", int64(99)}) {
		t.Fatalf("after partial update Lookup(3) = %v, %v", got, err)
	}
	if _, err := tbl.NewUpsert().PartialUpdateByIndex(1, 2).CreateWriter(); err == nil {
		t.Fatal("partial update without the primary key accepted")
	}

	// Changelog: 20 inserts, -U/+U for id 3, -D for id 2, -U/+U for the partial update.
	sc, err := tbl.NewScan().CreateLogScanner()
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	if err := sc.SubscribeBuckets(ctx, map[int32]int64{0: fluss.EarliestOffset, 1: fluss.EarliestOffset, 2: fluss.EarliestOffset}); err != nil {
		t.Fatal(err)
	}
	recs := pollAll(t, ctx, sc, 25)
	count := map[string]int{}
	var id3 []string
	for _, r := range recs {
		count[r.ChangeType.ShortString()]++
		if r.Row[0] == int32(3) {
			id3 = append(id3, r.ChangeType.ShortString())
		}
	}
	if count["+I"] != 20 || count["-U"] != 2 || count["+U"] != 2 || count["-D"] != 1 {
		t.Fatalf("change types %v", count)
	}
	if !slices.Equal(id3, []string{"+I", "-U", "+U", "-U", "+U"}) {
		t.Fatalf("id 3 changes %v", id3)
	}

	// Limit scan of every bucket covers the 19 live rows.
	total := 0
	for b := range int32(3) {
		bs, err := tbl.NewScan().Limit(100).CreateBucketBatchScanner(fluss.NewTableBucket(tbl.Info().TableID, b))
		if err != nil {
			t.Fatal(err)
		}
		rec, err := bs.ToArrow(ctx)
		if err != nil {
			t.Fatal(err)
		}
		total += int(rec.NumRows())
		rec.Release()
	}
	if total != 19 {
		t.Fatalf("limit scans returned %d rows, want 19", total)
	}
	bs, err := tbl.NewScan().Project(2, 0).Limit(2).CreateBucketBatchScanner(fluss.NewTableBucket(tbl.Info().TableID, 0))
	if err != nil {
		t.Fatal(err)
	}
	rows, err := bs.Rows(ctx)
	if err != nil || len(rows) != 2 || len(rows[0]) != 2 {
		t.Fatalf("projected limit scan = %v, %v", rows, err)
	}
	if _, ok := rows[0][0].(int64); !ok {
		t.Fatalf("projected row %v", rows[0])
	}
}

func TestPrefixLookupAndPartitions(t *testing.T) {
	conn, ctx := connect(t)
	desc := fluss.TableDescriptor{
		Schema: fluss.NewSchema([]fluss.Column{
			fluss.NewColumn("region", fluss.String()),
			fluss.NewColumn("user", fluss.Int()),
			fluss.NewColumn("item", fluss.Int()),
			fluss.NewColumn("qty", fluss.Int()),
		}, "region", "user", "item"),
		PartitionKeys: []string{"region"},
		BucketKeys:    []string{"user"},
		BucketCount:   2,
	}
	tbl := createTable(t, ctx, conn, "orders", desc)
	admin := conn.Admin()
	for _, r := range []string{"eu", "us"} {
		if err := admin.CreatePartition(ctx, tbl.Path(), map[string]string{"region": r}, false); err != nil {
			t.Fatal(err)
		}
	}
	mustCode(t, admin.CreatePartition(ctx, tbl.Path(), map[string]string{"region": "eu"}, false), fluss.ErrPartitionAlreadyExists)
	parts, err := admin.ListPartitionInfos(ctx, tbl.Path(), nil)
	if err != nil || len(parts) != 2 {
		t.Fatalf("ListPartitionInfos = %v, %v", parts, err)
	}
	w, err := tbl.NewUpsert().CreateWriter()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for _, r := range []string{"eu", "us"} {
		for u := range 3 {
			for i := range 4 {
				if _, err := w.Upsert(ctx, fluss.Row{r, int32(u), int32(i), int32(u*10 + i)}); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	// With dynamic partition creation off, a write to a missing partition fails.
	static, err := fluss.Connect(ctx, fluss.Config{BootstrapServers: conn.Config().BootstrapServers, WriterDisableDynamicPartitionCreation: true})
	if err != nil {
		t.Fatal(err)
	}
	defer static.Close()
	stbl, err := static.Table(ctx, tbl.Path())
	if err != nil {
		t.Fatal(err)
	}
	sw, err := stbl.NewUpsert().CreateWriter()
	if err != nil {
		t.Fatal(err)
	}
	_, err = sw.Upsert(ctx, fluss.Row{"asia", int32(1), int32(1), int32(1)})
	mustCode(t, err, fluss.ErrPartitionNotExists)

	lk, err := tbl.NewLookup().CreateLookuper()
	if err != nil {
		t.Fatal(err)
	}
	got, err := lk.Lookup(ctx, fluss.Row{"us", int32(2), int32(3)})
	if err != nil || !slices.Equal(got, fluss.Row{"us", int32(2), int32(3), int32(23)}) {
		t.Fatalf("Lookup = %v, %v", got, err)
	}
	pl, err := tbl.NewLookup().LookupBy("region", "user").CreatePrefixLookuper()
	if err != nil {
		t.Fatal(err)
	}
	rows, err := pl.Lookup(ctx, fluss.Row{"eu", int32(1)})
	if err != nil || len(rows) != 4 {
		t.Fatalf("prefix lookup = %v, %v", rows, err)
	}
	for i, r := range rows {
		if r[2] != int32(i) || r[3] != int32(10+i) {
			t.Fatalf("prefix row %d = %v", i, r)
		}
	}
	if _, err := tbl.NewLookup().LookupBy("item").CreatePrefixLookuper(); err == nil {
		t.Fatal("prefix lookup by a non-bucket-key column accepted")
	}

	// Changelog of one partition.
	var eu int64
	for _, p := range parts {
		if p.Name == "eu" {
			eu = p.ID
		}
	}
	sc, err := tbl.NewScan().CreateLogScanner()
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	if err := sc.SubscribePartitionBuckets(ctx, map[fluss.PartitionBucket]int64{{eu, 0}: fluss.EarliestOffset, {eu, 1}: fluss.EarliestOffset}); err != nil {
		t.Fatal(err)
	}
	recs := pollAll(t, ctx, sc, 12)
	for _, r := range recs {
		if r.Row[0] != "eu" || r.Bucket.PartitionID != eu || r.ChangeType != fluss.Insert {
			t.Fatalf("record %+v", r)
		}
	}
	offs, err := admin.ListPartitionOffsets(ctx, tbl.Path(), "eu", []int32{0, 1}, fluss.OffsetLatest())
	if err != nil || offs[0]+offs[1] != 12 {
		t.Fatalf("ListPartitionOffsets = %v, %v", offs, err)
	}
	if err := admin.DropPartition(ctx, tbl.Path(), map[string]string{"region": "us"}, false); err != nil {
		t.Fatal(err)
	}
	parts, err = admin.ListPartitionInfos(ctx, tbl.Path(), nil)
	if err != nil || len(parts) != 1 || parts[0].Spec["region"] != "eu" {
		t.Fatalf("after drop: %v, %v", parts, err)
	}
}
