package kvstore

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/cockroachdb/pebble/vfs"
)

// Coalesced sstable writes.
//
// Pebble writes an sstable through a 4 KiB bufio.Writer, so every data block of a flush or
// compaction (4 KiB each, plus a trailer) reaches the file as its own write(2). At steady
// state those system calls were ~10 % of the server's CPU per update and partial update
// (docs/benchmarks.md, "The primary-key path at steady state"). coalescingFS hands Pebble
// sstable files that gather writes into sstWriteBufBytes before passing them on, which cuts
// the calls ~60-fold without changing the block size (and so without changing what a read
// costs).
//
// Invariant: every operation that can observe or persist the file's contents (Sync, SyncTo,
// SyncData, Stat, Read, ReadAt, WriteAt, Close) first writes the buffer out, so what Pebble
// syncs or reads back is everything it wrote; the buffer only delays the write(2) of bytes
// Pebble has not yet asked to be durable. A failed write-out is sticky: the bytes it held are
// gone from the file's tail, so every later call fails with the same error, as an sstable
// with a hole must not be finished.

// sstWriteBufBytes is the size of the write buffer of one sstable file being written. Below
// Pebble's BytesPerSync (512 KiB), so its background SyncTo calls still fall at their usual
// cadence.
const sstWriteBufBytes = 256 << 10

var sstWriteBufs = sync.Pool{New: func() any {
	b := make([]byte, 0, sstWriteBufBytes)
	return &b
}}

// coalescingFS is Pebble's file system with coalesced writes for files named *.sst; every
// other file (MANIFEST, OPTIONS, markers) is the underlying one's.
type coalescingFS struct {
	vfs.FS
}

func (fs coalescingFS) Create(name string) (vfs.File, error) {
	f, err := fs.FS.Create(name)
	if err != nil || !strings.HasSuffix(name, ".sst") {
		return f, err
	}
	return &coalescingFile{File: f, buf: sstWriteBufs.Get().(*[]byte)}, nil
}

// coalescingFile buffers Write calls; see the invariant above. Pebble uses a file being
// written from one goroutine at a time, so it needs no lock.
type coalescingFile struct {
	vfs.File
	buf *[]byte // nil after Close
	err error   // sticky write-out failure
}

// flush writes the buffer out to the file.
func (f *coalescingFile) flush() error {
	if f.err != nil {
		return f.err
	}
	if f.buf == nil || len(*f.buf) == 0 {
		return nil
	}
	n, err := f.File.Write(*f.buf)
	if err == nil && n < len(*f.buf) {
		err = io.ErrShortWrite
	}
	*f.buf = (*f.buf)[:0]
	if err != nil {
		f.err = fmt.Errorf("kvstore: sstable write: %w", err)
	}
	return f.err
}

func (f *coalescingFile) Write(p []byte) (int, error) {
	if f.err != nil {
		return 0, f.err
	}
	if f.buf == nil {
		return 0, os.ErrClosed
	}
	if len(*f.buf)+len(p) > cap(*f.buf) {
		if err := f.flush(); err != nil {
			return 0, err
		}
	}
	if len(p) >= cap(*f.buf) {
		return f.File.Write(p)
	}
	*f.buf = append(*f.buf, p...)
	return len(p), nil
}

func (f *coalescingFile) Close() error {
	err := f.flush()
	if f.buf != nil {
		*f.buf = (*f.buf)[:0]
		sstWriteBufs.Put(f.buf)
		f.buf = nil
	}
	if cerr := f.File.Close(); err == nil {
		err = cerr
	}
	return err
}

func (f *coalescingFile) Sync() error {
	if err := f.flush(); err != nil {
		return err
	}
	return f.File.Sync()
}

func (f *coalescingFile) SyncData() error {
	if err := f.flush(); err != nil {
		return err
	}
	return f.File.SyncData()
}

func (f *coalescingFile) SyncTo(length int64) (bool, error) {
	if err := f.flush(); err != nil {
		return false, err
	}
	return f.File.SyncTo(length)
}

func (f *coalescingFile) Stat() (os.FileInfo, error) {
	if err := f.flush(); err != nil {
		return nil, err
	}
	return f.File.Stat()
}

func (f *coalescingFile) Read(p []byte) (int, error) {
	if err := f.flush(); err != nil {
		return 0, err
	}
	return f.File.Read(p)
}

func (f *coalescingFile) ReadAt(p []byte, off int64) (int, error) {
	if err := f.flush(); err != nil {
		return 0, err
	}
	return f.File.ReadAt(p, off)
}

func (f *coalescingFile) WriteAt(p []byte, off int64) (int, error) {
	if err := f.flush(); err != nil {
		return 0, err
	}
	return f.File.WriteAt(p, off)
}
