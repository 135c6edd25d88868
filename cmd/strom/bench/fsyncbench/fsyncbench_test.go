package fsyncbench

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"
)

// TestRunCounts runs every layout briefly and checks the counts, never the timings: every
// acknowledged append carries its record, the per-file layout syncs once per append, the
// journal at most once per append (groups), and no file is left behind.
func TestRunCounts(t *testing.T) {
	dir := t.TempDir()
	res, err := Run(context.Background(), Config{
		Dir: dir, Writers: []int{1, 3}, RecordBytes: []int{512}, Duration: 30 * time.Millisecond,
		Rounds: 1, SegmentSyncEvery: 10 * time.Millisecond, ReferenceBytes: 2 << 20,
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Samples) != 2*len(Layouts) || len(res.ReferenceMBps) != 1 || res.ReferenceMBps[0] <= 0 {
		t.Fatalf("%d samples, reference %v", len(res.Samples), res.ReferenceMBps)
	}
	for _, s := range res.Samples {
		if s.Appends == 0 || s.Bytes != s.Appends*512 || s.Syncs == 0 || s.P50Ms <= 0 || s.P99Ms < s.P50Ms {
			t.Errorf("%+v: want appends, each of 512 bytes, syncs and latencies", s)
		}
		switch s.Layout {
		case LayoutFiles:
			if s.Syncs != s.Appends {
				t.Errorf("files: %d syncs for %d appends, want one each", s.Syncs, s.Appends)
			}
		case LayoutJournal:
			if s.Syncs > s.Appends {
				t.Errorf("journal: %d syncs for %d appends, want at most one each", s.Syncs, s.Appends)
			}
		}
	}
	left, err := os.ReadDir(dir)
	if err != nil || len(left) != 0 {
		t.Errorf("left behind: %v (%v)", left, err)
	}
	// Striped over two journals, every writer's appends are still acknowledged and counted.
	res, err = Run(context.Background(), Config{Dir: dir, Writers: []int{3}, RecordBytes: []int{100}, Duration: 20 * time.Millisecond,
		Rounds: 1, Journals: 2, Layouts: []Layout{LayoutJournal}})
	if err != nil || len(res.Samples) != 1 {
		t.Fatalf("two journals: %+v, %v", res, err)
	}
	if s := res.Samples[0]; s.Journals != 2 || s.Appends == 0 || s.Bytes != s.Appends*100 || s.Syncs == 0 || s.Syncs > s.Appends {
		t.Errorf("two journals: %+v", s)
	}
	if _, err := Run(context.Background(), Config{Dir: dir}); err == nil {
		t.Error("empty config accepted")
	}
}

func TestCommitterGroupsConcurrentAppends(t *testing.T) {
	f, err := os.Create(t.TempDir() + "/journal")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var st stats
	c := newCommitter(f, &st)
	go c.run()
	const writers, each = 8, 20
	done := make(chan error, writers)
	for w := range writers {
		go func() {
			for range each {
				if err := c.append([]byte{byte('a' + w)}); err != nil {
					done <- err
					return
				}
			}
			done <- nil
		}()
	}
	for range writers {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	c.close()
	b, err := os.ReadFile(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	// Every acknowledged record is in the journal exactly once, and no group was synced twice.
	if len(b) != writers*each || st.syncs() < 1 || st.syncs() > writers*each {
		t.Errorf("journal holds %d bytes after %d syncs, want %d bytes and 1..%d syncs", len(b), st.syncs(), writers*each, writers*each)
	}
	for w := range writers {
		if n := strings.Count(string(b), string(rune('a'+w))); n != each {
			t.Errorf("writer %d: %d records in the journal, want %d", w, n, each)
		}
	}
	if err := c.append([]byte("x")); err != errClosed {
		t.Errorf("append after close = %v, want errClosed", err)
	}
}

func TestMarkdown(t *testing.T) {
	samples := []Sample{
		{Layout: LayoutFiles, Writers: 4, RecordBytes: 4096, Round: 1, Bytes: 100e6, Syncs: 1000, Appends: 1000, Seconds: 1, P50Ms: 4},
		{Layout: LayoutFiles, Writers: 4, RecordBytes: 4096, Round: 2, Bytes: 120e6, Syncs: 1200, Appends: 1200, Seconds: 1, P50Ms: 3},
		{Layout: LayoutJournal, Writers: 4, RecordBytes: 4096, Round: 1, Bytes: 330e6, Syncs: 400, Appends: 1600, Seconds: 1, P50Ms: 1},
		{Layout: LayoutJournal, Writers: 4, RecordBytes: 4096, Round: 2, Bytes: 330e6, Syncs: 400, Appends: 1600, Seconds: 1, P50Ms: 1},
		{Layout: LayoutFiles, Writers: 1, RecordBytes: 128 << 10, Round: 1, Bytes: 50e6, Syncs: 300, Appends: 300, Seconds: 1, P50Ms: 2},
	}
	md := Markdown(samples, []Layout{LayoutFiles, LayoutJournal}, []float64{1000, 900, 1100})
	for _, want := range []string{
		"| record | writers | files MB/s (of disk) | fdatasync/s | p50 ms | journal MB/s (of disk) | fdatasync/s | p50 ms | ÷ files |",
		"|---|---|---|---|---|---|---|---|---|",
		"| 4 KiB | 4 | 110 (100–120) 11 % | 1100 | 3.50 | 330 33 % | 400 | 1.00 | 3.00× |",
		"| 128 KiB | 1 | 50 5 % | 300 | 2.00 | – | – | – | – |",
		"1000 MB/s (900–1100)",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("table lacks %q:\n%s", want, md)
		}
	}
	if strings.Index(md, "| 4 KiB") > strings.Index(md, "| 128 KiB") {
		t.Errorf("rows not ordered by record size:\n%s", md)
	}
}
