package fluss_test

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/stromdb/strom/fluss"
)

// Reading from the start of a log whose old segments were tiered to remote storage and
// deleted locally. Needs an Apache Fluss cluster (FLUSS_BOOTSTRAP) that tiers quickly
// (log.segment.file-size: 4kb, remote.log.task-interval-duration: 1s, remote.data.dir on a
// file system this machine mounts) and FLUSS_TIERING=1; Strom does not tier logs.
func TestTieredLogRead(t *testing.T) {
	if externalCluster == "" || os.Getenv("FLUSS_TIERING") == "" {
		t.Skip("needs FLUSS_BOOTSTRAP and FLUSS_TIERING=1: an Apache Fluss cluster that tiers logs")
	}
	conn, ctx := connect(t)
	tbl := createTable(t, ctx, conn, "tiered", fluss.TableDescriptor{
		Schema: fluss.NewSchema([]fluss.Column{
			fluss.NewColumn("id", fluss.Int()),
			fluss.NewColumn("pad", fluss.String()),
		}),
		BucketCount: 1,
		Properties:  map[string]string{"table.log.tiered.local-segments": "1", "table.log.arrow.compression.type": "NONE"},
	})
	w, err := tbl.NewAppend().CreateWriter()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	const batches, perBatch = 40, 20
	pad := fmt.Sprintf("%0200d", 0)
	for b := range batches {
		for i := range perBatch {
			if _, err := w.Append(ctx, fluss.Row{int32(b*perBatch + i), pad}); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Flush(ctx); err != nil { // one batch each: many small segments
			t.Fatal(err)
		}
	}
	// Read everything from the start until the start is only in remote storage (tiering runs
	// every second; the local log keeps one segment).
	for attempt := 0; ; attempt++ {
		sc, err := tbl.NewScan().Project(0).CreateLogScanner()
		if err != nil {
			t.Fatal(err)
		}
		if err := sc.Subscribe(ctx, 0, fluss.EarliestOffset); err != nil {
			t.Fatal(err)
		}
		recs := pollAll(t, ctx, sc, batches*perBatch)
		for i, r := range recs {
			if r.Offset != int64(i) || r.Row[0] != int32(i) || len(r.Row) != 1 {
				t.Fatalf("record %d: offset %d row %v", i, r.Offset, r.Row)
			}
		}
		remote := fluss.RemoteSegmentReads(sc)
		sc.Close()
		if remote > 0 {
			t.Logf("read %d records, %d remote segment reads, after %d attempts", len(recs), remote, attempt+1)
			return
		}
		if attempt == 20 {
			t.Fatal("the log was never tiered: check the cluster's tiering settings")
		}
		time.Sleep(3 * time.Second)
	}
}
