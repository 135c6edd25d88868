package logstore

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/stromdb/strom/internal/faultfs"
	"github.com/stromdb/strom/internal/filecache"
	"github.com/stromdb/strom/internal/record"
	"github.com/stromdb/strom/server/diskwatch"
)

// File name suffixes inside a bucket directory.
const (
	logSuffix       = ".log"
	indexSuffix     = ".index"
	timeIndexSuffix = ".timeindex"
	snapshotSuffix  = ".writer_snapshot"
	tmpSuffix       = ".tmp"
	cleanMarker     = "clean_shutdown"
)

func fileName(dir string, base int64, suffix string) string {
	return filepath.Join(dir, fmt.Sprintf("%020d%s", base, suffix))
}

// segment is one log file with its indexes. base never changes. The fields under "writer
// state" are changed only by the Log's writer (holding Log.mu) and read by readers under mu;
// the byte range [0, size) of the file holds whole batches and is never rewritten, except by
// an explicit Truncate.
type segment struct {
	base int64
	dir  string
	// file is opened on demand through the process's segment file cache (files.go): an
	// idle segment holds no descriptor.
	file *filecache.File
	// removedPin is set when removeFiles pinned file before unlinking it, so readers still
	// holding the segment can read it; the last release unpins it.
	removedPin atomic.Bool

	// refs counts the Log's own reference (1 while the segment is live) plus one per reader
	// holding a ReadResult. The file and index maps are closed when it drops to 0.
	refs atomic.Int32

	mu sync.RWMutex
	// writer state
	size       int64 // bytes of whole batches
	next       int64 // offset after the last batch; base when empty
	maxTs      int64 // commit timestamp of the last batch; -1 when empty
	idx        segIndex
	sinceIndex int64 // bytes appended since the last index entry (writer only)

	// verified holds the byte ranges whose batches passed their checks since the segment
	// was opened; reads verify the rest before handing out a range (see verify).
	verified verifiedSet
}

