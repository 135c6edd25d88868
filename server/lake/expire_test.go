package lake

import (
	"context"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go/table"

	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/server/cluster"
)

// filesUnder lists the files below dir whose name ends with suffix.
func filesUnder(t *testing.T, dir, suffix string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(p, suffix) {
			out[p] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// liveDataFiles are the data files the table's current snapshot reads.
func liveDataFiles(t *testing.T, tbl *table.Table) map[string]bool {
	t.Helper()
	tasks, err := tbl.Scan().PlanFiles(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, task := range tasks {
		out[strings.TrimPrefix(task.File.FilePath(), "file://")] = true
	}
	return out
}

// With auto-expire (Strom's default) and a retention of 0 ms / 1 snapshot, each round's
// older snapshots expire: after a compaction the replaced data files and the expired rounds'
// offsets files are deleted, while the rows read back are exactly those written, the tiered
// offsets stay readable, and a restart resumes without duplicates.
func TestSnapshotExpiryRemovesOldFilesKeepsRows(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t, 1)
	h.info.Descriptor.CustomProperties = map[string]string{} // iceberg.* are custom properties, as in Fluss
	h.info.Descriptor.Properties[metadata.PropDatalakeAutoCompaction] = "true"
	h.info.Descriptor.CustomProperties["iceberg."+table.MaxSnapshotAgeMsKey] = "0"
	h.info.Descriptor.CustomProperties["iceberg."+table.MinSnapshotsToKeepKey] = "1"
	h.info.Descriptor.CustomProperties["iceberg."+table.MetadataPreviousVersionsMaxKey] = "2"
	tr := h.tierer()
	for round := 0; round < 6; round++ {
		h.write(0, 3)
		if _, err := tr.TierOnce(ctx, h.buckets); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
	}
	h.checkExactly(h.scan(tr), 18)
	tbl, err := tr.cat.LoadTable(ctx, Identifier(h.info.Path))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(tbl.Metadata().Snapshots()); n != 1 {
		t.Errorf("%d snapshots kept, want 1", n)
	}
	live := liveDataFiles(t, tbl)
	onDisk := filesUnder(t, filepath.Join(h.dir, "lake", "warehouse"), ".parquet")
	if len(live) >= 6 {
		t.Errorf("%d live data files after 6 rounds: nothing was compacted", len(live))
	}
	for p := range onDisk {
		if !live[p] {
			t.Errorf("data file %s is no longer read but was not deleted", p)
		}
	}
	offsets := filesUnder(t, filepath.Join(h.dir, "lake", "offsets"), ".offsets")
	if len(offsets) != 1 {
		t.Errorf("offsets files %v, want only the kept snapshot's", offsets)
	}
	// Superseded metadata files beyond previous-versions-max are deleted too.
	if meta := filesUnder(t, filepath.Join(h.dir, "lake", "warehouse"), ".metadata.json"); len(meta) > 3 {
		t.Errorf("%d metadata files kept, want the current one and 2 previous", len(meta))
	}
	snap, err := tr.Snapshot(ctx, h.info, nil)
	if err != nil || snap.Offsets[BucketKey{PartitionID: cluster.NoPartition, Bucket: 0}] != 18 {
		t.Fatalf("lake snapshot %+v %v, want offset 18", snap, err)
	}
	// A restart reads the offsets from the kept snapshot: nothing is tiered twice.
	tr.Close()
	tr = h.tierer()
	h.write(0, 2)
	if _, err := tr.TierOnce(ctx, h.buckets); err != nil {
		t.Fatal(err)
	}
	h.checkExactly(h.scan(tr), 20)
}

// The newest tiering snapshot is never expired, even when another writer committed after it
// and the retention would keep only that writer's snapshot.
func TestSnapshotExpiryKeepsNewestTieringSnapshot(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t, 1)
	h.info.Descriptor.CustomProperties = map[string]string{}
	h.info.Descriptor.CustomProperties["iceberg."+table.MaxSnapshotAgeMsKey] = "0"
	h.info.Descriptor.CustomProperties["iceberg."+table.MinSnapshotsToKeepKey] = "1"
	// Expiry is called by hand below, once two tiering snapshots and a foreign one exist.
	h.info.Descriptor.Properties[metadata.PropDatalakeAutoExpireSnapshot] = "false"
	tr := h.tierer()
	h.write(0, 3)
	if _, err := tr.TierOnce(ctx, h.buckets); err != nil {
		t.Fatal(err)
	}
	h.write(0, 2)
	if _, err := tr.TierOnce(ctx, h.buckets); err != nil {
		t.Fatal(err)
	}
	tiered, err := tr.Snapshot(ctx, h.info, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Another writer appends one row of its own.
	tbl, err := tr.cat.LoadTable(ctx, Identifier(h.info.Path))
	if err != nil {
		t.Fatal(err)
	}
	sc, err := table.SchemaToArrowSchema(tbl.Schema(), nil, true, false)
	if err != nil {
		t.Fatal(err)
	}
	rb := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer rb.Release()
	for i, f := range sc.Fields() {
		if f.Nullable {
			rb.Field(i).AppendNull()
		} else {
			rb.Field(i).AppendEmptyValue()
		}
	}
	rec := rb.NewRecordBatch()
	defer rec.Release()
	rdr, err := array.NewRecordReader(sc, []arrow.RecordBatch{rec})
	if err != nil {
		t.Fatal(err)
	}
	tx := tbl.NewTransaction()
	if err := tx.Append(ctx, rdr, nil); err != nil {
		t.Fatal(err)
	}
	if tbl, err = tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Millisecond) // every snapshot older than the 0 ms retention
	out, n, err := tr.expireSnapshots(ctx, h.info, tbl)
	if err != nil {
		t.Fatal(err)
	}
	// The first tiering snapshot expires; the second is kept although only one snapshot (the
	// foreign head) would be by the retention alone.
	if n != 1 || out.Metadata().SnapshotByID(tiered.SnapshotID) == nil {
		t.Fatalf("expired %d snapshots; newest tiering snapshot %d kept: %v", n, tiered.SnapshotID,
			out.Metadata().SnapshotByID(tiered.SnapshotID) != nil)
	}
	again, err := tr.Snapshot(ctx, h.info, nil)
	if err != nil || again.SnapshotID != tiered.SnapshotID || again.Offsets[BucketKey{PartitionID: cluster.NoPartition, Bucket: 0}] != 5 {
		t.Fatalf("lake snapshot after expiry %+v %v, want %d at offset 5", again, err, tiered.SnapshotID)
	}
}

func TestRetentionOptions(t *testing.T) {
	info := logTable(1)
	info.Descriptor.CustomProperties = map[string]string{}
	h := newHarness(t, 1)
	tr := h.tierer()
	h.write(0, 1)
	if _, err := tr.TierOnce(context.Background(), h.buckets); err != nil {
		t.Fatal(err)
	}
	tbl, err := tr.cat.LoadTable(context.Background(), Identifier(h.info.Path))
	if err != nil {
		t.Fatal(err)
	}
	if age, keep, err := retention(&info.Descriptor, tbl); err != nil || age != DefaultMaxSnapshotAge || keep != DefaultMinSnapshotsToKeep {
		t.Errorf("defaults: %v %d %v", age, keep, err)
	}
	info.Descriptor.CustomProperties["iceberg."+table.MaxSnapshotAgeMsKey] = "60000"
	info.Descriptor.CustomProperties["iceberg."+table.MinSnapshotsToKeepKey] = "3"
	if age, keep, err := retention(&info.Descriptor, tbl); err != nil || age.Milliseconds() != 60000 || keep != 3 {
		t.Errorf("options: %v %d %v", age, keep, err)
	}
	info.Descriptor.CustomProperties["iceberg."+table.MinSnapshotsToKeepKey] = "0"
	if _, _, err := retention(&info.Descriptor, tbl); err == nil {
		t.Error("min-snapshots-to-keep 0 accepted")
	}
	if !autoExpire(&info.Descriptor) {
		t.Error("auto-expire is off by default")
	}
	info.Descriptor.Properties[metadata.PropDatalakeAutoExpireSnapshot] = "false"
	if autoExpire(&info.Descriptor) {
		t.Error("auto-expire false is not honoured")
	}
}
