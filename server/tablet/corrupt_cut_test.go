package tablet_test

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"
)

// TestCorruptFollowerIsCutAtItsLastGoodBatch: a byte goes bad in the newest sealed segment of
// a log table's follower. The repair cuts the log at the corrupt batch, keeps what comes
// before it (the older segment files stay where they are) and fetches only the rest from the
// leader (docs/durability.md, "The scrubber"); the follower ends byte-identical to the
// leader, with one repair counted as a cut.
func TestCorruptFollowerIsCutAtItsLastGoodBatch(t *testing.T) {
	c := newRCluster(t, 2, 1, time.Minute)
	c.segmentBytes = 512
	for _, id := range []int32{1, 2} { // small segments on both
		c.stop(id)
		c.start(id)
	}
	c.table(1, false)
	c.elect(1, []int32{1, 2}, 1, []int32{1, 2})
	for range 40 {
		if r := produceTo(t, c.nodes[1].client, 1, -1, 10000, rowBatch(5)); r.GetErrorCode() != 0 {
			t.Fatalf("produce: %d %s", r.GetErrorCode(), r.GetErrorMessage())
		}
	}
	c.waitInSync(1, 1, 2)

	dir := filepath.Join(c.nodes[2].dir, "table-1", "bucket-0")
	segs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	sort.Strings(segs)
	if len(segs) < 4 {
		t.Fatalf("the follower holds %d segments; the test needs at least 4", len(segs))
	}
	first, err := os.Stat(segs[0])
	if err != nil {
		t.Fatal(err)
	}
	bad := segs[len(segs)-2]
	flip(t, bad)
	res, err := c.replica(2, 1).Log.Scrub(context.Background(), nil)
	if res.Corrupt == nil {
		t.Fatalf("the scrub found no corrupt batch in %s (err %v)", bad, err)
	}
	waitFor(t, "the corrupt follower log cut and repaired", func() bool {
		st := c.nodes[2].srv.ScrubStats()
		return st.Repaired == 1
	})
	if st := c.nodes[2].srv.ScrubStats(); st.Cut != 1 {
		t.Fatalf("scrub stats %+v: the follower was rebuilt whole, not cut at its last good batch", st)
	}
	c.waitInSync(1, 1, 2)
	if again, err := os.Stat(segs[0]); err != nil || !os.SameFile(first, again) {
		t.Fatalf("the oldest segment file was not kept (%v): the whole log was copied again", err)
	}
	if r := produceTo(t, c.nodes[1].client, 1, -1, 10000, rowBatch(5)); r.GetErrorCode() != 0 {
		t.Fatalf("produce after the repair: %d %s", r.GetErrorCode(), r.GetErrorMessage())
	}
	c.waitInSync(1, 1, 2)
}

// flip inverts one bit of the second-last byte of path (inside its last batch's records,
// which its CRC-32C covers).
func flip(t *testing.T, path string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	var b [1]byte
	if _, err := f.ReadAt(b[:], st.Size()-2); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0x40
	if _, err := f.WriteAt(b[:], st.Size()-2); err != nil {
		t.Fatal(err)
	}
}
