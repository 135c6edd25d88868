package logstore

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stromdb/strom/internal/record"
	"github.com/stromdb/strom/server/journal"
)

func openJournalT(t *testing.T, root string) *journal.Journal {
	t.Helper()
	j, err := journal.Open(root, journal.Options{Logger: discardLogger(), CheckpointInterval: time.Hour})
	if err != nil {
		t.Fatalf("journal.Open: %v", err)
	}
	return j
}

// journaledAppends appends n small batches, each acknowledged (durable returned).
func journaledAppends(t *testing.T, l *Log, from, n int) []record.Batch {
	t.Helper()
	var out []record.Batch
	for i := from; i < from+n; i++ {
		b := batch(7, int32(i), 1, 200+i)
		mustAppend(t, l, int64(1000+i), b)
		out = append(out, append(record.Batch(nil), b...))
	}
	return out
}

func checkLog(t *testing.T, l *Log, want []record.Batch) {
	t.Helper()
	if hw := l.HighWatermark(); hw != int64(len(want)) {
		t.Fatalf("HW %d, want %d", hw, len(want))
	}
	got := readAll(t, l, 0)
	if len(got) != len(want) {
		t.Fatalf("%d batches, want %d", len(got), len(want))
	}
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("batch %d differs from the acknowledged one", i)
		}
	}
}

// TestJournalSurvivesKill9: acknowledged journaled appends, then kill -9 (no Close of log
// or checkpoint): all of them are there after the restart, once, in order.
func TestJournalSurvivesKill9(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "table-1", "bucket-0")
	j := openJournalT(t, root)
	l := open(t, dir, Options{Journal: j, JournalMinInFlight: 1})
	want := journaledAppends(t, l, 0, 40)
	if !l.Unsynced() {
		t.Fatal("journaled appends synced the segment: the test needs them unsynced")
	}
	crash(l)
	j.Close()

	j = openJournalT(t, root)
	defer j.Close()
	l = open(t, dir, Options{Journal: j, JournalMinInFlight: 1})
	defer l.Close()
	checkLog(t, l, want)
	if _, err := os.Stat(filepath.Join(dir, journal.ReplayFile)); !os.IsNotExist(err) {
		t.Fatalf("replay file left after the log opened: %v", err)
	}
	// The writer state came back too: a retry of the last batch is a duplicate.
	if r, err := l.Append([]record.Batch{batch(7, 39, 1, 239)}, 5000); err != nil || !r.Duplicate {
		t.Fatalf("retry of the last acknowledged batch: %+v, %v", r, err)
	}
}

// TestJournalSurvivesPowerLoss simulates a power loss with a file layer that drops unsynced
// writes: the segment keeps only a prefix of what the journaled appends wrote, with a hole
// (zeroed pages) in the middle of what it keeps after that, while the journal (synced before
// every acknowledgement) keeps everything. Every acknowledged batch must come back.
func TestJournalSurvivesPowerLoss(t *testing.T) {
	for _, tc := range []struct {
		name   string
		damage func(t *testing.T, seg string, size int64)
	}{
		{"cut", func(t *testing.T, seg string, size int64) {
			if err := os.Truncate(seg, size/3); err != nil {
				t.Fatal(err)
			}
		}},
		{"hole", func(t *testing.T, seg string, size int64) {
			f, err := os.OpenFile(seg, os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if _, err := f.WriteAt(make([]byte, 1500), size/2); err != nil {
				t.Fatal(err)
			}
		}},
		{"empty", func(t *testing.T, seg string, size int64) {
			if err := os.Truncate(seg, 0); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			dir := filepath.Join(root, "table-1", "bucket-0")
			j := openJournalT(t, root)
			l := open(t, dir, Options{Journal: j, JournalMinInFlight: 1})
			want := journaledAppends(t, l, 0, 30)
			seg := fileName(dir, 0, logSuffix)
			crash(l)
			j.Close()
			st, err := os.Stat(seg)
			if err != nil {
				t.Fatal(err)
			}
			tc.damage(t, seg, st.Size())

			j = openJournalT(t, root)
			defer j.Close()
			l = open(t, dir, Options{Journal: j, JournalMinInFlight: 1})
			defer l.Close()
			if err := l.Offline(); err != nil {
				t.Fatalf("offline after a power loss the journal covers: %v", err)
			}
			checkLog(t, l, want)
		})
	}
}

// TestJournalWithoutJournalNowStillReplays: the journal turned off after a crash still hands
// its records over, and a log opened without it replays them.
func TestJournalReplayWithJournalOff(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "b")
	j := openJournalT(t, root)
	l := open(t, dir, Options{Journal: j, JournalMinInFlight: 1})
	want := journaledAppends(t, l, 0, 10)
	crash(l)
	j.Close()
	os.Truncate(fileName(dir, 0, logSuffix), 0)
	openJournalT(t, root).Close() // the server's start with the journal off
	l = open(t, dir, Options{})
	defer l.Close()
	checkLog(t, l, want)
}

