package filecache

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

func newFiles(t *testing.T, c *Cache, n int) []*File {
	t.Helper()
	dir := t.TempDir()
	out := make([]*File, n)
	for i := range out {
		f, err := c.Open(filepath.Join(dir, fmt.Sprintf("f%d", i)), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteAt([]byte(fmt.Sprintf("file %d", i)), 0); err != nil {
			t.Fatal(err)
		}
		out[i] = f
	}
	return out
}

func readString(t *testing.T, f *File) string {
	t.Helper()
	buf := make([]byte, 16)
	n, err := f.ReadAt(buf, 0)
	if n == 0 {
		t.Fatalf("read %s: %v", f.Name(), err)
	}
	return string(buf[:n])
}

func TestCapacityBoundsOpenFilesAndReopensOnUse(t *testing.T) {
	c := New(3)
	files := newFiles(t, c, 10)
	if st := c.Stats(); st.Open != 3 || st.Evictions != 7 {
		t.Fatalf("after 10 opens with capacity 3: %+v", st)
	}
	for round := range 3 {
		for i, f := range files {
			if got, want := readString(t, f), fmt.Sprintf("file %d", i); got != want {
				t.Fatalf("round %d: %s reads %q, want %q", round, f.Name(), got, want)
			}
			if open := c.Stats().Open; open > 3 {
				t.Fatalf("%d files open, capacity 3", open)
			}
		}
	}
	// Reopening must not truncate: writes made before an eviction are still there.
	if _, err := files[0].WriteAt([]byte("FILE"), 0); err != nil {
		t.Fatal(err)
	}
	for _, f := range files[1:] {
		readString(t, f) // evicts files[0]
	}
	if got := readString(t, files[0]); got != "FILE 0" {
		t.Fatalf("after eviction and reopen: %q", got)
	}
}

// TestPinnedFileIsNotEvicted pins a file, forces every other file through the cache and
// then reads the pinned descriptor directly: had eviction closed it, the read would fail.
func TestPinnedFileIsNotEvicted(t *testing.T) {
	c := New(2)
	files := newFiles(t, c, 6)
	pinned, err := files[0].Pin()
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		for _, f := range files[1:] {
			readString(t, f)
		}
	}
	buf := make([]byte, 6)
	if _, err := pinned.ReadAt(buf, 0); err != nil || string(buf) != "file 0" {
		t.Fatalf("pinned descriptor after others were cycled: %q, %v", buf, err)
	}
	if open := c.Stats().Open; open > 2 {
		t.Fatalf("%d open with capacity 2 and one pin", open)
	}
	files[0].Unpin()
	// Unpinned, it can go now.
	for _, f := range files[1:] {
		readString(t, f)
	}
	if _, err := pinned.ReadAt(buf, 0); err == nil {
		t.Fatal("the unpinned descriptor was never closed though the cache needed room")
	}
}

// TestPinsBeyondCapacity: more pinned files than the capacity stay open; the cache shrinks
// back once they are unpinned.
func TestPinsBeyondCapacity(t *testing.T) {
	c := New(2)
	files := newFiles(t, c, 5)
	var fds []*os.File
	for _, f := range files {
		fd, err := f.Pin()
		if err != nil {
			t.Fatal(err)
		}
		fds = append(fds, fd)
	}
	for i, fd := range fds {
		buf := make([]byte, 6)
		if _, err := fd.ReadAt(buf, 0); err != nil || string(buf) != fmt.Sprintf("file %d", i) {
			t.Fatalf("pinned %d: %q, %v", i, buf, err)
		}
	}
	for _, f := range files {
		f.Unpin()
	}
	if open := c.Stats().Open; open != 2 {
		t.Fatalf("%d open after unpinning, capacity 2", open)
	}
}

// TestCloseWhilePinnedKeepsDescriptorUntilUnpin is retention's case: the segment is removed
// (unlinked) while a reader still sends from it.
func TestCloseWhilePinnedKeepsDescriptorUntilUnpin(t *testing.T) {
	c := New(4)
	f := newFiles(t, c, 1)[0]
	fd, err := f.Pin()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(f.Name()); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 6)
	if _, err := fd.ReadAt(buf, 0); err != nil || string(buf) != "file 0" {
		t.Fatalf("pinned after close and unlink: %q, %v", buf, err)
	}
	if _, err := f.Pin(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Pin after Close: %v, want ErrClosed", err)
	}
	f.Unpin()
	if _, err := fd.ReadAt(buf, 0); err == nil {
		t.Fatal("descriptor still open after the last Unpin of a closed file")
	}
	if open := c.Stats().Open; open != 0 {
		t.Fatalf("%d open after close", open)
	}
}

func TestReopenOfRemovedFileFails(t *testing.T) {
	c := New(1)
	files := newFiles(t, c, 2) // files[0] is evicted
	if err := os.Remove(files[0].Name()); err != nil {
		t.Fatal(err)
	}
	if _, err := files[0].ReadAt(make([]byte, 1), 0); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("read of a removed, evicted file: %v, want not-exist", err)
	}
}

// TestConcurrentUse reads and writes many files from many goroutines through a small cache
// (run with -race): every read sees its file's own bytes and the bound holds at the end.
func TestConcurrentUse(t *testing.T) {
	c := New(4)
	files := newFiles(t, c, 32)
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 8)
			for i := range 500 {
				k := (g*7 + i) % len(files)
				f := files[k]
				if i%5 == 0 {
					fd, err := f.Pin()
					if err != nil {
						errs <- err
						return
					}
					_, err = fd.ReadAt(buf[:6], 0)
					f.Unpin()
					if err != nil {
						errs <- fmt.Errorf("pinned read %d: %w", k, err)
						return
					}
					continue
				}
				n, err := f.ReadAt(buf, 0)
				if n == 0 {
					errs <- fmt.Errorf("read %d: %w", k, err)
					return
				}
				if want := fmt.Sprintf("file %d", k); string(buf[:n]) != want {
					errs <- fmt.Errorf("file %d reads %q", k, buf[:n])
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if st := c.Stats(); st.Open > 4 {
		t.Fatalf("%d open at rest, capacity 4", st.Open)
	}
}
