package logstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sort"
	"sync"
)

// Batch statistics sidecars. Beside each segment file <base>.log, <base>.batchstats holds
// opaque per-batch statistics blobs that the tablet server computes (server/tablet,
// internal/batchstats) and uses to prune filtered fetches. The log does not interpret them.
//
// Format: a sequence of records, each
//
//	uvarint  n, the length of the rest of the record
//	int64    batch base offset   (little endian)
//	uint32   batch CRC           (the header's CRC field)
//	int32    batch size in bytes
//	n-16     bytes: the blob
//
// The file is appended without fsync: it is a cache that can always be rebuilt from the
// batches, so a torn or missing tail only means those batches' statistics are computed again.
// Records are keyed by base offset, CRC and size together, so a record that outlived a
// truncation (a different batch now at that offset) never matches. The sidecar is removed
// with its segment (removeFiles).

const batchStatsSuffix = ".batchstats"

// batchStatsHeader is the fixed part of a sidecar record after its length.
const batchStatsHeader = 16

// maxBatchStatsRecord bounds one record, so a corrupt length cannot make a reader allocate.
const maxBatchStatsRecord = 1 << 20

// BatchStats is the store of a Log's batch statistics sidecars. It owns the append handle of
// the sidecar last written to; Log.BatchStats returns it.
type BatchStats struct {
	log *Log

	mu     sync.Mutex
	base   int64
	f      *os.File
	closed bool
}

// BatchStats returns the log's batch statistics sidecars.
func (l *Log) BatchStats() *BatchStats { return &l.batchStats }

// SegmentBase returns the base offset of the segment that holds offset, and false when no
// live segment does.
func (l *Log) SegmentBase(offset int64) (int64, bool) {
	segs := l.v.Load().segs
	i := sort.Search(len(segs), func(i int) bool { return segs[i].base > offset }) - 1
	if i < 0 {
		return 0, false
	}
	return segs[i].base, true
}

// Append records blob as the statistics of the stored batch at base with the
// given CRC and size, in the sidecar of the segment holding base.
func (b *BatchStats) Append(base int64, crc uint32, size int32, blob []byte) error {
	l := b.log
	if len(blob) > maxBatchStatsRecord-batchStatsHeader {
		return fmt.Errorf("logstore: batch statistics of %d bytes", len(blob))
	}
	seg, ok := l.SegmentBase(base)
	if !ok {
		return nil // retention removed it meanwhile
	}
	rec := binary.AppendUvarint(make([]byte, 0, 10+batchStatsHeader+len(blob)), uint64(batchStatsHeader+len(blob)))
	rec = binary.LittleEndian.AppendUint64(rec, uint64(base))
	rec = binary.LittleEndian.AppendUint32(rec, crc)
	rec = binary.LittleEndian.AppendUint32(rec, uint32(size))
	rec = append(rec, blob...)

	sf := b
	sf.mu.Lock()
	defer sf.mu.Unlock()
	if sf.closed {
		return ErrClosed
	}
	if sf.f == nil || sf.base != seg {
		if sf.f != nil {
			_ = sf.f.Close()
			sf.f = nil
		}
		f, err := os.OpenFile(fileName(l.dir, seg, batchStatsSuffix), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			return fmt.Errorf("logstore: open batch statistics: %w", err)
		}
		sf.f, sf.base = f, seg
	}
	if _, err := sf.f.Write(rec); err != nil {
		return fmt.Errorf("logstore: append batch statistics: %w", err)
	}
	return nil
}

// Read calls fn for every record in the sidecar of the segment whose base offset
// is seg, in file order, up to the first record that is torn or malformed; the file is cut
// there, so that records appended later are readable. A missing sidecar has no records.
// blob is only valid during the call.
func (b *BatchStats) Read(seg int64, fn func(base int64, crc uint32, size int32, blob []byte)) error {
	l := b.log
	sf := b
	sf.mu.Lock() // no append between reading the file and cutting it
	defer sf.mu.Unlock()
	path := fileName(l.dir, seg, batchStatsSuffix)
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("logstore: read batch statistics: %w", err)
	}
	good := 0
	for good < len(data) {
		rest := data[good:]
		n, k := binary.Uvarint(rest)
		if k <= 0 || n < batchStatsHeader || n > maxBatchStatsRecord || n > uint64(len(rest)-k) {
			// A torn or garbled tail: drop it; the caller rebuilds what it held.
			if err := os.Truncate(path, int64(good)); err != nil {
				return fmt.Errorf("logstore: cut batch statistics: %w", err)
			}
			return nil
		}
		r := rest[k : k+int(n)]
		fn(int64(binary.LittleEndian.Uint64(r)), binary.LittleEndian.Uint32(r[8:]), int32(binary.LittleEndian.Uint32(r[12:])), r[batchStatsHeader:])
		good += k + int(n)
	}
	return nil
}

// close closes the sidecar handle; later appends fail with ErrClosed.
func (b *BatchStats) close() {
	sf := b
	sf.mu.Lock()
	defer sf.mu.Unlock()
	if sf.f != nil {
		_ = sf.f.Close()
		sf.f = nil
	}
	sf.closed = true
}
