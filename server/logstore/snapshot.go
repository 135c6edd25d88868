package logstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/stromdb/strom/internal/record"
)

// Writer snapshot layout (little-endian), see doc.go.
const (
	snapshotMagic      = "SWS1"
	snapshotHeaderSize = 20 // magic 4, crc 4, offset 8, count 4
	snapshotWriterSize = 17 // id 8, lastTs 8, n 1
	snapshotBatchSize  = 28 // seq 4, first 8, last 8, ts 8
)

var errBadSnapshot = errors.New("logstore: malformed writer snapshot")

// encodeSnapshot serialises ws as the state valid at offset, writers sorted by id so that
// equal states give equal bytes.
func encodeSnapshot(offset int64, ws writerState) []byte {
	ids := make([]int64, 0, len(ws))
	size := snapshotHeaderSize
	for id, e := range ws {
		ids = append(ids, id)
		size += snapshotWriterSize + e.n*snapshotBatchSize
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	b := make([]byte, snapshotHeaderSize, size)
	copy(b, snapshotMagic)
	binary.LittleEndian.PutUint64(b[8:], uint64(offset))
	binary.LittleEndian.PutUint32(b[16:], uint32(len(ids)))
	for _, id := range ids {
		e := ws[id]
		b = binary.LittleEndian.AppendUint64(b, uint64(id))
		b = binary.LittleEndian.AppendUint64(b, uint64(e.lastTs))
		b = append(b, byte(e.n))
		for _, m := range e.batches[:e.n] {
			b = binary.LittleEndian.AppendUint32(b, uint32(m.seq))
			b = binary.LittleEndian.AppendUint64(b, uint64(m.firstOffset))
			b = binary.LittleEndian.AppendUint64(b, uint64(m.lastOffset))
			b = binary.LittleEndian.AppendUint64(b, uint64(m.ts))
		}
	}
	binary.LittleEndian.PutUint32(b[4:], record.Checksum(b[8:]))
	return b
}

// decodeSnapshot parses a writer snapshot. Any inconsistency is an error; it never panics.
func decodeSnapshot(b []byte) (int64, writerState, error) {
	if len(b) < snapshotHeaderSize || string(b[:4]) != snapshotMagic {
		return 0, nil, errBadSnapshot
	}
	if binary.LittleEndian.Uint32(b[4:]) != record.Checksum(b[8:]) {
		return 0, nil, fmt.Errorf("%w: checksum mismatch", errBadSnapshot)
	}
	offset := int64(binary.LittleEndian.Uint64(b[8:]))
	count := binary.LittleEndian.Uint32(b[16:])
	if offset < 0 || uint64(count)*snapshotWriterSize > uint64(len(b)) {
		return 0, nil, errBadSnapshot
	}
	ws := make(writerState, count)
	p := b[snapshotHeaderSize:]
	prevID := int64(record.NoWriterID)
	for i := uint32(0); i < count; i++ {
		if len(p) < snapshotWriterSize {
			return 0, nil, errBadSnapshot
		}
		e := &writerEntry{
			id:     int64(binary.LittleEndian.Uint64(p)),
			lastTs: int64(binary.LittleEndian.Uint64(p[8:])),
			n:      int(p[16]),
		}
		p = p[snapshotWriterSize:]
		// Writers are strictly ascending by id, above the NoWriterID sentinel (writer ids
		// from INIT_WRITER are never negative): this also rules out duplicates.
		if e.n > retainedBatches || len(p) < e.n*snapshotBatchSize || e.id <= prevID {
			return 0, nil, errBadSnapshot
		}
		prevID = e.id
		for j := 0; j < e.n; j++ {
			e.batches[j] = batchMeta{
				seq:         int32(binary.LittleEndian.Uint32(p)),
				firstOffset: int64(binary.LittleEndian.Uint64(p[4:])),
				lastOffset:  int64(binary.LittleEndian.Uint64(p[12:])),
				ts:          int64(binary.LittleEndian.Uint64(p[20:])),
			}
			p = p[snapshotBatchSize:]
		}
		ws[e.id] = e
	}
	if len(p) != 0 {
		return 0, nil, fmt.Errorf("%w: trailing bytes", errBadSnapshot)
	}
	return offset, ws, nil
}

// listSnapshots returns the offsets of the snapshot files in dir, ascending.
func listSnapshots(dir string) ([]int64, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var offs []int64
	for _, e := range ents {
		if o, ok := parseBase(e.Name(), snapshotSuffix); ok {
			offs = append(offs, o)
		}
	}
	sort.Slice(offs, func(i, j int) bool { return offs[i] < offs[j] })
	return offs, nil
}

// parseBase parses "<20 digits><suffix>".
func parseBase(name, suffix string) (int64, bool) {
	if !strings.HasSuffix(name, suffix) || len(name) != 20+len(suffix) {
		return 0, false
	}
	v, err := strconv.ParseInt(name[:20], 10, 64)
	if err != nil || v < 0 {
		return 0, false
	}
	return v, true
}

// writeSnapshot persists ws as valid at offset and keeps only the newest keep snapshots.
func writeSnapshot(dir string, offset int64, ws writerState, keep int) error {
	if err := writeFileAtomic(fileName(dir, offset, snapshotSuffix), encodeSnapshot(offset, ws)); err != nil {
		return err
	}
	offs, err := listSnapshots(dir)
	if err != nil {
		return err
	}
	for i := 0; i < len(offs)-keep; i++ {
		_ = os.Remove(fileName(dir, offs[i], snapshotSuffix))
	}
	return nil
}

// loadLatestSnapshot returns the newest readable snapshot with offset <= maxOffset, deleting
// snapshots beyond maxOffset (they describe truncated data). ok is false when none is usable.
func loadLatestSnapshot(dir string, maxOffset int64) (int64, writerState, bool) {
	offs, err := listSnapshots(dir)
	if err != nil {
		return 0, nil, false
	}
	for i := len(offs) - 1; i >= 0; i-- {
		path := fileName(dir, offs[i], snapshotSuffix)
		if offs[i] > maxOffset {
			_ = os.Remove(path)
			continue
		}
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		off, ws, err := decodeSnapshot(b)
		if err != nil || off != offs[i] {
			_ = os.Remove(path)
			continue
		}
		return off, ws, true
	}
	return 0, nil, false
}

// deleteSnapshotsBelow removes snapshots older than offset, always keeping the newest one.
func deleteSnapshotsBelow(dir string, offset int64) {
	offs, err := listSnapshots(dir)
	if err != nil {
		return
	}
	for i := 0; i < len(offs)-1 && offs[i] < offset; i++ {
		_ = os.Remove(filepath.Join(dir, fmt.Sprintf("%020d%s", offs[i], snapshotSuffix)))
	}
}
