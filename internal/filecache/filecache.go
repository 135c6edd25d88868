// Package filecache keeps a bounded number of files open for many more files that are
// known: a File is opened on first use, stays open while it is used recently, and is closed
// when the cache needs its descriptor for another (least recently used first). A file pinned
// by a caller (Pin) is never closed underneath it, so a reader can hand the *os.File to
// sendfile(2) and keep it until the bytes are sent.
//
// Invariants: the number of open files exceeds the capacity only while more than capacity
// files are pinned at once (the cache never fails a Pin for lack of room; it closes the
// unpinned ones first); a File reopened after eviction refers to the same path with the
// same flags minus O_CREATE, O_EXCL and O_TRUNC, so reopening never creates or empties it.
// docs/cluster.md, "Scale" explains why the log store needs it: one open segment per idle
// replica would cap a node at RLIMIT_NOFILE replicas.
package filecache

import (
	"container/list"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
)

// ErrClosed is returned by a File's operations after Close.
var ErrClosed = errors.New("filecache: file closed")

// Cache is a process-wide bound on the open descriptors of its Files. The zero value is not
// usable; call New.
type Cache struct {
	mu       sync.Mutex
	capacity int
	lru      list.List // open files, most recently used at the front; elements hold *File
	opens    uint64    // files opened (first use and reopens), for stats
	closes   uint64    // files closed by eviction
}

// New returns a cache that keeps at most capacity files open (at least 1).
func New(capacity int) *Cache {
	c := &Cache{capacity: max(1, capacity)}
	c.lru.Init()
	return c
}

// SetCapacity changes the bound; files over it are closed (unpinned ones) at once.
func (c *Cache) SetCapacity(n int) {
	c.mu.Lock()
	c.capacity = max(1, n)
	toClose := c.evictLocked()
	c.mu.Unlock()
	closeAll(toClose)
}

// Stats describes the cache.
type Stats struct {
	Capacity  int
	Open      int    // files open now
	Opens     uint64 // opens so far, first uses and reopens after eviction
	Evictions uint64 // files closed to make room
}

// Stats returns the cache's counters.
func (c *Cache) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return Stats{Capacity: c.capacity, Open: c.lru.Len(), Opens: c.opens, Evictions: c.closes}
}

// File is one path known to the cache. Its methods are safe for concurrent use.
type File struct {
	c    *Cache
	name string
	flag int
	perm os.FileMode

	// guarded by c.mu
	f      *os.File
	elem   *list.Element // in c.lru while f != nil
	pins   int
	closed bool
}

// Open returns a File for name, opened at once with flag and perm (so that O_CREATE and
// O_TRUNC take effect now and errors show here). Later reopens drop O_CREATE, O_EXCL and
// O_TRUNC.
func (c *Cache) Open(name string, flag int, perm os.FileMode) (*File, error) {
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	h := &File{c: c, name: name, flag: flag &^ (os.O_CREATE | os.O_EXCL | os.O_TRUNC), perm: perm}
	c.mu.Lock()
	c.opens++
	toClose := h.installLocked(f)
	c.mu.Unlock()
	closeAll(toClose)
	return h, nil
}

// Name is the path the File was opened with.
func (h *File) Name() string { return h.name }

// installLocked makes f the File's descriptor and returns what must be closed to respect
// the capacity. Caller holds c.mu.
func (h *File) installLocked(f *os.File) []*os.File {
	h.f = f
	h.elem = h.c.lru.PushFront(h)
	return h.c.evictLocked()
}

// evictLocked detaches unpinned files from the back of the LRU until the cache is within
// its capacity and returns their descriptors for the caller to close outside the lock.
func (c *Cache) evictLocked() []*os.File {
	var out []*os.File
	for e := c.lru.Back(); e != nil && c.lru.Len() > c.capacity; {
		prev := e.Prev()
		h := e.Value.(*File)
		if h.pins == 0 {
			c.lru.Remove(e)
			out = append(out, h.f)
			h.f, h.elem = nil, nil
			c.closes++
		}
		e = prev
	}
	return out
}

