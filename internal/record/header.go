// Package record implements the byte formats that travel inside the `records` fields of the
// Fluss RPCs: log record batches (magic V0, V1, V2), KV record batches, and the row-based log
// records. All Fluss-defined integers are little-endian.
//
// The functions in this file read and patch the log batch header in place. They never copy
// the batch: the server stores batches exactly as received and only patches BaseOffset and
// CommitTimestamp, which are outside the CRC.
package record

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
)

// Log batch magic values.
const (
	MagicV0 = 0
	MagicV1 = 1
	MagicV2 = 2
)

// LogOverhead is the size of the BaseOffset and Length fields; a batch occupies Length+LogOverhead bytes.
const LogOverhead = 12

// Header sizes per magic, before any statistics block.
const (
	HeaderSizeV0 = 48
	HeaderSizeV1 = 52
	HeaderSizeV2 = 56
)

// Sentinels written by non-idempotent writers.
const (
	NoWriterID      int64 = -1
	NoBatchSequence int32 = -1
)

// AppendOnlyFlag is bit 0 of the attributes byte: set when the batch carries no change-type vector.
const AppendOnlyFlag = 0x01

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// Errors returned by header validation. Callers map them to CORRUPT_RECORD_EXCEPTION.
var (
	ErrShortBatch  = errors.New("record: batch shorter than its header")
	ErrBadMagic    = errors.New("record: unknown batch magic")
	ErrBadLength   = errors.New("record: batch length field disagrees with the data")
	ErrCRCMismatch = errors.New("record: batch CRC mismatch")
	ErrRecordCount = errors.New("record: negative record count or inconsistent last offset delta")
)

// field offsets; V0 and V1 share them, V2 shifts everything after CommitTimestamp by 4.
type layout struct {
	crc, schemaID, attributes, lastOffsetDelta, writerID, batchSeq, recordCount, header int
}

var (
	layoutV0 = layout{21, 25, 27, 28, 32, 40, 44, HeaderSizeV0}
	layoutV1 = layout{21, 25, 27, 28, 32, 40, 44, HeaderSizeV1}
	layoutV2 = layout{25, 29, 31, 32, 36, 44, 48, HeaderSizeV2}
)

const (
	offBaseOffset      = 0
	offLength          = 8
	offMagic           = 12
	offCommitTimestamp = 13
	offLeaderEpochV2   = 21
)

// Batch is a view over one log record batch. It aliases the underlying bytes.
type Batch []byte

func (b Batch) layout() layout {
	switch b[offMagic] {
	case MagicV1:
		return layoutV1
	case MagicV2:
		return layoutV2
	default:
		return layoutV0
	}
}

// NextBatchSize returns the full size of the batch that starts at buf, or -1 if buf holds
// less than LogOverhead bytes. It does not check that buf holds the whole batch.
func NextBatchSize(buf []byte) int {
	if len(buf) < LogOverhead {
		return -1
	}
	return int(int32(binary.LittleEndian.Uint32(buf[offLength:]))) + LogOverhead
}

// Split returns the first complete batch in buf and the rest. It returns ok=false when buf
// does not start with a complete batch (a torn tail).
func Split(buf []byte) (b Batch, rest []byte, ok bool) {
	n := NextBatchSize(buf)
	if n < LogOverhead+1 || n > len(buf) {
		return nil, buf, false
	}
	return Batch(buf[:n:n]), buf[n:], true
}

// Validate checks the header shape and the CRC of a complete batch. It is what PRODUCE_LOG
// requires of every batch before anything is stored.
func (b Batch) Validate() error {
	if len(b) < LogOverhead+1 {
		return ErrShortBatch
	}
	if NextBatchSize(b) != len(b) {
		return ErrBadLength
	}
	m := b[offMagic]
	if m > MagicV2 {
		return fmt.Errorf("%w %d", ErrBadMagic, m)
	}
	l := b.layout()
	if len(b) < l.header {
		return ErrShortBatch
	}
	if m != MagicV0 {
		sl := int(int32(binary.LittleEndian.Uint32(b[l.header-4:])))
		if sl < 0 || l.header+sl > len(b) {
			return ErrBadLength
		}
	}
	if b.RecordCount() < 0 {
		return ErrRecordCount
	}
	want := binary.LittleEndian.Uint32(b[l.crc:])
	if crc32.Checksum(b[l.schemaID:], crcTable) != want {
		return ErrCRCMismatch
	}
	return nil
}

// Magic returns the batch's magic byte.
func (b Batch) Magic() byte { return b[offMagic] }

// BaseOffset returns the offset of the batch's first record.
func (b Batch) BaseOffset() int64 { return int64(binary.LittleEndian.Uint64(b[offBaseOffset:])) }

// SetBaseOffset patches the base offset in place (not covered by the CRC).
func (b Batch) SetBaseOffset(o int64) { binary.LittleEndian.PutUint64(b[offBaseOffset:], uint64(o)) }

// CommitTimestamp returns the batch's commit timestamp in epoch milliseconds.
func (b Batch) CommitTimestamp() int64 {
	return int64(binary.LittleEndian.Uint64(b[offCommitTimestamp:]))
}

