package logstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/record"
)

// corruptMarker, when present in a bucket directory, keeps the log offline across restarts
// until an operator decides (AcceptTruncation). It holds "<segment file> <byte position>\n"
// followed by a human-readable reason.
const corruptMarker = "corrupt"

// operatorTruncatedMarker records that an operator cut the log with AcceptTruncation: state
// derived from the log (the primary-key state) may reflect batches that are gone and must be
// rebuilt. It holds the new log end offset. Consumers clear it with ClearOperatorTruncation.
const operatorTruncatedMarker = "operator_truncated"

// CorruptionError describes a stored batch that fails its checks (length, magic, CRC-32C,
// offset continuity) where it cannot be a torn tail: in a sealed segment, in the middle of
// the active segment with valid batches after it, or when read back after passing recovery.
// The log goes offline rather than dropping what follows; see AcceptTruncation.
type CorruptionError struct {
	// File is the segment file's path; Position the byte offset of the bad batch in it.
	File     string
	Position int64
	// Offset is the log offset the bad batch should have started at.
	Offset int64
	// ValidAfter is the position of the next valid batch found after it, or -1.
	ValidAfter int64
	Cause      error
}

func (e *CorruptionError) Error() string {
	s := fmt.Sprintf("corrupt batch in %s at byte %d (expected offset %d)", e.File, e.Position, e.Offset)
	if e.ValidAfter >= 0 {
		s += fmt.Sprintf(", valid batches follow from byte %d", e.ValidAfter)
	}
	if e.Cause != nil {
		s += ": " + e.Cause.Error()
	}
	return s
}

func (e *CorruptionError) Unwrap() error { return e.Cause }

// offlineErr is what every request to an offline log gets: LOG_STORAGE_EXCEPTION naming the
// segment file (base name only: clients need not see server paths) and position.
func offlineErr(c *CorruptionError) error {
	return fmt.Errorf("%w: %w", ferr.New(ferr.LogStorageException,
		"the bucket is offline: corrupt batch in segment file %s at byte %d; an operator must repair it",
		filepath.Base(c.File), c.Position), c)
}

// Offline returns the error every request gets when the log is offline because a stored
// batch is corrupt, or nil. It carries a *CorruptionError (errors.As) and
// LOG_STORAGE_EXCEPTION.
func (l *Log) Offline() error {
	if p := l.offline.Load(); p != nil {
		return *p
	}
	return nil
}

// goOffline takes the log offline for corruption c: the marker is written (so a restart
// stays offline), appends and reads are refused from now on, and one ERROR line names the
// file, the position and the operator's way out. It takes no lock, so readers and holders of
// mu may call it; only the first call logs. Appends, syncs and Close check Offline.
func (l *Log) goOffline(c *CorruptionError) error {
	err := offlineErr(c)
	if !l.offline.CompareAndSwap(nil, &err) {
		return *l.offline.Load()
	}
	if werr := writeCorruptMarker(l.dir, c); werr != nil {
		l.opts.Logger.Error("logstore: cannot persist the corruption marker", "dir", l.dir, "err", werr)
	}
	l.opts.Logger.Error("logstore: corrupt batch; bucket offline, nothing truncated",
		"dir", l.dir, "file", c.File, "position", c.Position, "offset", c.Offset,
		"valid_after", c.ValidAfter, "cause", c.Cause,
		"repair", "stop the server, then run: strom repair-log --bucket-dir "+l.dir+" --accept-truncation (drops every batch from the corrupt one on)")
	if l.opts.OnOffline != nil {
		l.opts.OnOffline()
	}
	return err
}

func writeCorruptMarker(dir string, c *CorruptionError) error {
	body := fmt.Sprintf("%s %d\n%s\n", filepath.Base(c.File), c.Position, c.Error())
	if err := writeFileAtomic(filepath.Join(dir, corruptMarker), []byte(body)); err != nil {
		return err
	}
	return syncDir(dir)
}