func closeAll(fs []*os.File) {
	for _, f := range fs {
		_ = f.Close()
	}
}

// Pin returns the open descriptor, opening it again if it was evicted, and keeps it open
// until the matching Unpin. Every successful Pin must be followed by exactly one Unpin.
func (h *File) Pin() (*os.File, error) {
	c := h.c
	c.mu.Lock()
	if h.closed {
		c.mu.Unlock()
		return nil, fmt.Errorf("%s: %w", h.name, ErrClosed)
	}
	if h.f != nil {
		h.pins++
		c.lru.MoveToFront(h.elem)
		f := h.f
		c.mu.Unlock()
		return f, nil
	}
	c.mu.Unlock()
	// Open outside the lock: a slow disk must not stall every other file's use.
	f, err := os.OpenFile(h.name, h.flag, h.perm)
	if err != nil {
		return nil, fmt.Errorf("filecache: reopen: %w", err)
	}
	c.mu.Lock()
	var toClose []*os.File
	switch {
	case h.closed:
		c.mu.Unlock()
		_ = f.Close()
		return nil, fmt.Errorf("%s: %w", h.name, ErrClosed)
	case h.f != nil: // another caller reopened it meanwhile
		toClose = []*os.File{f}
		c.lru.MoveToFront(h.elem)
	default:
		c.opens++
		h.pins++ // before evicting, so this file is not the one chosen
		toClose = h.installLocked(f)
		h.pins--
	}
	h.pins++
	f = h.f
	c.mu.Unlock()
	closeAll(toClose)
	return f, nil
}

// Unpin releases a Pin. The descriptor may be closed from now on if the cache needs room.
func (h *File) Unpin() {
	c := h.c
	c.mu.Lock()
	if h.pins <= 0 {
		c.mu.Unlock()
		panic("filecache: Unpin without Pin")
	}
	h.pins--
	var toClose []*os.File
	switch {
	case h.pins == 0 && h.closed && h.f != nil:
		c.lru.Remove(h.elem)
		toClose = []*os.File{h.f}
		h.f, h.elem = nil, nil
	case h.pins == 0:
		toClose = c.evictLocked()
	}
	c.mu.Unlock()
	closeAll(toClose)
}

// Close forgets the File: its descriptor is closed now, or by the last Unpin if it is
// pinned. Later operations return ErrClosed. It is idempotent.
func (h *File) Close() error {
	c := h.c
	c.mu.Lock()
	if h.closed {
		c.mu.Unlock()
		return nil
	}
	h.closed = true
	var f *os.File
	if h.pins == 0 && h.f != nil {
		c.lru.Remove(h.elem)
		f, h.f, h.elem = h.f, nil, nil
	}
	c.mu.Unlock()
	if f != nil {
		return f.Close()
	}
	return nil
}

// with runs fn on the pinned descriptor.
func (h *File) with(fn func(*os.File) error) error {
	f, err := h.Pin()
	if err != nil {
		return err
	}
	defer h.Unpin()
	return fn(f)
}

// ReadAt implements io.ReaderAt through the cache.
func (h *File) ReadAt(p []byte, off int64) (n int, err error) {
	err = h.with(func(f *os.File) error {
		var rerr error
		n, rerr = f.ReadAt(p, off)
		return rerr
	})
	return n, err
}

// WriteAt implements io.WriterAt through the cache.
func (h *File) WriteAt(p []byte, off int64) (n int, err error) {
	err = h.with(func(f *os.File) error {
		var werr error
		n, werr = f.WriteAt(p, off)
		return werr
	})
	return n, err
}

// Truncate changes the file's size.
func (h *File) Truncate(size int64) error {
	return h.with(func(f *os.File) error { return f.Truncate(size) })
}

var (
	_ io.ReaderAt = (*File)(nil)
	_ io.WriterAt = (*File)(nil)
)
