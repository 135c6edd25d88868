package logstore

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/stromdb/strom/internal/record"
	"github.com/stromdb/strom/server/journal"
)

// Open opens (creating if needed) the log in dir and recovers it; see doc.go for what
// recovery checks and repairs. ctx bounds the recovery scan.
func Open(ctx context.Context, dir string, opts Options) (*Log, error) {
	opts = opts.withDefaults()
	var bases []int64
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("logstore: open %s: %w", dir, err)
	}
	if err := checkDirFormat(dir); err != nil {
		return nil, err
	}
	l := &Log{dir: dir, opts: opts, writers: writerState{}}
	l.replica.log = l
	l.retention.log, l.retention.retainAt = l, math.MaxInt64
	l.syncer.log, l.appender.log, l.batchStats.log = l, l, l
	l.retention.ttlMs.Store(opts.TTL.Milliseconds())
	l.journal.setup(dir, opts)
	// Batches an earlier process acknowledged from the journal and may not have synced in
	// the segments (server/journal); read even when the journal is now off.
	replay, err := journal.ReadReplay(dir)
	if err != nil {
		return nil, fmt.Errorf("logstore: open %s: %w", dir, err)
	}
	if len(replay) > 0 {
		l.journal.covers = make(map[int64]bool, len(replay))
		for _, r := range replay {
			l.journal.covers[r.Base] = true
		}
		opts.journalCovers = l.journal.covered
	}

	markerPath := filepath.Join(dir, cleanMarker)
	_, statErr := os.Stat(markerPath)
	clean := statErr == nil
	if clean {
		// From now on a crash must be treated as unclean, so the marker goes first.
		if err := os.Remove(markerPath); err != nil {
			return nil, fmt.Errorf("logstore: open %s: %w", dir, err)
		}
		if err := syncDir(dir); err != nil {
			return nil, fmt.Errorf("logstore: open %s: %w", dir, err)
		}
	}

	bases, err = scanDir(dir)
	if err != nil {
		return nil, fmt.Errorf("logstore: open %s: %w", dir, err)
	}
	marked, isMarked, err := readCorruptMarker(dir)
	if err != nil {
		return nil, err
	}
	segs, corrupt, err := loadSegments(ctx, dir, bases, clean, opts)
	l.segs = segs
	if err != nil {
		for _, s := range l.segs {
			s.release()
		}
		return nil, err
	}
	if corrupt == nil && isMarked {
		corrupt = marked // found earlier (by a reader) and not repaired yet
	}
	if len(l.segs) == 0 {
		if l.journal.j != nil {
			// A new log in a directory an earlier log of the same name may have had: the
			// void that log's Close enqueued must be durable before this one writes.
			if err := l.journal.j.Sync(); err != nil {
				opts.Logger.Warn("logstore: journal sync before a new log failed", "dir", dir, "err", err)
			}
		}
		s, err := createSegment(dir, max(opts.InitialOffset, 0))
		if err != nil {
			return nil, err
		}
		l.segs = []*segment{s}
		if err := syncDir(dir); err != nil {
			s.release()
			return nil, fmt.Errorf("logstore: open %s: %w", dir, err)
		}
	}
	act := l.active()
	l.leo = act.next
	for _, s := range l.segs {
		l.maxTs = max(l.maxTs, s.maxTs)
	}
	intent, redo, err := readIntent(dir)
	// An offline (corrupt) log is left exactly as found, intent included, for the repair.
	redo = redo && corrupt == nil
	if err == nil && redo && intent < l.leo && intent >= l.segs[0].base {
		// A TruncateTo was interrupted: finish it (truncate.go).
		_, _, _, err = l.replica.cutLocked(intent)
		act = l.active()
	}
	if err != nil {
		for _, s := range l.segs {
			s.release()
		}
		return nil, fmt.Errorf("logstore: open %s: %w", dir, err)
	}
	if err := l.writers.rebuild(ctx, l.dir, l.segs, l.leo); err != nil {
		for _, s := range l.segs {
			s.release()
		}
		return nil, err
	}
	l.writers.expire(opts.Now().UnixMilli(), opts.WriterExpiration.Milliseconds())
	l.syncer.synced.Store(l.leo) // recovery fdatasync'ed what it kept
	l.replica.loadEpochs()
	if redo && l.replica.epochs.truncateFromEnd(intent) {
		if err := l.replica.persistEpochsLocked(); err != nil {
			for _, s := range l.segs {
				s.release()
			}
			return nil, err
		}
	}
	if opts.ExternalHighWatermark {
		// Replicated: only what the checkpoint says was committed is; the tail above it
		// waits for the leader (and may be truncated).
		hw := min(max(l.replica.loadHW(), l.segs[0].base), l.leo)
		seg, pos, boundary, err := positionOf(l.segs, l.leo, hw)
		if err != nil {
			for _, s := range l.segs {
				s.release()
			}
			return nil, err
		}
		l.publish(boundary, seg, pos)
	} else {
		// Single node: everything that survived recovery is committed.
		l.publish(l.leo, act, act.size)
	}
	if redo {
		if err := removeIntent(dir); err != nil {
			for _, s := range l.segs {
				s.release()
			}
			return nil, fmt.Errorf("logstore: open %s: %w", dir, err)
		}
	}
	if corrupt != nil {
		_ = l.goOffline(corrupt)
		return l, nil // offline: no flusher, nothing will be written; the replay file stays
	}
	if len(replay) > 0 {
		if err := l.replayJournal(replay); err != nil {
			for _, s := range l.segs {
				s.release()
			}
			return nil, fmt.Errorf("logstore: open %s: replay journal: %w", dir, err)
		}
		if !opts.ExternalHighWatermark {
			act = l.active()
			l.publish(l.leo, act, act.size)
		} else {
			l.republish()
		}
	}
	l.journal.covers = nil

	if p := opts.FlushPolicy; p.kind == flushInterval && p.interval > 0 {
		l.syncer.stop = make(chan struct{})
		l.syncer.done = make(chan struct{})
		go l.syncer.flusher(p.interval, l.syncer.stop)
	}
	return l, nil
}

