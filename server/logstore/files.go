package logstore

import (
	"github.com/stromdb/strom/internal/filecache"
)

// DefaultOpenSegmentFiles bounds the segment files the process keeps open until the server
// sets the bound from its file-descriptor budget (SetOpenSegmentFiles).
const DefaultOpenSegmentFiles = 4096

// segmentFiles is the process's cache of open segment (.log) files, shared by every Log: a
// segment is opened on demand and closed when the cache needs room, least recently used
// first, unless a reader pinned it (docs/cluster.md, "Scale"). Index files are memory-mapped
// and closed at once, so they hold no descriptor.
var segmentFiles = filecache.New(DefaultOpenSegmentFiles)

// SetOpenSegmentFiles bounds the segment files kept open by the process (at least 1). Files
// pinned by readers at the same time may exceed it briefly.
func SetOpenSegmentFiles(n int) { segmentFiles.SetCapacity(n) }

// SegmentFileStats returns the state of the process's segment file cache.
func SegmentFileStats() filecache.Stats { return segmentFiles.Stats() }

// syncSegmentFile makes the segment file's written bytes durable. The descriptor may be a
// reopened one: fdatasync flushes the inode's dirty pages whichever descriptor wrote them,
// and a write-back error not yet reported to anyone is reported to a descriptor opened
// after it (Linux ≥ 4.13 errseq), so a sync after an eviction loses neither.
func syncSegmentFile(h *filecache.File) error {
	f, err := h.Pin()
	if err != nil {
		return err
	}
	defer h.Unpin()
	return fdatasync(f)
}
