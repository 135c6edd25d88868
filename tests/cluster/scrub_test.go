package cluster_test

import (
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stromdb/strom/tests/clustertest"
)

// TestScrubberRepairsCorruptFollower flips a byte in a sealed segment of a follower while
// the cluster runs: the follower's scrubber finds it, takes the replica offline and rebuilds
// it from the leader (docs/durability.md, "The scrubber"); afterwards the replicas hold
// identical logs and reads return every acknowledged row exactly once.
func TestScrubberRepairsCorruptFollower(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process cluster test (-short)")
	}
	set := maps.Clone(faultOptions)
	set["log.segment.file-size"] = "1kb"
	set["log.scrub.interval"] = "1s"
	set["log.scrub.rate"] = "64mb"
	c := clustertest.StartCluster(t, stromBin, clustertest.ClusterOptions{Set: set, HTTP: true})
	ctx := testContext(t)
	conn := connect(t, ctx, c)
	table := createTable(t, ctx, conn, "scrub_log", logTable())
	s := startAppends(t, ctx, table)
	waitAcked(t, s.acked, 20000, 60*time.Second)
	s.end()
	checkNoFailedWrites(t, s.acked)
	checkReplicasIdentical(t, c, table)

	// The bucket with data (log writers pick a bucket per batch, one may stay empty) and one
	// of its followers.
	var (
		follower *clustertest.Node
		leader   int32
		segs     []string
	)
	for b := int32(0); b < table.Info().NumBuckets() && follower == nil; b++ {
		leader = leaderOf(t, ctx, conn, table, b)
		for _, n := range c.Nodes {
			if n.ID == leader {
				continue
			}
			dir := filepath.Join(n.DataDir, "tablet", "table-"+strconv.FormatInt(table.Info().TableID, 10), "bucket-"+strconv.Itoa(int(b)))
			segs, _ = filepath.Glob(filepath.Join(dir, "*.log"))
			sort.Strings(segs)
			t.Logf("bucket %d on follower %d: %d segments", b, n.ID, len(segs))
			if len(segs) >= 2 {
				follower = n
			}
			break
		}
	}
	if follower == nil {
		t.Fatal("no follower holds a sealed segment; the test needs one")
	}
	// The newest sealed segment: the repair cuts the log there and fetches only what follows.
	bad := segs[len(segs)-2]
	flipByte(t, bad, 200)
	t.Logf("flipped byte 200 of %s, segment %d of %d (node %d follows leader %d)", bad, len(segs)-1, len(segs), follower.ID, leader)

	deadline := time.Now().Add(60 * time.Second)
	for !logContains(t, follower.LogPath(), "repairing a corrupt follower log") {
		if time.Now().After(deadline) {
			t.Fatalf("node %d did not repair its corrupt replica within 60 s", follower.ID)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if !logContains(t, follower.LogPath(), "scrubber: bytes of a sealed log segment went bad") {
		t.Error("no scrubber WARN before the repair")
	}
	if line := logLine(t, follower.LogPath(), "cut at the last good batch"); line == "" {
		t.Errorf("node %d rebuilt its corrupt log whole instead of cutting it at the last good batch", follower.ID)
	} else {
		t.Logf("%.400s", line)
	}
	checkReplicasIdentical(t, c, table)
	checkLogExactlyOnce(t, s.acked, readLog(t, ctx, conn, table))
	metrics := scrape(t, follower.HTTPAddr)
	for _, want := range []string{"fluss_tabletserver_scrubCorruptReplicas_total", "fluss_tabletserver_scrubRepairedReplicas_total", "fluss_tabletserver_scrubCutReplicas_total"} {
		if !strings.Contains(metrics, want) || !hasPositive(metrics, want) {
			t.Errorf("metric %s of node %d is not positive after the repair", want, follower.ID)
		}
	}
}

// scrape returns the Prometheus text of a node's /metrics.
func scrape(t *testing.T, addr string) string {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// hasPositive reports whether a sample of metric name has a value above 0.
func hasPositive(text, name string) bool {
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, name) {
			continue
		}
		f := strings.Fields(line)
		if v, err := strconv.ParseFloat(f[len(f)-1], 64); err == nil && v > 0 {
			return true
		}
	}
	return false
}

func flipByte(t *testing.T, path string, pos int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var b [1]byte
	if _, err := f.ReadAt(b[:], pos); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0x40
	if _, err := f.WriteAt(b[:], pos); err != nil {
		t.Fatal(err)
	}
}

// logLine returns the first line of the log at path that contains s, or "".
func logLine(t *testing.T, path, s string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, s) {
			return l
		}
	}
	return ""
}

func logContains(t *testing.T, path, s string) bool {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Contains(string(b), s)
}
