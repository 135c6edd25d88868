package kvstore

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/cockroachdb/pebble/vfs"
)

// countingFS counts the Write calls that reach the files under it and can fail them.
type countingFS struct {
	vfs.FS
	writes  int
	failErr error
}

func (fs *countingFS) Create(name string) (vfs.File, error) {
	f, err := fs.FS.Create(name)
	if err != nil {
		return nil, err
	}
	return &countingFile{File: f, fs: fs}, nil
}

type countingFile struct {
	vfs.File
	fs *countingFS
}

func (f *countingFile) Write(p []byte) (int, error) {
	f.fs.writes++
	if f.fs.failErr != nil {
		return 0, f.fs.failErr
	}
	return f.File.Write(p)
}

func TestCoalescingFSGathersSSTableWrites(t *testing.T) {
	under := &countingFS{FS: vfs.NewMem()}
	fs := coalescingFS{under}
	f, err := fs.Create("000001.sst")
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	block := bytes.Repeat([]byte{0}, 4096+5)
	for i := 0; i < 200; i++ {
		block[0] = byte(i)
		if _, err := f.Write(block); err != nil {
			t.Fatal(err)
		}
		want.Write(block)
	}
	// Stat must see every byte written so far, buffered or not.
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() != int64(want.Len()) {
		t.Fatalf("Stat size %d, want %d", fi.Size(), want.Len())
	}
	// A write larger than the buffer goes through whole.
	big := bytes.Repeat([]byte{7}, sstWriteBufBytes+1)
	if _, err := f.Write(big); err != nil {
		t.Fatal(err)
	}
	want.Write(big)
	if _, err := f.Write([]byte("tail")); err != nil {
		t.Fatal(err)
	}
	want.WriteString("tail")
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if max := want.Len()/(sstWriteBufBytes/2) + 2; under.writes > max {
		t.Errorf("%d writes reached the file, want at most %d", under.writes, max)
	}
	r, err := under.Open("000001.sst")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	got, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want.Bytes()) {
		t.Fatalf("file holds %d bytes that differ from the %d written", len(got), want.Len())
	}
	if _, err := f.Write([]byte("x")); err == nil {
		t.Error("Write after Close succeeded")
	}
}

func TestCoalescingFSLeavesOtherFiles(t *testing.T) {
	under := &countingFS{FS: vfs.NewMem()}
	f, err := coalescingFS{under}.Create("MANIFEST-000001")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write([]byte("record")); err != nil {
		t.Fatal(err)
	}
	if under.writes != 1 {
		t.Fatalf("a MANIFEST write was buffered (%d writes reached the file)", under.writes)
	}
}

func TestCoalescingFSWriteOutFailureIsSticky(t *testing.T) {
	under := &countingFS{FS: vfs.NewMem()}
	f, err := coalescingFS{under}.Create("000002.sst")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("buffered")); err != nil {
		t.Fatal(err)
	}
	errDisk := errors.New("no space left on device")
	under.failErr = errDisk
	if err := f.Sync(); !errors.Is(err, errDisk) {
		t.Fatalf("Sync after a failed write-out: %v, want %v", err, errDisk)
	}
	under.failErr = nil
	// The buffered bytes are lost: nothing may succeed on the file any more.
	if _, err := f.Write([]byte("more")); !errors.Is(err, errDisk) {
		t.Fatalf("Write after a failed write-out: %v, want %v", err, errDisk)
	}
	if err := f.SyncData(); !errors.Is(err, errDisk) {
		t.Fatalf("SyncData after a failed write-out: %v, want %v", err, errDisk)
	}
	if err := f.Close(); !errors.Is(err, errDisk) {
		t.Fatalf("Close after a failed write-out: %v, want %v", err, errDisk)
	}
}
