package fluss_test

import (
	"slices"
	"sync"
	"testing"

	"github.com/stromdb/strom/fluss"
)

// Writes to partitions that do not exist create them (Fluss's
// client.writer.dynamic-create-partition.enabled, on by default), also when many writers
// race for the same new partition.
func TestDynamicPartitionCreation(t *testing.T) {
	conn, ctx := connect(t)
	tbl := createTable(t, ctx, conn, "dyn", fluss.TableDescriptor{
		Schema: fluss.NewSchema([]fluss.Column{
			fluss.NewColumn("region", fluss.String()),
			fluss.NewColumn("id", fluss.Int()),
			fluss.NewColumn("v", fluss.BigInt()),
		}, "region", "id"),
		PartitionKeys: []string{"region"},
		BucketCount:   2,
	})
	w, err := tbl.NewUpsert().CreateWriter()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, region := range []string{"eu", "us", "asia"} {
				if _, err := w.Upsert(ctx, fluss.Row{region, int32(g), int64(g)}); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	parts, err := conn.Admin().ListPartitionInfos(ctx, tbl.Path(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range parts {
		names = append(names, p.Name)
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{"asia", "eu", "us"}) {
		t.Fatalf("partitions %v", names)
	}
	lk, err := tbl.NewLookup().CreateLookuper()
	if err != nil {
		t.Fatal(err)
	}
	for _, region := range []string{"eu", "us", "asia"} {
		for g := range 8 {
			r, err := lk.Lookup(ctx, fluss.Row{region, int32(g)})
			if err != nil || r == nil || r[2] != int64(g) {
				t.Fatalf("lookup %s/%d = %v, %v", region, g, r, err)
			}
		}
	}
}

// A partition dropped behind a writer's back is forgotten on the server's first
// PARTITION_NOT_EXISTS (or equivalent) answer; the next write creates it again.
func TestWriteAfterPartitionDropped(t *testing.T) {
	conn, ctx := connect(t)
	tbl := createTable(t, ctx, conn, "dropped", fluss.TableDescriptor{
		Schema: fluss.NewSchema([]fluss.Column{
			fluss.NewColumn("region", fluss.String()),
			fluss.NewColumn("id", fluss.Int()),
		}, "region", "id"),
		PartitionKeys: []string{"region"},
		BucketCount:   1,
	})
	w, err := tbl.NewUpsert().CreateWriter()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	upsert := func(id int32) error {
		res, err := w.Upsert(ctx, fluss.Row{"eu", id})
		if err != nil {
			return err
		}
		return res.Wait(ctx)
	}
	if err := upsert(1); err != nil {
		t.Fatal(err)
	}
	if err := conn.Admin().DropPartition(ctx, tbl.Path(), map[string]string{"region": "eu"}, false); err != nil {
		t.Fatal(err)
	}
	// The first write may still reach the dropped partition (Apache Fluss drops it
	// asynchronously) or fail with PARTITION_NOT_EXISTS, which makes the client forget it;
	// within a few writes one must land in the re-created partition.
	var last int32
	for id := int32(2); ; id++ {
		err := upsert(id)
		if err == nil && id > 2 {
			last = id
			break
		}
		t.Logf("write %d after the drop: %v", id, err)
		if id == 6 {
			t.Fatalf("no write succeeded after the partition was dropped: %v", err)
		}
	}
	lk, err := tbl.NewLookup().CreateLookuper()
	if err != nil {
		t.Fatal(err)
	}
	if r, err := lk.Lookup(ctx, fluss.Row{"eu", last}); err != nil || r == nil {
		t.Fatalf("lookup = %v, %v", r, err)
	}
	if r, err := lk.Lookup(ctx, fluss.Row{"eu", int32(1)}); err != nil || r != nil {
		t.Fatalf("row of the dropped partition: %v, %v", r, err)
	}
}