// readCorruptMarker returns the corruption recorded in dir, if any.
func readCorruptMarker(dir string) (*CorruptionError, bool, error) {
	b, err := os.ReadFile(filepath.Join(dir, corruptMarker))
	if errors.Is(err, os.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	first, rest, _ := strings.Cut(string(b), "\n")
	name, posStr, ok := strings.Cut(strings.TrimSpace(first), " ")
	pos, perr := strconv.ParseInt(posStr, 10, 64)
	if !ok || perr != nil || pos < 0 || filepath.Base(name) != name || !strings.HasSuffix(name, logSuffix) {
		return nil, false, fmt.Errorf("logstore: unreadable corruption marker in %s: %q", dir, first)
	}
	return &CorruptionError{File: filepath.Join(dir, name), Position: pos, Offset: -1, ValidAfter: -1,
		Cause: errors.New(strings.TrimSpace(rest))}, true, nil
}

// findBatchAfter looks for a valid batch starting anywhere in (from, size) of f whose base
// offset is at least next. Recovery uses it to tell a torn tail (nothing valid after the
// first bad byte: safe to cut) from corruption in the middle (acknowledged batches after it:
// never cut). It scans byte by byte, but only positions whose length, magic, record count and
// base offset are plausible are CRC-checked (streamed, so a garbage length cannot make it
// allocate), so a zero-filled or garbage tail costs about one sequential read.
func findBatchAfter(f io.ReaderAt, from, size, next int64) (int64, error) {
	const window = 1 << 20
	buf := make([]byte, window+record.HeaderSizeV2)
	for start := from + 1; start < size; start += window {
		n := min(int64(len(buf)), size-start)
		if _, err := f.ReadAt(buf[:n], start); err != nil {
			return -1, err
		}
		for i := int64(0); i < min(window, n); i++ {
			h := buf[i:n]
			if len(h) < record.HeaderSizeV0 {
				break
			}
			q := start + i
			sz := int64(record.NextBatchSize(h))
			if sz < record.HeaderSizeV0 || sz > size-q || h[12] > record.MagicV2 ||
				int64(binary.LittleEndian.Uint64(h)) < next {
				continue
			}
			b := record.Batch(h[:min(int64(len(h)), sz)])
			if len(b) < b.HeaderSize() {
				continue
			}
			count, delta := b.RecordCount(), b.LastOffsetDelta()
			if count < 0 || delta != max(count-1, 0) {
				continue
			}
			ok, err := crcMatches(f, q, sz, b)
			if err != nil {
				return -1, err
			}
			if ok {
				return q, nil
			}
		}
	}
	return -1, nil
}

// crcMatches checks the CRC of the sz-byte batch at q of f, whose header is hdr, reading the
// covered bytes in chunks.
func crcMatches(f io.ReaderAt, q, sz int64, hdr record.Batch) (bool, error) {
	from := int64(hdr.CRCCoveredFrom())
	r := io.NewSectionReader(f, q+from, sz-from)
	var chunk [64 << 10]byte
	var crc uint32
	for {
		n, err := r.Read(chunk[:])
		crc = crc32.Update(crc, record.ChecksumTable, chunk[:n])
		if err == io.EOF {
			break
		}
		if err != nil {
			return false, err
		}
	}
	return crc == hdr.CRC(), nil
}

// verifiedSet is the set of byte ranges of a segment whose batches passed their checks since
// the segment was opened: recovered or appended bytes, and ranges a reader verified. Sorted,
// disjoint, non-adjacent spans.
type verifiedSet struct {
	mu    sync.Mutex
	spans []span
}

type span struct{ lo, hi int64 }

// add records [lo, hi) as verified.
func (v *verifiedSet) add(lo, hi int64) {
	if lo >= hi {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	i := sort.Search(len(v.spans), func(i int) bool { return v.spans[i].hi >= lo })
	j := i
	for j < len(v.spans) && v.spans[j].lo <= hi {
		lo, hi = min(lo, v.spans[j].lo), max(hi, v.spans[j].hi)
		j++
	}
	v.spans = append(v.spans[:i], append([]span{{lo, hi}}, v.spans[j:]...)...)
}

// gaps returns the sub-ranges of [lo, hi) not yet verified.
func (v *verifiedSet) gaps(lo, hi int64) []span {
	v.mu.Lock()
	defer v.mu.Unlock()
	var out []span
	for _, s := range v.spans {
		if s.hi <= lo {
			continue
		}
		if s.lo >= hi {
			break
		}
		if s.lo > lo {
			out = append(out, span{lo, s.lo})
		}
		lo = max(lo, s.hi)
		if lo >= hi {
			return out
		}
	}
	if lo < hi {
		out = append(out, span{lo, hi})
	}
	return out
}

// truncate forgets everything at or after pos.
func (v *verifiedSet) truncate(pos int64) {
	v.mu.Lock()
	defer v.mu.Unlock()
	for i := len(v.spans) - 1; i >= 0; i-- {
		if v.spans[i].lo >= pos {
			v.spans = v.spans[:i]
			continue
		}
		v.spans[i].hi = min(v.spans[i].hi, pos)
		break
	}
}

// verify checks every batch in [lo, hi) of s (both batch boundaries) that no earlier check
// covered: length, magic, CRC-32C and contiguous offsets. Each byte is checked once per
// opening of the segment, so a consumer reading the log sequentially pays one extra read of
// what it fetches the first time, and nothing after. It returns a *CorruptionError for the
// first bad batch.
func (s *segment) verify(lo, hi int64) error {
	for _, g := range s.verified.gaps(lo, hi) {
		if err := s.verifySpan(g.lo, g.hi); err != nil {
			return err
		}
		s.verified.add(g.lo, g.hi)
	}
	return nil
}

func (s *segment) verifySpan(lo, hi int64) error {
	var buf []byte
	next := int64(-1)
	for pos := lo; pos < hi; {
		var hdr [record.LogOverhead]byte
		bad := func(cause error) error {
			return &CorruptionError{File: fileName(s.dir, s.base, logSuffix), Position: pos, Offset: next, ValidAfter: -1, Cause: cause}
		}
		if hi-pos < record.LogOverhead+1 {
			return bad(errTorn)
		}
		if _, err := s.file.ReadAt(hdr[:], pos); err != nil {
			return storageErr(s, err)
		}
		n := int64(record.NextBatchSize(hdr[:]))
		if n < record.LogOverhead+1 || n > hi-pos {
			return bad(fmt.Errorf("batch length %d with %d bytes left", n, hi-pos))
		}
		if int64(cap(buf)) < n {
			buf = make([]byte, n)
		}
		buf = buf[:n]
		if _, err := s.file.ReadAt(buf, pos); err != nil {
			return storageErr(s, err)
		}
		b := record.Batch(buf)
		if err := b.Validate(); err != nil {
			return bad(err)
		}
		if next >= 0 && b.BaseOffset() != next {
			return bad(fmt.Errorf("base offset %d, expected %d", b.BaseOffset(), next))
		}
		next = b.NextOffset()
		pos += n
	}
	return nil
}
