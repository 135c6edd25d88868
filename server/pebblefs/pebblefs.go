// Package pebblefs is the file system Pebble writes the primary-key state through
// (docs/durability.md, "Gray failures"): every sync of a Pebble file — sstables, the
// MANIFEST, OPTIONS, directories — is tracked by server/diskwatch, so a Pebble sync stalled
// past `log.flush.max-stall-time` trips the same fence as a stalled segment sync; every
// failed write or sync is counted per device (strom_disk_io_errors_total) and an EIO gets one
// WARN naming the file and its device (one per failing spell: again only after a sync
// succeeded, since Pebble retries a failed flush with a new file); and faultfs's STROM_FAULTS rules (delay, EIO, ENOSPC
// on sync and write) apply to Pebble's files as they do to segment files.
//
// Pebble's own vfs/errorfs was the obvious candidate for the injection, but in the Pebble
// release in use it injects into Sync only, not SyncData or SyncTo (which sstable writers
// use), and it cannot delay; the rules are faultfs's anyway, so this wrapper asks faultfs
// directly.
package pebblefs

import (
	"log/slog"
	"sync/atomic"

	"github.com/cockroachdb/pebble/vfs"

	"github.com/stromdb/strom/internal/faultfs"
	"github.com/stromdb/strom/server/diskwatch"
)

// Wrap returns fs (vfs.Default when nil) with its files' writes and syncs watched: see the
// package documentation. log receives the WARN of an EIO.
func Wrap(fs vfs.FS, log *slog.Logger) vfs.FS {
	if fs == nil {
		fs = vfs.Default
	}
	return &watchedFS{FS: fs, log: log}
}

type watchedFS struct {
	vfs.FS
	log *slog.Logger

	// warned is set by the WARN of an EIO and cleared by the next successful sync: one WARN
	// per spell of failures, however many files Pebble's retries create meanwhile.
	warned atomic.Bool
}

func (fs *watchedFS) wrap(f vfs.File, name string, err error) (vfs.File, error) {
	if err != nil {
		return f, err
	}
	return &watchedFile{File: f, fs: fs, path: name}, nil
}

func (fs *watchedFS) Create(name string) (vfs.File, error) {
	f, err := fs.FS.Create(name)
	return fs.wrap(f, name, err)
}

func (fs *watchedFS) Open(name string, opts ...vfs.OpenOption) (vfs.File, error) {
	f, err := fs.FS.Open(name, opts...)
	return fs.wrap(f, name, err)
}

func (fs *watchedFS) OpenReadWrite(name string, opts ...vfs.OpenOption) (vfs.File, error) {
	f, err := fs.FS.OpenReadWrite(name, opts...)
	return fs.wrap(f, name, err)
}

func (fs *watchedFS) OpenDir(name string) (vfs.File, error) {
	f, err := fs.FS.OpenDir(name)
	return fs.wrap(f, name, err)
}

func (fs *watchedFS) ReuseForWrite(oldname, newname string) (vfs.File, error) {
	f, err := fs.FS.ReuseForWrite(oldname, newname)
	return fs.wrap(f, newname, err)
}

// failed accounts err of op on path; the first EIO of a spell is logged.
func (fs *watchedFS) failed(path, op string, err error) error {
	diskwatch.IOError(path, op, err)
	if diskwatch.IsMediaError(err) && fs.log != nil {
		if fs.warned.CompareAndSwap(false, true) {
			fs.log.Warn("kvstore: disk I/O error in a Pebble file; the primary-key state cannot be written until it succeeds",
				"file", path, "device", diskwatch.Device(path), "op", op, "err", err)
		}
	}
	return err
}

// watchedFile is one open Pebble file.
type watchedFile struct {
	vfs.File
	fs   *watchedFS
	path string
}

func (f *watchedFile) Write(p []byte) (int, error) {
	if err := faultfs.Before(faultfs.Write, f.path); err != nil {
		return 0, f.fs.failed(f.path, "write", err)
	}
	n, err := f.File.Write(p)
	if err != nil {
		f.fs.failed(f.path, "write", err)
	}
	return n, err
}

func (f *watchedFile) WriteAt(p []byte, off int64) (int, error) {
	if err := faultfs.Before(faultfs.Write, f.path); err != nil {
		return 0, f.fs.failed(f.path, "write", err)
	}
	n, err := f.File.WriteAt(p, off)
	if err != nil {
		f.fs.failed(f.path, "write", err)
	}
	return n, err
}

// sync runs one of the file's syncs under diskwatch, after faultfs's rules.
func (f *watchedFile) sync(do func() error) error {
	defer diskwatch.BeginSync(f.path)()
	if err := faultfs.Before(faultfs.Sync, f.path); err != nil {
		return f.fs.failed(f.path, "sync", err)
	}
	if err := do(); err != nil {
		return f.fs.failed(f.path, "sync", err)
	}
	f.fs.warned.Store(false)
	return nil
}

func (f *watchedFile) Sync() error { return f.sync(f.File.Sync) }

func (f *watchedFile) SyncData() error { return f.sync(f.File.SyncData) }

func (f *watchedFile) SyncTo(length int64) (fullSync bool, err error) {
	err = f.sync(func() error {
		var e error
		fullSync, e = f.File.SyncTo(length)
		return e
	})
	return fullSync, err
}
