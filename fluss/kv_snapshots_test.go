package fluss_test

import (
	"testing"
	"time"

	"github.com/stromdb/strom/fluss"
	"github.com/stromdb/strom/fluss/internal/testserver"
	"github.com/stromdb/strom/server/config"
)

// KV snapshots through the client: the newest snapshot covers what was written, its metadata
// lists a RocksDB directory's files, and leases hold and release snapshots.
func TestKvSnapshots(t *testing.T) {
	needsStrom(t)
	srv := testserver.Start(t, func(c *config.Config) {
		if err := c.Set("kv.snapshot.interval", "100ms"); err != nil {
			t.Fatal(err)
		}
	})
	ctx := t.Context()
	conn, err := fluss.Connect(ctx, fluss.Config{BootstrapServers: srv.Bootstrap, WriterBatchTimeout: 5e6})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	admin := conn.Admin()
	tbl := createTable(t, ctx, conn, "snapshotted", pkDesc(1))
	path := tbl.Info().Path
	w, err := tbl.NewUpsert().CreateWriter()
	if err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		if _, err := w.Upsert(ctx, fluss.Row{int32(i), "u", int64(i)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	w.Close()

	var snap fluss.KvSnapshot
	deadline := time.Now().Add(15 * time.Second)
	for {
		snaps, err := admin.GetLatestKvSnapshots(ctx, path, "")
		if err != nil {
			t.Fatal(err)
		}
		if snaps.NumBuckets != 1 || snaps.PartitionID != fluss.NoPartition {
			t.Fatalf("snapshots %+v", snaps)
		}
		if s, ok := snaps.Snapshots[0]; ok && s.LogOffset > 0 {
			snap = s
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no snapshot of the written rows: %+v", snaps)
		}
		time.Sleep(50 * time.Millisecond)
	}
	b := fluss.TableBucket{TableID: tbl.Info().TableID, PartitionID: fluss.NoPartition, Bucket: 0}
	md, err := admin.GetKvSnapshotMetadata(ctx, b, snap.SnapshotID)
	if err != nil {
		t.Fatal(err)
	}
	if md.LogOffset != snap.LogOffset || len(md.Files) < 3 {
		t.Fatalf("metadata %+v of snapshot %+v", md, snap)
	}
	_, err = admin.GetKvSnapshotMetadata(ctx, b, 9999)
	mustCode(t, err, fluss.ErrKvSnapshotNotExist)

	unavailable, err := admin.AcquireKvSnapshotLease(ctx, "reader", time.Minute, []fluss.KvSnapshotRef{{Bucket: b, SnapshotID: snap.SnapshotID}, {Bucket: b, SnapshotID: 9999}})
	if err != nil {
		t.Fatal(err)
	}
	if len(unavailable) != 1 || unavailable[0].SnapshotID != 9999 || unavailable[0].Bucket != b {
		t.Fatalf("unavailable %+v", unavailable)
	}
	if err := admin.ReleaseKvSnapshotLease(ctx, "reader", []fluss.TableBucket{b}); err != nil {
		t.Fatal(err)
	}
	if err := admin.DropKvSnapshotLease(ctx, "reader"); err != nil {
		t.Fatal(err)
	}
	_, err = admin.GetLatestKvSnapshots(ctx, fluss.NewTablePath("it", "missing"), "")
	mustCode(t, err, fluss.ErrTableNotExist)
}