// TestJournalTruncateVoidsRecords: batches cut by a truncation are not replayed after a crash
// over the new batches at the same offsets.
func TestJournalTruncateVoidsRecords(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "b")
	j := openJournalT(t, root)
	l := open(t, dir, Options{Journal: j, JournalMinInFlight: 1})
	want := journaledAppends(t, l, 0, 10)[:5]
	if err := l.Replica().Truncate(5); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		b := plain(2, 50+i)
		mustAppend(t, l, int64(3000+i), b)
		want = append(want, append(record.Batch(nil), b...))
	}
	crash(l)
	j.Close()
	// A power loss that took the whole unsynced segment: everything comes from the journal.
	if err := os.Truncate(fileName(dir, 0, logSuffix), 0); err != nil {
		t.Fatal(err)
	}
	j = openJournalT(t, root)
	defer j.Close()
	l = open(t, dir, Options{Journal: j, JournalMinInFlight: 1})
	defer l.Close()
	got := readAll(t, l, 0)
	if len(got) != len(want) {
		t.Fatalf("%d batches, want %d", len(got), len(want))
	}
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("batch %d is not the one acknowledged after the truncation", i)
		}
	}
}

// TestJournalRoutesBySize: appends above JournalMaxBytes take the segment's fdatasync (the
// segment is synced when they return), small ones the journal; mixed, the HW never passes
// an unsynced large append.
func TestJournalRoutesBySize(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "b")
	j := openJournalT(t, root)
	defer j.Close()
	l := open(t, dir, Options{Journal: j, JournalMaxBytes: 1024, JournalMinInFlight: 1})
	defer l.Close()
	mustAppend(t, l, 1, plain(1, 100))
	if !l.Unsynced() {
		t.Fatal("a small append synced its segment")
	}
	mustAppend(t, l, 2, plain(1, 4000))
	if l.Unsynced() {
		t.Fatal("a large append returned with its segment unsynced")
	}
	// A large append staged but not yet durable, then a small one: the small one's
	// durability must wait for the large one's bytes.
	_, bigDurable, err := l.AppendStaged([]record.Batch{plain(1, 4000)}, 3)
	if err != nil {
		t.Fatal(err)
	}
	_, smallDurable, err := l.AppendStaged([]record.Batch{plain(1, 100)}, 4)
	if err != nil {
		t.Fatal(err)
	}
	if err := smallDurable(); err != nil {
		t.Fatal(err)
	}
	if hw := l.HighWatermark(); hw != 4 {
		t.Fatalf("HW %d after the small append, want 4", hw)
	}
	if l.Unsynced() {
		t.Fatal("the HW passed a large append whose segment bytes were not synced")
	}
	if err := bigDurable(); err != nil {
		t.Fatal(err)
	}
}

// TestJournalCloseVoids: a cleanly closed log leaves nothing to replay, and a checkpoint
// syncs the segments of journaled logs.
func TestJournalCloseVoidsAndCheckpointSyncs(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "b")
	j := openJournalT(t, root)
	l := open(t, dir, Options{Journal: j, JournalMinInFlight: 1})
	journaledAppends(t, l, 0, 5)
	if err := j.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	if l.Unsynced() {
		t.Fatal("the checkpoint left the segment unsynced")
	}
	journaledAppends(t, l, 5, 5)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := j.Sync(); err != nil {
		t.Fatal(err)
	}
	j.Close()
	openJournalT(t, root).Close()
	if _, err := os.Stat(filepath.Join(dir, journal.ReplayFile)); !os.IsNotExist(err) {
		t.Fatalf("a clean close left records to replay: %v", err)
	}
}

// TestJournalNeedsConcurrency: a lone writer keeps the segment's own fdatasync (the journal
// loses with few concurrent writers); with enough appends in flight server-wide it journals.
func TestJournalNeedsConcurrency(t *testing.T) {
	root := t.TempDir()
	j := openJournalT(t, root)
	defer j.Close()
	l := open(t, filepath.Join(root, "b"), Options{Journal: j, JournalMinInFlight: 3})
	defer l.Close()
	mustAppend(t, l, 1, plain(1, 100))
	if l.Unsynced() {
		t.Fatal("a lone small append went through the journal")
	}
	_, end1 := j.BeginAppend() // two appends of other buckets in flight
	_, end2 := j.BeginAppend()
	mustAppend(t, l, 2, plain(1, 100))
	if !l.Unsynced() {
		t.Fatal("a small append with enough in flight did not go through the journal")
	}
	end1()
	end2()
	end2() // idempotent
	if n, end := j.BeginAppend(); n != 1 {
		t.Fatalf("in flight %d after every append ended, want 1", n)
	} else {
		end()
	}
}

// TestJournalRecreatedDirectoryInheritsNothing: a log deleted after journaled appends and a
// new log in the same directory, then a crash: the old log's records are void (its Close),
// so none of them is replayed into the new log at a matching offset.
func TestJournalRecreatedDirectoryInheritsNothing(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "b")
	j := openJournalT(t, root)
	l := open(t, dir, Options{Journal: j, JournalMinInFlight: 1})
	journaledAppends(t, l, 0, 6)
	if err := l.Delete(); err != nil {
		t.Fatal(err)
	}
	l = open(t, dir, Options{Journal: j, JournalMinInFlight: 1, JournalMaxBytes: 64})
	var want []record.Batch
	for i := 0; i < 3; i++ { // larger than JournalMaxBytes: the segment path
		b := plain(1, 300+i)
		mustAppend(t, l, int64(10+i), b) // older timestamps: nothing but the void stops a replay
		want = append(want, append(record.Batch(nil), b...))
	}
	crash(l)
	j.Close()
	j = openJournalT(t, root)
	defer j.Close()
	l = open(t, dir, Options{Journal: j})
	defer l.Close()
	checkLog(t, l, want)
}