// scanDir lists segment base offsets and removes leftovers: temporary files and indexes
// without a log file.
func scanDir(dir string) ([]int64, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	logs := map[int64]bool{}
	var bases []int64
	for _, e := range ents {
		if b, ok := parseBase(e.Name(), logSuffix); ok {
			logs[b] = true
			bases = append(bases, b)
		}
	}
	for _, e := range ents {
		name := e.Name()
		switch {
		case strings.HasSuffix(name, tmpSuffix):
			_ = os.Remove(filepath.Join(dir, name))
		case strings.HasSuffix(name, indexSuffix), strings.HasSuffix(name, timeIndexSuffix):
			b, ok := parseBase(name, indexSuffix)
			if !ok {
				b, ok = parseBase(name, timeIndexSuffix)
			}
			if ok && !logs[b] {
				_ = os.Remove(filepath.Join(dir, name))
			}
		}
	}
	sort.Slice(bases, func(i, j int) bool { return bases[i] < bases[j] })
	return bases, nil
}

// loadSegments opens every segment. Sealed segments were synced before they were sealed, so
// their indexes are trusted after a cheap check; the active segment is validated batch by
// batch unless the previous shutdown was clean. Only the active segment can have a torn tail,
// which is cut; a bad batch anywhere else, or one followed by valid batches, is corruption:
// loading stops there (later segments stay on disk untouched) and it is returned, so that the
// log opens offline.
//
// It returns the segments it opened, also on error (the caller releases them).
func loadSegments(ctx context.Context, dir string, bases []int64, clean bool, opts Options) ([]*segment, *CorruptionError, error) {
	var segs []*segment
	for i := 0; i < len(bases); i++ {
		if err := ctx.Err(); err != nil {
			return segs, nil, err
		}
		active := i == len(bases)-1
		s, corrupt, err := loadSegment(dir, bases[i], active, clean || !active, opts)
		if err != nil {
			return segs, nil, err
		}
		if len(segs) > 0 {
			prev := segs[len(segs)-1]
			if prev.next != s.base {
				opts.Logger.Warn("logstore: segments are not contiguous",
					"dir", dir, "prev_next_offset", prev.next, "base", s.base)
			}
		}
		segs = append(segs, s)
		if corrupt != nil {
			return segs, corrupt, nil
		}
	}
	return segs, nil, nil
}