// acquire takes a reader reference; it fails once the segment has been released by the Log.
func (s *segment) acquire() bool {
	for {
		n := s.refs.Load()
		if n <= 0 {
			return false
		}
		if s.refs.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// release drops a reference and closes the segment's resources on the last one.
func (s *segment) release() {
	if s.refs.Add(-1) == 0 {
		s.mu.Lock()
		munmap(s.idx.offMap)
		munmap(s.idx.timeMap)
		s.idx = segIndex{}
		s.mu.Unlock()
		if s.removedPin.Load() {
			s.file.Unpin()
		}
		_ = s.file.Close()
	}
}

// createSegment creates an empty active segment file at base.
func createSegment(dir string, base int64) (*segment, error) {
	f, err := segmentFiles.Open(fileName(dir, base, logSuffix), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("logstore: create segment: %w", err)
	}
	// Stale indexes from an earlier incarnation of this base must not be trusted later.
	_ = os.Remove(fileName(dir, base, indexSuffix))
	_ = os.Remove(fileName(dir, base, timeIndexSuffix))
	s := &segment{base: base, dir: dir, file: f, next: base, maxTs: -1}
	s.refs.Store(1)
	return s, nil
}

// readHeader reads the header of the batch at pos, requiring the whole batch to lie within
// end. It returns errTorn when the bytes at pos are not a plausible complete batch header.
func readHeader(f io.ReaderAt, pos, end int64, buf *[record.HeaderSizeV2]byte) (record.Batch, error) {
	n := end - pos
	if n < record.LogOverhead+1 {
		return nil, errTorn
	}
	if n > int64(len(buf)) {
		n = int64(len(buf))
	}
	if _, err := f.ReadAt(buf[:n], pos); err != nil {
		return nil, fmt.Errorf("logstore: read batch header at %d: %w", pos, err)
	}
	b := record.Batch(buf[:n])
	size := int64(record.NextBatchSize(b))
	if b.Magic() > record.MagicV2 || size < int64(b.HeaderSize()) || size > end-pos || n < int64(b.HeaderSize()) {
		return nil, errTorn
	}
	if b.LastOffsetDelta() < 0 || b.RecordCount() < 0 {
		return nil, errTorn
	}
	return b[:b.HeaderSize()], nil
}

// errTorn marks bytes that do not form a complete, plausible batch: a torn or corrupt tail.
var errTorn = errors.New("logstore: torn or corrupt batch")

// walk calls fn for each batch header in [from, end) using positional reads, without reading
// batch bodies. It stops early when fn returns false. It returns the position after the last
// whole batch visited and errTorn if the bytes at that position are not a whole batch.
func (s *segment) walk(from, end int64, fn func(b record.Batch, pos int64) bool) (int64, error) {
	var buf [record.HeaderSizeV2]byte
	pos := from
	for pos < end {
		b, err := readHeader(s.file, pos, end, &buf)
		if err != nil {
			return pos, err
		}
		if !fn(b, pos) {
			return pos, nil
		}
		pos += int64(record.NextBatchSize(b))
	}
	return pos, nil
}

// translate returns the position of the first batch in [0, end) whose last offset is >= off.
func (s *segment) translate(off, end int64) (int64, bool, error) {
	s.mu.RLock()
	e := s.idx.floorOffset(relOf(off, s.base))
	s.mu.RUnlock()
	found := int64(-1)
	_, err := s.walk(int64(e.pos), end, func(b record.Batch, pos int64) bool {
		if b.LastOffset() >= off {
			found = pos
			return false
		}
		return true
	})
	if err != nil {
		return 0, false, storageErr(s, err)
	}
	return found, found >= 0, nil
}

// extent returns the end of the longest run of whole batches starting at pos that fits in
// maxBytes and ends at or before end (end itself is a batch boundary). With minOne the first
// batch is returned even when larger than maxBytes.
func (s *segment) extent(pos, end int64, maxBytes int, minOne bool) (int64, error) {
	if end-pos <= int64(maxBytes) {
		return end, nil
	}
	limit := pos + int64(maxBytes)
	s.mu.RLock()
	e := s.idx.floorPosition(uint32(min(limit, maxSegmentBytes)))
	s.mu.RUnlock()
	start := max(int64(e.pos), pos)
	stop := start
	_, err := s.walk(start, end, func(b record.Batch, p int64) bool {
		n := p + int64(record.NextBatchSize(b))
		if n > limit {
			if p == pos && minOne {
				stop = n
			}
			return false
		}
		stop = n
		return true
	})
	if err != nil {
		return 0, storageErr(s, err)
	}
	return stop, nil
}

// findTimestamp returns the base offset of the first batch in [0, end) whose commit timestamp
// is >= ts. It relies on commit timestamps being non-decreasing within the log.
func (s *segment) findTimestamp(ts, end int64) (int64, bool, error) {
	s.mu.RLock()
	var from int64
	if te, ok := s.idx.lastTimeBefore(ts); ok {
		from = int64(s.idx.floorOffset(te.rel).pos)
	}
	s.mu.RUnlock()
	found := int64(-1)
	_, err := s.walk(from, end, func(b record.Batch, _ int64) bool {
		if b.CommitTimestamp() >= ts {
			found = b.BaseOffset()
			return false
		}
		return true
	})
	if err != nil {
		return 0, false, storageErr(s, err)
	}
	return found, found >= 0, nil
}

// seal turns the active index into its sealed on-disk form: both files are written
// atomically, then memory-mapped. The caller holds Log.mu and has synced the log file.
func (s *segment) seal() error {
	s.mu.RLock()
	offs, times := s.idx.encodeOffsets(), s.idx.encodeTimes()
	s.mu.RUnlock()
	if err := writeFileAtomic(fileName(s.dir, s.base, indexSuffix), offs); err != nil {
		return err
	}
	if err := writeFileAtomic(fileName(s.dir, s.base, timeIndexSuffix), times); err != nil {
		return err
	}
	om, tm, err := mapIndexes(s.dir, s.base)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.idx = segIndex{sealed: true, offMap: om, timeMap: tm}
	s.mu.Unlock()
	return nil
}

// persistIndexes writes the active index to disk without sealing (used by Close).
func (s *segment) persistIndexes() error {
	s.mu.RLock()
	offs, times := s.idx.encodeOffsets(), s.idx.encodeTimes()
	s.mu.RUnlock()
	if err := writeFileAtomic(fileName(s.dir, s.base, indexSuffix), offs); err != nil {
		return err
	}
	return writeFileAtomic(fileName(s.dir, s.base, timeIndexSuffix), times)
}

// mapIndexes memory-maps the two index files of the segment at base.
func mapIndexes(dir string, base int64) (offMap, timeMap []byte, err error) {
	of, err := os.Open(fileName(dir, base, indexSuffix))
	if err != nil {
		return nil, nil, err
	}
	defer of.Close()
	tf, err := os.Open(fileName(dir, base, timeIndexSuffix))
	if err != nil {
		return nil, nil, err
	}
	defer tf.Close()
	if offMap, err = mmapFile(of); err != nil {
		return nil, nil, err
	}
	if timeMap, err = mmapFile(tf); err != nil {
		munmap(offMap)
		return nil, nil, err
	}
	return offMap, timeMap, nil
}

// removeFiles unlinks the segment's files. Open descriptors stay readable until released:
// the log file is pinned open first (a closed one could not be reopened once unlinked) and
// unpinned by the last release.
func (s *segment) removeFiles() error {
	if s.file != nil && !s.removedPin.Load() {
		if _, err := s.file.Pin(); err == nil {
			s.removedPin.Store(true)
		}
	}
	var first error
	for _, suf := range []string{logSuffix, indexSuffix, timeIndexSuffix, batchStatsSuffix} {
		if err := os.Remove(fileName(s.dir, s.base, suf)); err != nil && !os.IsNotExist(err) && first == nil {
			first = err
		}
	}
	return first
}

// relOf converts an absolute offset into one relative to base, clamped into uint32.
func relOf(off, base int64) uint32 {
	d := off - base
	if d < 0 {
		return 0
	}
	if d > 1<<32-1 {
		return 1<<32 - 1
	}
	return uint32(d)
}

// writeFileAtomic writes data to path via a synced temporary file and a rename.
func writeFileAtomic(path string, data []byte) error {
	tmp := path + tmpSuffix
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("logstore: write %s: %w", path, err)
	}
	if _, err = f.Write(data); err == nil {
		err = fdatasync(f)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("logstore: write %s: %w", path, err)
	}
	return nil
}

// fdatasync forces f's data (and the metadata needed to read it, such as its size) to disk.
func fdatasync(f *os.File) error {
	defer diskwatch.BeginSync(f.Name())()
	if err := faultfs.Before(faultfs.Sync, f.Name()); err != nil {
		return err
	}
	for {
		err := syscall.Fdatasync(int(f.Fd()))
		if err != syscall.EINTR {
			return err
		}
	}
}

// syncDir makes directory entry changes (creates, renames, unlinks) durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
