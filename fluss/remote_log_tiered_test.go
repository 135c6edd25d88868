package fluss_test

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stromdb/strom/fluss"
	"github.com/stromdb/strom/fluss/internal/testserver"
	"github.com/stromdb/strom/server/config"
	"github.com/stromdb/strom/server/remote/remotetest"
)

// A table whose old segments were tiered to remote storage (remote.data.dir) and deleted
// locally: the scanner reads them from the files remote_log_fetch_info names, every row
// exactly once, then the local tail. On a file store the client opens the paths; on S3 it
// downloads them with what GET_FILESYSTEM_SECURITY_TOKEN hands out.
func TestScanReadsTieredSegments(t *testing.T) {
	needsStrom(t)
	t.Run("file", func(t *testing.T) {
		dataDir := t.TempDir()
		scanTiered(t, dataDir, map[string]string{"remote.data.dir": filepath.Join(dataDir, "remote")})
	})
	t.Run("s3", func(t *testing.T) {
		scanTiered(t, t.TempDir(), remotetest.Start(t).Options("cluster1"))
	})
}

func scanTiered(t *testing.T, dataDir string, remoteOpts map[string]string) {
	srv := testserver.Start(t, func(c *config.Config) {
		c.DataDir = dataDir
		for k, v := range remoteOpts {
			if err := c.Set(k, v); err != nil {
				t.Fatal(err)
			}
		}
		for k, v := range map[string]string{"log.segment.file-size": "64kb", "remote.log.task-interval-duration": "100ms"} {
			if err := c.Set(k, v); err != nil {
				t.Fatal(err)
			}
		}
	})
	ctx := t.Context()
	// Small batches: a segment rolls only between appends.
	conn, err := fluss.Connect(ctx, fluss.Config{BootstrapServers: srv.Bootstrap, WriterBatchTimeout: 5e6, WriterBatchSize: 16 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	desc := logDesc(1)
	desc.Properties = map[string]string{"table.log.tiered.local-segments": "1"}
	tbl := createTable(t, ctx, conn, "tiered", desc)
	w, err := tbl.NewAppend().CreateWriter()
	if err != nil {
		t.Fatal(err)
	}
	const n = 3000 // about 600 KB of random text: ~10 segments of 64 KB
	buf := make([]byte, 100)
	for i := range n {
		_, _ = rand.Read(buf)
		if _, err := w.Append(ctx, fluss.Row{int32(i), hex.EncodeToString(buf), float64(i)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	w.Close()
	bucketDir := filepath.Join(dataDir, "tablet", "table-"+strconv.FormatInt(tbl.Info().TableID, 10), "bucket-0")
	for deadline := time.Now().Add(30 * time.Second); localLogs(t, bucketDir) > 1; {
		if time.Now().After(deadline) {
			t.Fatalf("%d local segments left", localLogs(t, bucketDir))
		}
		time.Sleep(50 * time.Millisecond)
	}
	earliest, err := conn.Admin().ListOffsets(ctx, tbl.Path(), []int32{0}, fluss.OffsetEarliest())
	if err != nil || earliest[0] != 0 {
		t.Fatalf("earliest %v, %v: want the remote log start 0", earliest, err)
	}

	sc, err := tbl.NewScan().CreateLogScanner()
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	if err := sc.SubscribeBuckets(ctx, map[int32]int64{0: fluss.EarliestOffset}); err != nil {
		t.Fatal(err)
	}
	var offsets []int64
	for attempt := 0; len(offsets) <= n && attempt < 200; attempt++ {
		recs, err := sc.Poll(ctx, 200*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			if r.Row[0].(int32) != int32(r.Offset) {
				t.Fatalf("offset %d holds row %v", r.Offset, r.Row)
			}
			offsets = append(offsets, r.Offset)
		}
		if len(offsets) == n && attempt > 0 {
			break // one more poll after the last row: a duplicate would show up
		}
	}
	if len(offsets) != n {
		t.Fatalf("read %d rows, want %d", len(offsets), n)
	}
	for i, o := range offsets {
		if o != int64(i) {
			t.Fatalf("row %d at offset %d: lost or read twice", i, o)
		}
	}
	if n := fluss.RemoteSegmentReads(sc); n < 3 {
		t.Fatalf("%d remote segment reads: the test did not exercise tiering", n)
	}
}

func localLogs(t *testing.T, dir string) int {
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	k := 0
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".log") {
			k++
		}
	}
	return k
}