// loadSegment opens one segment. A non-nil *CorruptionError means the segment holds a bad
// batch that recovery must not cut away; the segment is then returned with its valid prefix
// only (the file is left as it is) and an in-memory index.
func loadSegment(dir string, base int64, active, trusted bool, opts Options) (*segment, *CorruptionError, error) {
	f, err := segmentFiles.Open(fileName(dir, base, logSuffix), os.O_RDWR, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("logstore: open segment: %w", err)
	}
	st, err := os.Stat(f.Name())
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("logstore: open segment: %w", err)
	}
	size := st.Size()
	s := &segment{base: base, dir: dir, file: f, next: base, maxTs: -1}
	s.refs.Store(1)
	if size > maxSegmentBytes*2 {
		// An index position cannot address it; treat everything past the limit as garbage.
		size = maxSegmentBytes * 2
	}
	if trusted && s.loadIndexes(size, active, opts) {
		return s, nil, nil
	}
	torn, corrupt, err := s.recoverData(size, active, opts)
	if err != nil {
		s.release()
		return nil, nil, err
	}
	if corrupt != nil {
		return s, corrupt, nil
	}
	if torn {
		opts.Logger.Warn("logstore: truncated the torn tail of the active segment (an incomplete last write; nothing valid followed it)",
			"dir", dir, "base", base, "valid_bytes", s.size, "file_bytes", st.Size())
	}
	if !active {
		if err := s.seal(); err != nil {
			s.release()
			return nil, nil, err
		}
	}
	return s, nil, nil
}

// loadIndexes trusts the index files after checking them and walks the batches after the last
// offset entry to find the segment's end. It reports false (with s unchanged) on any doubt.
func (s *segment) loadIndexes(size int64, active bool, opts Options) bool {
	var idx segIndex
	if active {
		ob, err1 := os.ReadFile(fileName(s.dir, s.base, indexSuffix))
		tb, err2 := os.ReadFile(fileName(s.dir, s.base, timeIndexSuffix))
		if err1 != nil || err2 != nil {
			return false
		}
		if idx, err1 = decodeIndexes(ob, tb, size); err1 != nil {
			return false
		}
	} else {
		om, tm, err := mapIndexes(s.dir, s.base)
		if err != nil {
			return false
		}
		idx = segIndex{sealed: true, offMap: om, timeMap: tm}
		if len(om)%offsetEntrySize != 0 || len(tm)%timeEntrySize != 0 || idx.check(size, false) != nil {
			munmap(om)
			munmap(tm)
			return false
		}
	}
	var last offsetEntry
	if n := idx.offLen(); n > 0 {
		last = idx.offAt(n - 1)
	}
	next, maxTs, first := s.base, int64(-1), true
	end, err := s.walk(int64(last.pos), size, func(b record.Batch, _ int64) bool {
		if first && b.BaseOffset() != s.base+int64(last.rel) || !first && b.BaseOffset() != next {
			return false
		}
		first = false
		next, maxTs = b.NextOffset(), max(maxTs, b.CommitTimestamp())
		return true
	})
	if n := idx.timeLen(); n > 0 {
		maxTs = max(maxTs, idx.timeAt(n-1).ts)
	}
	if err != nil || end != size {
		if idx.sealed {
			munmap(idx.offMap)
			munmap(idx.timeMap)
		}
		return false
	}
	s.idx, s.size, s.next, s.maxTs = idx, size, next, maxTs
	s.sinceIndex = size - int64(last.pos)
	_ = opts
	return true
}

