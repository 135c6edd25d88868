package logstore

import (
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/record"
)

func TestDeleteExpiredSegments(t *testing.T) {
	dir := t.TempDir()
	l := open(t, dir, Options{SegmentBytes: 300, TTL: time.Second})
	defer l.Close()
	// Two 148-byte batches per segment; timestamps 1000, 2000, ... per batch.
	for i := 0; i < 9; i++ {
		mustAppend(t, l, int64(1000*(i+1)), plain(1, 100))
	}
	if n := len(l.v.Load().segs); n != 5 {
		t.Fatalf("%d segments", n)
	}
	// A reader holds the first segment while retention deletes it.
	held, err := l.Read(0, 1<<20, true)
	if err != nil || held.Size == 0 {
		t.Fatalf("Read: %v", err)
	}
	defer held.Release()

	// At 4500 segments whose max ts < 3500 are expired: segment [0,1] (max 2000) only.
	if n, err := l.Retention().DeleteExpiredSegments(4500); err != nil || n != 1 {
		t.Fatalf("deleted %d, %v", n, err)
	}
	if l.LogStartOffset() != 2 {
		t.Fatalf("log start %d", l.LogStartOffset())
	}
	_, err = l.Read(1, 100, true)
	wantCode(t, err, ferr.LogOffsetOutOfRangeException)
	if _, err := os.Stat(fileName(dir, 0, logSuffix)); !os.IsNotExist(err) {
		t.Fatalf("segment file still there: %v", err)
	}
	b, err := held.AppendTo(nil)
	if err != nil || record.Batch(b[:148]).Validate() != nil {
		t.Fatalf("held range unreadable after deletion: %v", err)
	}

	// Far in the future everything but the active segment goes, and the log still works.
	if n, _ := l.Retention().DeleteExpiredSegments(1 << 40); n != 3 {
		t.Fatalf("deleted %d", n)
	}
	if l.LogStartOffset() != 8 || len(l.v.Load().segs) != 1 {
		t.Fatalf("start %d segs %d", l.LogStartOffset(), len(l.v.Load().segs))
	}
	if got := readAll(t, l, 8); len(got) != 1 {
		t.Fatalf("read %d", len(got))
	}
	r := mustAppend(t, l, 20000, plain(1, 10))
	if r.FirstOffset != 9 {
		t.Fatalf("append at %d", r.FirstOffset)
	}
}

func TestRetentionLimits(t *testing.T) {
	l := open(t, t.TempDir(), Options{SegmentBytes: 300})
	defer l.Close()
	fill(t, l, 6, 1, 100, 1000)
	if n, _ := l.Retention().DeleteExpiredSegments(1 << 40); n != 0 {
		t.Fatal("TTL 0 must keep everything")
	}
	l.Retention().SetTTL(time.Millisecond)
	l.Retention().SetMinRetainOffset(3) // segment [2,3] holds offset 3: keep it and everything after
	if n, _ := l.Retention().DeleteExpiredSegments(1 << 40); n != 1 || l.LogStartOffset() != 2 {
		t.Fatalf("deleted %d start %d", n, l.LogStartOffset())
	}
}

func TestRetentionSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	opts := Options{SegmentBytes: 300, TTL: time.Millisecond}
	l := open(t, dir, opts)
	for s := int32(0); s < 6; s++ {
		mustAppend(t, l, 1000, batch(3, s, 1, 100))
	}
	if n, _ := l.Retention().DeleteExpiredSegments(1 << 40); n != 2 {
		t.Fatalf("deleted %d", n)
	}
	crash(l)
	l = open(t, dir, opts)
	defer l.Close()
	if l.LogStartOffset() != 4 || l.LogEndOffset() != 6 {
		t.Fatalf("start %d end %d", l.LogStartOffset(), l.LogEndOffset())
	}
	r, err := l.Append([]record.Batch{batch(3, 5, 1, 100)}, 2000)
	if err != nil || !r.Duplicate || r.FirstOffset != 5 {
		t.Fatalf("writer state lost: %+v %v", r, err)
	}
}

