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