// recoverData reads the segment from the start, validating every batch (length, CRC, offset
// continuity), and rebuilds the index in memory. At the first bad batch it looks for valid
// batches after it: if there are none and the segment is the active one, the bad bytes are a
// torn tail (an incomplete last write) and the file is truncated there (torn = true);
// otherwise they are corruption, reported without touching the file.
func (s *segment) recoverData(size int64, active bool, opts Options) (bool, *CorruptionError, error) {
	r := bufio.NewReaderSize(io.NewSectionReader(s.file, 0, size), 1<<20)
	var (
		hdr   [record.LogOverhead]byte
		buf   []byte
		pos   int64
		next  = s.base
		maxTs = int64(-1)
		since int64
		idx   segIndex
		cause error
	)
	for pos < size {
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			cause = fmt.Errorf("%d bytes after the last whole batch", size-pos)
			break
		}
		n := int64(record.NextBatchSize(hdr[:]))
		if n < record.LogOverhead+1 || n > size-pos {
			cause = fmt.Errorf("batch length %d with %d bytes left", n, size-pos)
			break
		}
		if int64(cap(buf)) < n {
			buf = make([]byte, n)
		}
		buf = buf[:n]
		copy(buf, hdr[:])
		if _, err := io.ReadFull(r, buf[record.LogOverhead:]); err != nil {
			cause = err
			break
		}
		b := record.Batch(buf)
		if err := b.Validate(); err != nil {
			cause = err
			break
		}
		if b.BaseOffset() != next || b.LastOffsetDelta() < 0 {
			cause = fmt.Errorf("base offset %d, expected %d", b.BaseOffset(), next)
			break
		}
		if since >= int64(opts.IndexIntervalBytes) &&
			(idx.offLen()+1)*offsetEntrySize <= opts.IndexMaxBytes &&
			(idx.timeLen()+1)*timeEntrySize <= opts.IndexMaxBytes {
			idx.add(uint32(b.BaseOffset()-s.base), uint32(pos), b.CommitTimestamp())
			since = 0
		}
		since += n
		next, maxTs = b.NextOffset(), max(maxTs, b.CommitTimestamp())
		pos += n
	}
	setState := func() {
		s.mu.Lock()
		s.idx, s.size, s.next, s.maxTs, s.sinceIndex = idx, pos, next, maxTs, since
		s.mu.Unlock()
		s.verified.truncate(0)
		s.verified.add(0, pos)
	}
	torn := pos < size
	if torn {
		after, err := findBatchAfter(s.file, pos, size, next)
		if err != nil {
			return false, nil, fmt.Errorf("logstore: scan segment %d after a bad batch: %w", s.base, err)
		}
		// A damaged tail the journal holds again is the unsynced part of a power loss, not
		// corruption: it is cut, and Open replays the journal from there.
		journaled := active && opts.journalCovers != nil && opts.journalCovers(next)
		if (after >= 0 && !journaled) || !active {
			setState()
			return false, &CorruptionError{File: fileName(s.dir, s.base, logSuffix), Position: pos,
				Offset: next, ValidAfter: after, Cause: cause}, nil
		}
		if err := s.file.Truncate(pos); err != nil {
			return false, nil, fmt.Errorf("logstore: truncate torn segment %d: %w", s.base, err)
		}
	}
	// Sync even a whole segment: after a crash its bytes may sit only in the page cache, and
	// recovery is about to declare them committed.
	if err := syncSegmentFile(s.file); err != nil {
		return false, nil, fmt.Errorf("logstore: sync recovered segment %d: %w", s.base, err)
	}
	setState()
	return torn, nil, nil
}

// rebuild replaces the writer state with the one valid at leo in the log of dir made of segs:
// the newest usable snapshot, then the batch headers after it replayed (normally just the
// active segment, since a snapshot is taken at every roll and at Close). On error the state is
// left as it was. Caller holds Log.mu or owns the log exclusively.
func (w *writerState) rebuild(ctx context.Context, dir string, segs []*segment, leo int64) error {
	from := segs[0].base
	ws := writerState{}
	if off, snap, ok := loadLatestSnapshot(dir, leo); ok {
		ws = snap
		from = max(from, off)
	}
	for _, s := range segs {
		if err := ctx.Err(); err != nil {
			return err
		}
		if s.next <= from {
			continue
		}
		start, ok, err := s.translate(from, s.size)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		_, err = s.walk(start, s.size, func(b record.Batch, _ int64) bool {
			if b.BaseOffset() >= from {
				ws.observe(b)
			}
			return true
		})
		if err != nil {
			return storageErr(s, err)
		}
	}
	*w = ws
	return nil
}