func TestTruncate(t *testing.T) {
	dir := t.TempDir()
	opts := Options{SegmentBytes: 300, IndexIntervalBytes: 100}
	l := open(t, dir, opts)
	for s := int32(0); s < 8; s++ {
		mustAppend(t, l, 1000+int64(s), batch(4, s, 2, 100)) // 2 offsets, 148 bytes each
	}
	// Offset 9 is inside batch [8,9]: the log ends at 8.
	if err := l.Replica().Truncate(9); err != nil {
		t.Fatal(err)
	}
	if l.LogEndOffset() != 8 || l.HighWatermark() != 8 || l.MaxTimestamp() != 1003 {
		t.Fatalf("LEO %d HW %d max ts %d", l.LogEndOffset(), l.HighWatermark(), l.MaxTimestamp())
	}
	if got := readAll(t, l, 0); len(got) != 4 {
		t.Fatalf("read %d", len(got))
	}
	// Writer state follows the truncation: seq 4 is new again, seq 3 a duplicate.
	if r, err := l.Append([]record.Batch{batch(4, 3, 2, 100)}, 2000); err != nil || !r.Duplicate {
		t.Fatalf("%+v %v", r, err)
	}
	if r := mustAppend(t, l, 2000, batch(4, 4, 2, 100)); r.FirstOffset != 8 || r.CommitTimestamp != 2000 {
		t.Fatalf("%+v", r)
	}
	if err := l.Replica().Truncate(-1); ferr.CodeOf(err) != ferr.LogOffsetOutOfRangeException {
		t.Fatalf("Truncate(-1): %v", err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = open(t, dir, opts)
	defer l.Close()
	if got := readAll(t, l, 0); len(got) != 5 || l.LogEndOffset() != 10 {
		t.Fatalf("after reopen: %d batches LEO %d", len(got), l.LogEndOffset())
	}
}

func TestDelete(t *testing.T) {
	dir := t.TempDir() + "/bucket"
	l := open(t, dir, Options{})
	fill(t, l, 3, 1, 10, 1)
	r, _ := l.Read(0, 100, true)
	if err := l.Delete(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatal("directory still exists")
	}
	if _, err := r.AppendTo(nil); err != nil {
		t.Fatalf("held range after Delete: %v", err)
	}
	r.Release()
	if _, err := l.Append([]record.Batch{plain(1, 1)}, 1); err != ErrClosed {
		t.Fatalf("append after delete: %v", err)
	}
}

// TestConcurrentReaders runs one writer (with rolls and retention) against readers that
// check every batch they see; run with -race.
func TestConcurrentReaders(t *testing.T) {
	l := open(t, t.TempDir(), Options{SegmentBytes: 4096, IndexIntervalBytes: 256, TTL: time.Millisecond})
	defer l.Close()
	const total = 400
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for r := 0; r < 3; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var off int64
			for {
				select {
				case <-stop:
					return
				default:
				}
				res, err := l.Read(off, 2048, true)
				if ferr.CodeOf(err) == ferr.LogOffsetOutOfRangeException {
					off = l.LogStartOffset()
					continue
				}
				if err != nil {
					t.Errorf("Read: %v", err)
					return
				}
				if res.Size == 0 {
					res.Release()
					continue
				}
				buf, err := res.AppendTo(nil)
				res.Release()
				if err != nil {
					t.Errorf("AppendTo: %v", err)
					return
				}
				for len(buf) > 0 {
					b, rest, ok := record.Split(buf)
					if !ok || b.Validate() != nil || b.NextOffset() <= off {
						t.Errorf("bad batch after offset %d", off)
						return
					}
					off, buf = b.NextOffset(), rest
				}
			}
		}()
	}
	for i := 0; i < total; i++ {
		mustAppend(t, l, int64(i), plain(int32(i%5), 50+i%200))
		if i%50 == 49 {
			if _, err := l.Retention().DeleteExpiredSegments(int64(i) + 10); err != nil {
				t.Fatal(err)
			}
		}
	}
	close(stop)
	wg.Wait()
}

// TestGroupCommit appends from many goroutines under FlushEveryAppend: every append must be
// acknowledged only once readable, and offsets must not overlap.
func TestGroupCommit(t *testing.T) {
	l := open(t, t.TempDir(), Options{SegmentBytes: 8192})
	defer l.Close()
	const workers, per = 8, 25
	var wg sync.WaitGroup
	results := make(chan AppendResult, workers*per)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < per; i++ {
				r, err := l.Append([]record.Batch{batch(int64(100+w), int32(i), 2, 100)}, int64(i))
				if err != nil {
					t.Error(err)
					return
				}
				if hw := l.HighWatermark(); hw <= r.LastOffset {
					t.Errorf("acknowledged offset %d above HW %d", r.LastOffset, hw)
				}
				results <- r
			}
		}(w)
	}
	wg.Wait()
	close(results)
	seen := map[int64]bool{}
	for r := range results {
		for o := r.FirstOffset; o <= r.LastOffset; o++ {
			if seen[o] {
				t.Fatalf("offset %d assigned twice", o)
			}
			seen[o] = true
		}
	}
	if len(seen) != workers*per*2 || l.HighWatermark() != int64(len(seen)) {
		t.Fatalf("%d offsets, HW %d", len(seen), l.HighWatermark())
	}
}

// Truncate drops the leader epochs that start in the cut-off tail, as TruncateTo does: an
// epoch starting beyond the log end would make the log answer OffsetsForLeaderEpoch with
// offsets it no longer has.
func TestTruncateDropsEpochsOfTheTail(t *testing.T) {
	dir := t.TempDir()
	opts := Options{SegmentBytes: 300, IndexIntervalBytes: 100}
	l := open(t, dir, opts)
	defer l.Close()
	if err := l.Replica().AssignEpoch(1, 0); err != nil {
		t.Fatal(err)
	}
	for s := int32(0); s < 4; s++ {
		mustAppend(t, l, 1000+int64(s), batch(4, s, 2, 100))
	}
	if err := l.Replica().AssignEpoch(2, 8); err != nil {
		t.Fatal(err)
	}
	for s := int32(4); s < 6; s++ {
		mustAppend(t, l, 1000+int64(s), batch(4, s, 2, 100))
	}
	if err := l.Replica().Truncate(8); err != nil {
		t.Fatal(err)
	}
	if got := l.Replica().EpochEntries(); len(got) != 1 || got[0].Epoch != 1 {
		t.Fatalf("epochs after truncating to 8: %+v", got)
	}
	if e, end := l.Replica().EndOffsetForEpoch(1); e != 1 || end != 8 {
		t.Fatalf("EndOffsetForEpoch(1) = %d, %d", e, end)
	}
}
