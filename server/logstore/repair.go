package logstore

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/stromdb/strom/internal/record"
)

// RepairReport describes what AcceptTruncation removed.
type RepairReport struct {
	// File and Position locate the corrupt batch; the segment now ends at Position.
	File     string
	Position int64
	// LogEnd is the log end offset after the cut: every batch at or above it is gone.
	LogEnd int64
	// RemovedBytes counts the bytes cut from File; RemovedSegments the later segment files
	// deleted whole.
	RemovedBytes    int64
	RemovedSegments []string
}

// AcceptTruncation is the operator's decision for a log that went offline because of a
// corrupt batch (see CorruptionError): it cuts the log at the corrupt batch, dropping it and
// everything after it, including acknowledged batches in later segments, so that the bucket
// can serve again. Nothing else ever drops acknowledged data. The log must not be open (stop
// the server first). Recovery runs in full on the next Open, and the next Open reports
// OperatorTruncation so that state derived from the log (the primary-key state) is rebuilt.
func AcceptTruncation(dir string) (RepairReport, error) {
	c, ok, err := readCorruptMarker(dir)
	if err != nil {
		return RepairReport{}, err
	}
	if !ok {
		return RepairReport{}, fmt.Errorf("logstore: %s is not offline (no %s marker): nothing to repair", dir, corruptMarker)
	}
	base, ok := parseBase(filepath.Base(c.File), logSuffix)
	if !ok {
		return RepairReport{}, fmt.Errorf("logstore: corruption marker names %q, not a segment file", c.File)
	}
	rep := RepairReport{File: c.File, Position: c.Position}
	st, err := os.Stat(c.File)
	if err != nil {
		return rep, fmt.Errorf("logstore: repair: %w", err)
	}
	if c.Position > st.Size() {
		return rep, fmt.Errorf("logstore: corruption marker position %d beyond the %d-byte %s", c.Position, st.Size(), c.File)
	}
	// The new end offset is the next offset after the last batch before the cut.
	f, err := segmentFiles.Open(c.File, os.O_RDWR, 0)
	if err != nil {
		return rep, fmt.Errorf("logstore: repair: %w", err)
	}
	defer f.Close()
	seg := &segment{base: base, dir: dir, file: f, next: base}
	rep.LogEnd = base
	end, err := seg.walk(0, c.Position, func(b record.Batch, _ int64) bool {
		rep.LogEnd = b.NextOffset()
		return true
	})
	if err != nil || end != c.Position {
		return rep, fmt.Errorf("logstore: the batches before byte %d of %s do not end there (at %d: %v); repair by hand", c.Position, c.File, end, err)
	}
	bases, err := scanDir(dir)
	if err != nil {
		return rep, err
	}
	for _, b := range bases {
		if b > base {
			rep.RemovedSegments = append(rep.RemovedSegments, fileName(dir, b, logSuffix))
			if err := (&segment{dir: dir, base: b}).removeFiles(); err != nil {
				return rep, fmt.Errorf("logstore: repair: %w", err)
			}
		}
	}
	rep.RemovedBytes = st.Size() - c.Position
	if err := f.Truncate(c.Position); err != nil {
		return rep, fmt.Errorf("logstore: repair: %w", err)
	}
	if err := syncSegmentFile(f); err != nil {
		return rep, fmt.Errorf("logstore: repair: %w", err)
	}
	for _, name := range []string{fileName(dir, base, indexSuffix), fileName(dir, base, timeIndexSuffix), filepath.Join(dir, cleanMarker)} {
		if err := os.Remove(name); err != nil && !errors.Is(err, os.ErrNotExist) {
			return rep, fmt.Errorf("logstore: repair: %w", err)
		}
	}
	// Snapshots above the new end are dropped by the next Open (loadLatestSnapshot).
	if err := writeFileAtomic(filepath.Join(dir, operatorTruncatedMarker), []byte(strconv.FormatInt(rep.LogEnd, 10)+"\n")); err != nil {
		return rep, err
	}
	if err := os.Remove(filepath.Join(dir, corruptMarker)); err != nil {
		return rep, fmt.Errorf("logstore: repair: %w", err)
	}
	return rep, syncDir(dir)
}

// OperatorTruncation reports whether an operator cut this log with AcceptTruncation since
// ClearOperatorTruncation was last called, and the log end offset right after the cut. State
// derived from the log may reflect batches that are gone and must be rebuilt from the log.
func (l *Log) OperatorTruncation() (int64, bool) {
	b, err := os.ReadFile(filepath.Join(l.dir, operatorTruncatedMarker))
	if err != nil {
		return 0, false
	}
	end, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, true
	}
	return end, true
}

// ClearOperatorTruncation forgets the operator's cut once derived state has been rebuilt.
func (l *Log) ClearOperatorTruncation() error {
	if err := os.Remove(filepath.Join(l.dir, operatorTruncatedMarker)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return syncDir(l.dir)
}
