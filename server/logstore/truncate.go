package logstore

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/record"
)

// truncateIntentName is the file that makes TruncateTo crash-safe: written (atomically)
// before anything is cut, removed after everything is, and redone by Open when found.
// Layout: magic "STI1" | crc32c uint32 over the offset | offset int64 (little-endian).
const (
	truncateIntentName  = "truncate_intent"
	truncateIntentMagic = "STI1"
)

// SetTruncateFloor makes TruncateTo refuse to cut below floor() (the primary-key store
// registers its applied offset: state already in Pebble must never lose its changelog).
func (r *Replica) SetTruncateFloor(floor func() int64) { r.truncFloor.Store(&floor) }

// TruncateTo removes every batch at or above offset (when offset falls inside a batch, that
// whole batch: the log then ends at the batch's base offset), across segments, the way a
// follower discards a tail that diverged from its leader's. Indexes are rebuilt, writer
// state is rebuilt from the newest snapshot at or below the new end plus replay, the
// leader-epoch cache loses the epochs starting at or after the new end, and the high
// watermark becomes min(HW, new end). Everything is fdatasync'ed before it returns.
//
// It refuses (LOG_STORAGE_EXCEPTION) to cut below the floor set with SetTruncateFloor and
// below the log start. It is crash-safe: an intent file is made durable before the first
// cut and removed after the last, and Open redoes an interrupted truncation, so recovery
// finds either the old log (crash before the intent) or the new one. Like Truncate, it must
// not race readers holding ranges above the new end.
func (r *Replica) TruncateTo(offset int64) error {
	l := r.log
	l.syncer.mu.Lock()
	defer l.syncer.mu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if cut, err := r.truncationCutsLocked(offset); !cut || err != nil {
		return err
	}
	if offset < l.segs[0].base {
		return ferr.New(ferr.LogStorageException,
			"cannot truncate %s to %d: below the log start offset %d", l.dir, offset, l.segs[0].base)
	}
	_, _, end, err := positionOf(l.segs, l.leo, offset)
	if err != nil {
		return err
	}
	if f := r.truncFloor.Load(); f != nil {
		if floor := (*f)(); end < floor {
			return ferr.New(ferr.LogStorageException,
				"cannot truncate %s to %d: the primary-key state already applied the changelog up to %d", l.dir, end, floor)
		}
	}
	if err := r.hook(0); err != nil {
		return err
	}
	// The journal must not replay the batches about to be cut (before the intent: an intent
	// found at Open implies the void is durable).
	if err := l.journalVoidLocked(end); err != nil {
		return err
	}
	if err := writeIntent(l.dir, end); err != nil {
		return fmt.Errorf("%w: %w", ferr.New(ferr.LogStorageException, "truncate %s", l.dir), err)
	}
	if err := r.hook(1); err != nil {
		return err
	}
	s, pos, changed, err := r.cutLocked(end)
	if err != nil {
		return err
	}
	if err := r.hook(3); err != nil {
		return err
	}
	// From here on a failure leaves the intent in place: the log refuses appends (failed)
	// until it is reopened, and Open redoes the truncation, which then cuts nothing new.
	if changed {
		if err := r.settleCutLocked(s, pos); err != nil {
			return err
		}
	}
	if err := r.hook(4); err != nil {
		return err
	}
	if err := removeIntent(l.dir); err != nil {
		// A leftover intent must not meet later appends: Open would cut them.
		l.failed = fmt.Errorf("%w: %w", ferr.New(ferr.LogStorageException, "truncate %s: remove intent", l.dir), err)
		return l.failed
	}
	return nil
}

// truncationCutsLocked is the check Truncate and TruncateTo start with: it fails on a
// closed, failed or offline log and reports whether offset is below the log end, i.e. whether
// there is anything to cut. Caller holds syncer.mu and mu.
func (r *Replica) truncationCutsLocked(offset int64) (bool, error) {
	l := r.log
	if l.closed {
		return false, ErrClosed
	}
	if l.failed != nil {
		return false, l.failed
	}
	if err := l.Offline(); err != nil {
		return false, err
	}
	return offset < l.leo, nil
}

