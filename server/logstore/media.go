package logstore

import (
	"fmt"
	"path/filepath"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/server/diskwatch"
)

// ioFailed accounts a failed write or sync of file (diskwatch's per-device counters) and,
// when the device reported a media error (EIO), takes the log offline: after an EIO the
// file's contents on disk are unknown — a failed fdatasync may have dropped dirty pages that
// a later read would not return — so neither appends nor reads of this bucket may go on.
// Other buckets and the process are unaffected. A full disk (ENOSPC) is not a media error:
// the append is cut back and retried by the client (docs/durability.md, "A full disk").
//
// Unlike corruption, no marker is written: the restart's recovery re-reads the tail and
// decides (a torn tail is cut, damage keeps it offline with the marker), so replacing or
// checking the disk and restarting brings the bucket back. Like corruption it calls
// Options.OnOffline, so that a replicated bucket's owner can hand its leadership to an
// in-sync replica and rebuild the replica once the disk answers (docs/durability.md, "Gray
// failures"). It takes no lock (callers hold mu or syncMu); only the first call logs.
func (l *Log) ioFailed(file, op string, err error) {
	diskwatch.IOError(file, op, err)
	if !diskwatch.IsMediaError(err) {
		return
	}
	device := diskwatch.Device(file)
	off := fmt.Errorf("%w: %w", ferr.New(ferr.LogStorageException,
		"the bucket is offline: the disk (device %s) returned EIO on %s of segment file %s; a replicated bucket moves to another replica, a standalone one serves again after a restart",
		device, op, filepath.Base(file)), err)
	if !l.offline.CompareAndSwap(nil, &off) {
		return
	}
	l.opts.Logger.Warn("logstore: disk I/O error; bucket offline (until a restart, or a rebuild from a replica), the rest of the server serves on",
		"dir", l.dir, "file", file, "device", device, "op", op, "err", err)
	if l.opts.OnOffline != nil {
		l.opts.OnOffline()
	}
}
