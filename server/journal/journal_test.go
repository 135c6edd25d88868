package journal

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func openT(t *testing.T, root string, o Options) *Journal {
	t.Helper()
	o.Logger = quiet()
	if o.CheckpointInterval == 0 {
		o.CheckpointInterval = time.Hour // tests checkpoint by hand
	}
	j, err := Open(root, o)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return j
}

func bucket(t *testing.T, root, name string) (string, string) {
	t.Helper()
	dir := filepath.Join(root, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir, name
}

func payload(i int) []byte { return bytes.Repeat([]byte{byte(i)}, 100+i) }

func appendWait(t *testing.T, j *Journal, key string, flush Flusher, base int64) {
	t.Helper()
	tk, err := j.Append(key, flush, []Record{{Base: base, Data: payload(int(base))}})
	if err != nil {
		t.Fatalf("Append: %v", err)
	}
	if err := tk.Wait(); err != nil {
		t.Fatalf("Wait: %v", err)
	}
}

func noFlush() error { return nil }

func wantReplay(t *testing.T, dir string, bases ...int64) {
	t.Helper()
	recs, err := ReadReplay(dir)
	if err != nil {
		t.Fatalf("ReadReplay: %v", err)
	}
	if len(recs) != len(bases) {
		t.Fatalf("replay of %s has %d records, want %d", dir, len(recs), len(bases))
	}
	for i, r := range recs {
		if r.Base != bases[i] || !bytes.Equal(r.Data, payload(int(bases[i]))) {
			t.Fatalf("replay record %d: base %d (%d bytes), want base %d", i, r.Base, len(r.Data), bases[i])
		}
	}
}

func TestRecoveryHandsRecordsToTheirBuckets(t *testing.T) {
	root := t.TempDir()
	a, ka := bucket(t, root, "table-1/bucket-0")
	b, kb := bucket(t, root, "table-1/bucket-1")
	j := openT(t, root, Options{})
	for i := int64(0); i < 5; i++ {
		appendWait(t, j, ka, noFlush, i)
		appendWait(t, j, kb, noFlush, 10+i)
	}
	if err := j.Close(); err != nil { // like a crash: nothing was checkpointed
		t.Fatal(err)
	}
	j = openT(t, root, Options{})
	defer j.Close()
	wantReplay(t, a, 0, 1, 2, 3, 4)
	wantReplay(t, b, 10, 11, 12, 13, 14)
	if n := j.Files(); n != 1 {
		t.Fatalf("journal files after recovery: %d, want 1 (a fresh one)", n)
	}
}

func TestTornTailIsCut(t *testing.T) {
	root := t.TempDir()
	a, ka := bucket(t, root, "b")
	j := openT(t, root, Options{})
	for i := int64(0); i < 3; i++ {
		appendWait(t, j, ka, noFlush, i)
	}
	j.Close()
	ents, _ := filepath.Glob(filepath.Join(root, "journal", "*.jnl"))
	if len(ents) != 1 {
		t.Fatalf("journal files: %v", ents)
	}
	// A torn last group: a whole record with a bad CRC, then half a record.
	rec := appendRecord(nil, kindBatch, ka, 3, payload(3))
	rec[len(rec)-1] ^= 0xff
	half := appendRecord(nil, kindBatch, ka, 4, payload(4))
	f, _ := os.OpenFile(ents[0], os.O_WRONLY|os.O_APPEND, 0)
	f.Write(append(rec, half[:len(half)/2]...))
	f.Close()
	j = openT(t, root, Options{})
	defer j.Close()
	wantReplay(t, a, 0, 1, 2)
}

func TestDamageBeforeTheLastFileFailsOpen(t *testing.T) {
	root := t.TempDir()
	_, ka := bucket(t, root, "b")
	j := openT(t, root, Options{FileBytes: 1})
	for i := int64(0); i < 3; i++ {
		appendWait(t, j, ka, noFlush, i) // FileBytes 1: one group per file
	}
	j.Close()
	ents, _ := filepath.Glob(filepath.Join(root, "journal", "*.jnl"))
	if len(ents) < 2 {
		t.Fatalf("journal files: %v", ents)
	}
	b, _ := os.ReadFile(ents[0])
	b[len(b)-1] ^= 0xff
	os.WriteFile(ents[0], b, 0o644)
	if j, err := Open(root, Options{Logger: quiet()}); err == nil {
		j.Close()
		t.Fatal("Open accepted a damaged record in a file before the last")
	}
}

func TestVoidsApplyAtRecovery(t *testing.T) {
	root := t.TempDir()
	a, ka := bucket(t, root, "a")
	b, kb := bucket(t, root, "b")
	gone, kg := bucket(t, root, "gone")
	j := openT(t, root, Options{})
	for i := int64(0); i < 4; i++ {
		appendWait(t, j, ka, noFlush, i)
		appendWait(t, j, kb, noFlush, i)
		appendWait(t, j, kg, noFlush, i)
	}
	if err := j.Void(ka, 2); err != nil { // a truncation to 2
		t.Fatal(err)
	}
	appendWait(t, j, ka, noFlush, 2)      // the new batch at 2
	if err := j.VoidAll(kb); err != nil { // a clean close
		t.Fatal(err)
	}
	if err := j.Sync(); err != nil {
		t.Fatal(err)
	}
	j.Close()
	os.RemoveAll(gone) // a dropped bucket
	j = openT(t, root, Options{})
	defer j.Close()
	wantReplay(t, a, 0, 1, 2)
	wantReplay(t, b)
	if _, err := os.Stat(gone); !os.IsNotExist(err) {
		t.Fatalf("recovery recreated a dropped bucket's directory: %v", err)
	}
}

func TestReplayFilesMergeAcrossRestarts(t *testing.T) {
	root := t.TempDir()
	a, ka := bucket(t, root, "a")
	j := openT(t, root, Options{})
	appendWait(t, j, ka, noFlush, 0)
	j.Close()
	j = openT(t, root, Options{}) // hands 0 over; the log is never opened
	appendWait(t, j, ka, noFlush, 1)
	j.Close()
	j = openT(t, root, Options{})
	defer j.Close()
	wantReplay(t, a, 0, 1)
}

func TestCheckpointSyncsAndTruncates(t *testing.T) {
	root := t.TempDir()
	a, ka := bucket(t, root, "a")
	j := openT(t, root, Options{FileBytes: 1})
	var flushes atomic.Int32
	fail := atomic.Bool{}
	flush := func() error {
		flushes.Add(1)
		if fail.Load() {
			return fmt.Errorf("disk says no")
		}
		return nil
	}
	for i := int64(0); i < 5; i++ {
		appendWait(t, j, ka, flush, i)
	}
	files := j.Files()
	if files < 5 {
		t.Fatalf("files %d, want one per group", files)
	}
	fail.Store(true)
	if err := j.Checkpoint(); err == nil {
		t.Fatal("checkpoint succeeded although a flush failed")
	}
	if j.Files() != files {
		t.Fatalf("a failed checkpoint deleted files: %d -> %d", files, j.Files())
	}
	fail.Store(false)
	if err := j.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	if flushes.Load() != 2 {
		t.Fatalf("flushes %d, want 2 (one per checkpoint for the one key)", flushes.Load())
	}
	if n := j.Files(); n != 1 {
		t.Fatalf("files after checkpoint %d, want 1", n)
	}
	appendWait(t, j, ka, flush, 5)
	j.Close()
	j = openT(t, root, Options{})
	defer j.Close()
	wantReplay(t, a, 5) // only what the checkpoint did not cover
}

func TestOneSyncCoversConcurrentAppends(t *testing.T) {
	root := t.TempDir()
	var syncs atomic.Int32
	j := openT(t, root, Options{Sync: func(f *os.File) error {
		syncs.Add(1)
		time.Sleep(2 * time.Millisecond) // a slow disk: appends pile up meanwhile
		return f.Sync()
	}})
	defer j.Close()
	const writers, each = 32, 10
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		_, key := bucket(t, root, fmt.Sprintf("b%d", w))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int64(0); i < each; i++ {
				appendWait(t, j, key, noFlush, i)
			}
		}()
	}
	wg.Wait()
	if n := syncs.Load(); n >= writers*each/4 {
		t.Fatalf("%d fdatasyncs for %d appends from %d writers: no group commit", n, writers*each, writers)
	}
}

func TestWriteFailureFailsAppends(t *testing.T) {
	root := t.TempDir()
	_, ka := bucket(t, root, "a")
	j := openT(t, root, Options{Sync: func(*os.File) error { return fmt.Errorf("EIO") }})
	defer j.Close()
	tk, err := j.Append(ka, noFlush, []Record{{Base: 0, Data: payload(0)}})
	if err != nil {
		t.Fatal(err)
	}
	if err := tk.Wait(); err == nil {
		t.Fatal("Wait succeeded after a failed sync")
	}
	if _, err := j.Append(ka, noFlush, []Record{{Base: 1, Data: payload(1)}}); err == nil {
		t.Fatal("Append accepted after the journal failed")
	}
}

func TestKey(t *testing.T) {
	j := &Journal{root: "/data"}
	if k, ok := j.Key("/data/table-1/bucket-2"); !ok || k != "table-1/bucket-2" {
		t.Fatalf("Key = %q, %v", k, ok)
	}
	for _, d := range []string{"/other/b", "/data", "/"} {
		if _, ok := j.Key(d); ok {
			t.Fatalf("Key(%q) accepted a directory outside the root", d)
		}
	}
}