// settleCutLocked brings everything derived from the log's end in line with a cut that left
// s, ending at byte pos, as the active segment (cutLocked returned them with changed=true):
// leader epochs starting at or after the new end are dropped, the synced mark and the high
// watermark are lowered to it, writer state is rebuilt from the remaining batches, and the
// directory is synced. A failure marks the log failed, so it refuses appends until reopened.
// Caller holds syncer.mu and mu.
func (r *Replica) settleCutLocked(s *segment, pos int64) error {
	l := r.log
	if r.epochs.truncateFromEnd(l.leo) {
		if err := r.persistEpochsLocked(); err != nil {
			l.failed = err
			return err
		}
	}
	if l.syncer.synced.Load() > l.leo {
		l.syncer.synced.Store(l.leo) // nothing above the end exists any more; all below it is synced
	}
	l.journal.segEnd = min(l.journal.segEnd, l.leo)
	if err := l.writers.rebuild(context.Background(), l.dir, l.segs, l.leo); err != nil {
		l.failed = fmt.Errorf("%w: %w", ferr.New(ferr.LogStorageException, "truncate %s: rebuild writer state", l.dir), err)
		return l.failed
	}
	if err := syncDir(l.dir); err != nil {
		l.failed = fmt.Errorf("%w: %w", ferr.New(ferr.LogStorageException, "truncate %s", l.dir), err)
		return l.failed
	}
	v := l.v.Load()
	if v.hw >= l.leo {
		l.publish(l.leo, s, pos)
	} else {
		l.publish(v.hw, v.hwSeg, v.hwPos)
	}
	r.checkpointHWLocked()
	return nil
}

func (r *Replica) hook(step int) error {
	if r.testHook == nil {
		return nil
	}
	return r.testHook(step)
}

// cutLocked removes every batch whose last offset is >= offset: the segments after the one
// that holds offset (newest first, so that a crash leaves a prefix of the log, never a gap)
// and the tail of that one, which becomes the active segment with rebuilt indexes. It sets
// leo and maxTs but neither rebuilds writer state nor publishes. changed is false when
// nothing was cut. Caller holds mu (or owns l exclusively during Open).
func (r *Replica) cutLocked(offset int64) (s *segment, pos int64, changed bool, err error) {
	l := r.log
	i := len(l.segs) - 1
	for i > 0 && l.segs[i].base > offset {
		i--
	}
	for ; i < len(l.segs); i++ {
		seg := l.segs[i]
		seg.mu.RLock()
		size := seg.size
		seg.mu.RUnlock()
		p, ok, err := seg.translate(offset, size)
		if err != nil {
			return nil, 0, false, err
		}
		if ok {
			pos = p
			break
		}
	}
	if i == len(l.segs) {
		return nil, 0, false, nil
	}
	s = l.segs[i]
	for j := len(l.segs) - 1; j > i; j-- {
		d := l.segs[j]
		if err := d.removeFiles(); err != nil {
			l.failed = fmt.Errorf("%w: %w", ferr.New(ferr.LogStorageException, "truncate: remove segment %d", d.base), err)
			return nil, 0, false, l.failed
		}
		l.segs = append([]*segment(nil), l.segs[:j]...)
		d.release()
		if err := r.hook(2); err != nil {
			return nil, 0, false, err
		}
	}
	if err := r.truncateSegment(s, pos); err != nil {
		l.failed = err
		return nil, 0, false, err
	}
	if err := syncDir(l.dir); err != nil {
		return nil, 0, false, fmt.Errorf("logstore: truncate: %w", err)
	}
	l.leo = s.next
	l.maxTs = 0
	for _, seg := range l.segs {
		l.maxTs = max(l.maxTs, seg.maxTs)
	}
	return s, pos, true, nil
}

func writeIntent(dir string, offset int64) error {
	b := make([]byte, 16)
	copy(b, truncateIntentMagic)
	binary.LittleEndian.PutUint64(b[8:], uint64(offset))
	binary.LittleEndian.PutUint32(b[4:], record.Checksum(b[8:]))
	if err := writeFileAtomic(filepath.Join(dir, truncateIntentName), b); err != nil {
		return err
	}
	return syncDir(dir)
}

// readIntent returns the offset of an interrupted TruncateTo. A torn intent cannot exist
// (it is renamed into place whole); an unreadable one is reported so Open fails loudly
// instead of silently keeping a tail that was meant to go.
func readIntent(dir string) (int64, bool, error) {
	b, err := os.ReadFile(filepath.Join(dir, truncateIntentName))
	if os.IsNotExist(err) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	if len(b) != 16 || string(b[:4]) != truncateIntentMagic ||
		binary.LittleEndian.Uint32(b[4:]) != record.Checksum(b[8:]) || int64(binary.LittleEndian.Uint64(b[8:])) < 0 {
		return 0, false, fmt.Errorf("logstore: malformed %s in %s", truncateIntentName, dir)
	}
	return int64(binary.LittleEndian.Uint64(b[8:])), true, nil
}

func removeIntent(dir string) error {
	if err := os.Remove(filepath.Join(dir, truncateIntentName)); err != nil && !os.IsNotExist(err) {
		return err
	}
	return syncDir(dir)
}