// SetCommitTimestamp patches the commit timestamp in place (not covered by the CRC).
func (b Batch) SetCommitTimestamp(ts int64) {
	binary.LittleEndian.PutUint64(b[offCommitTimestamp:], uint64(ts))
}

// LeaderEpoch returns the V2 leader epoch, or -1 for V0/V1.
func (b Batch) LeaderEpoch() int32 {
	if b.Magic() != MagicV2 {
		return -1
	}
	return int32(binary.LittleEndian.Uint32(b[offLeaderEpochV2:]))
}

// CRC returns the stored checksum.
func (b Batch) CRC() uint32 { return binary.LittleEndian.Uint32(b[b.layout().crc:]) }

// SchemaID returns the id of the schema the rows were written with.
func (b Batch) SchemaID() int16 { return int16(binary.LittleEndian.Uint16(b[b.layout().schemaID:])) }

// Attributes returns the attributes byte.
func (b Batch) Attributes() byte { return b[b.layout().attributes] }

// AppendOnly reports whether the batch has no change-type vector (every row is +A).
func (b Batch) AppendOnly() bool { return b.Attributes()&AppendOnlyFlag != 0 }

// LastOffsetDelta returns RecordCount-1, or 0 for an empty batch.
func (b Batch) LastOffsetDelta() int32 {
	return int32(binary.LittleEndian.Uint32(b[b.layout().lastOffsetDelta:]))
}

// LastOffset is the offset of the batch's last record. An empty batch still occupies one offset.
func (b Batch) LastOffset() int64 { return b.BaseOffset() + int64(b.LastOffsetDelta()) }

// NextOffset is the offset that follows the batch.
func (b Batch) NextOffset() int64 { return b.LastOffset() + 1 }

// WriterID returns the idempotent writer id, or NoWriterID.
func (b Batch) WriterID() int64 { return int64(binary.LittleEndian.Uint64(b[b.layout().writerID:])) }

// BatchSequence returns the writer's per-bucket sequence number, or NoBatchSequence.
func (b Batch) BatchSequence() int32 {
	return int32(binary.LittleEndian.Uint32(b[b.layout().batchSeq:]))
}

// RecordCount returns the number of records in the batch.
func (b Batch) RecordCount() int32 {
	return int32(binary.LittleEndian.Uint32(b[b.layout().recordCount:]))
}

// HeaderSize returns the size of the fixed header for the batch's magic.
func (b Batch) HeaderSize() int { return b.layout().header }

// RecordsOffset returns where the records section starts (after the header and any statistics).
func (b Batch) RecordsOffset() int {
	l := b.layout()
	if b.Magic() == MagicV0 {
		return l.header
	}
	return l.header + int(int32(binary.LittleEndian.Uint32(b[l.header-4:])))
}

// Records returns the records section: for ARROW batches the optional change-type vector
// followed by one Arrow IPC message; for row formats the row records back to back.
func (b Batch) Records() []byte { return b[b.RecordsOffset():] }

// Checksum computes CRC-32C over data, the checksum used by every Fluss batch format.
func Checksum(data []byte) uint32 { return crc32.Checksum(data, crcTable) }

// V0Header holds the fields a writer chooses for a new V0 batch. BaseOffset and
// CommitTimestamp are left 0; the log assigns them on append.
type V0Header struct {
	SchemaID      int16
	AppendOnly    bool
	WriterID      int64
	BatchSequence int32
	RecordCount   int32
}

// AppendV0Batch appends a complete V0 batch with the given header fields and records section
// to dst, computing Length, LastOffsetDelta and the CRC.
func AppendV0Batch(dst []byte, h V0Header, records []byte) []byte {
	start := len(dst)
	var hdr [HeaderSizeV0]byte
	binary.LittleEndian.PutUint32(hdr[offLength:], uint32(HeaderSizeV0+len(records)-LogOverhead))
	hdr[offMagic] = MagicV0
	binary.LittleEndian.PutUint16(hdr[layoutV0.schemaID:], uint16(h.SchemaID))
	if h.AppendOnly {
		hdr[layoutV0.attributes] = AppendOnlyFlag
	}
	lastDelta := int32(0)
	if h.RecordCount > 0 {
		lastDelta = h.RecordCount - 1
	}
	binary.LittleEndian.PutUint32(hdr[layoutV0.lastOffsetDelta:], uint32(lastDelta))
	binary.LittleEndian.PutUint64(hdr[layoutV0.writerID:], uint64(h.WriterID))
	binary.LittleEndian.PutUint32(hdr[layoutV0.batchSeq:], uint32(h.BatchSequence))
	binary.LittleEndian.PutUint32(hdr[layoutV0.recordCount:], uint32(h.RecordCount))
	dst = append(dst, hdr[:]...)
	dst = append(dst, records...)
	crc := crc32.Checksum(dst[start+layoutV0.schemaID:], crcTable)
	binary.LittleEndian.PutUint32(dst[start+layoutV0.crc:], crc)
	return dst
}
