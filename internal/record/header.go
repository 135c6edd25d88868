package record

// This file reads and patches the log batch header in place. It never copies the batch: the
// server stores batches exactly as received and only patches BaseOffset and CommitTimestamp,
// which are outside the CRC.

import (
	"encoding/binary"
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

// Sentinels written by non-idempotent writers, and the V2 leader epoch clients write.
const (
	NoWriterID      int64 = -1
	NoBatchSequence int32 = -1
	NoLeaderEpoch   int32 = -1
)

// AppendOnlyFlag is bit 0 of the attributes byte: set when the batch carries no change-type vector.
const AppendOnlyFlag = 0x01

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// field offsets; V0 and V1 share them, V2 shifts everything after CommitTimestamp by 4.
// For V1/V2 the int32 StatisticsLength is the last four bytes of the header.
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
//
// Accessors assume the batch passed checkShape (every batch Iterate or BatchReader yields,
// and every batch Validate accepts, has): at least the header for its magic and a statistics
// length inside the batch. On shorter input they may panic.
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
// less than LogOverhead bytes. It does not check that buf holds the whole batch. A corrupt
// Length field may make the result smaller than LogOverhead, even negative.
func NextBatchSize(buf []byte) int {
	if len(buf) < LogOverhead {
		return -1
	}
	return int(int32(binary.LittleEndian.Uint32(buf[offLength:]))) + LogOverhead
}

// Split returns the first complete batch in buf and the rest. It returns ok=false when buf
// does not start with a complete batch (a torn tail, or a Length too small to hold the magic).
// The batch's shape is not checked; call Validate before using its accessors.
func Split(buf []byte) (b Batch, rest []byte, ok bool) {
	n := NextBatchSize(buf)
	if n < LogOverhead+1 || n > len(buf) {
		return nil, buf, false
	}
	return Batch(buf[:n:n]), buf[n:], true
}

// checkShape verifies what the accessors need: Length matches len(b), the magic is known,
// the header for that magic fits and (V1/V2) the statistics block lies inside the batch.
func (b Batch) checkShape() error {
	if len(b) < LogOverhead+1 {
		return fmt.Errorf("%w: %d bytes", ErrShortBatch, len(b))
	}
	if n := NextBatchSize(b); n != len(b) {
		return fmt.Errorf("%w: length field says %d bytes, have %d", ErrBadLength, n, len(b))
	}
	m := b[offMagic]
	if m > MagicV2 {
		return fmt.Errorf("%w %d", ErrBadMagic, m)
	}
	l := b.layout()
	if len(b) < l.header {
		return fmt.Errorf("%w: %d bytes, magic %d needs %d", ErrShortBatch, len(b), m, l.header)
	}
	if m != MagicV0 {
		sl := int(int32(binary.LittleEndian.Uint32(b[l.header-4:])))
		if sl < 0 || sl > len(b)-l.header {
			return fmt.Errorf("%w: statistics length %d with %d bytes after the header",
				ErrBadLength, sl, len(b)-l.header)
		}
	}
	return nil
}

// Validate checks the header shape and the CRC of a complete batch. It is what PRODUCE_LOG
// requires of every batch before anything is stored. Besides what Java checks (size at least
// the header, CRC), it requires RecordCount >= 0 and LastOffsetDelta == max(RecordCount-1, 0),
// which every official writer guarantees and offset assignment relies on. It does not parse
// the records section or the statistics block.
func (b Batch) Validate() error {
	if err := b.checkShape(); err != nil {
		return err
	}
	count, delta := b.RecordCount(), b.LastOffsetDelta()
	if count < 0 || delta != max(count-1, 0) {
		return fmt.Errorf("%w: record count %d, last offset delta %d", ErrRecordCount, count, delta)
	}
	l := b.layout()
	want := binary.LittleEndian.Uint32(b[l.crc:])
	if got := crc32.Checksum(b[l.schemaID:], crcTable); got != want {
		return fmt.Errorf("%w: stored %08x, computed %08x", ErrCRCMismatch, want, got)
	}
	return nil
}

// CRCCoveredFrom returns the offset of the first byte the CRC covers (the schema id; the CRC
// runs from there to the end of the batch). b must hold at least the magic byte.
func (b Batch) CRCCoveredFrom() int { return b.layout().schemaID }

// ChecksumTable is the CRC-32C table batch checksums use, for callers that checksum a batch
// in pieces (hash/crc32.Update).
var ChecksumTable = crcTable

// Magic returns the batch's magic byte.
func (b Batch) Magic() byte { return b[offMagic] }

// SizeInBytes returns the size of the batch as stated by its Length field.
func (b Batch) SizeInBytes() int { return NextBatchSize(b) }

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

// LeaderEpoch returns the V2 leader epoch, or NoLeaderEpoch for V0/V1.
func (b Batch) LeaderEpoch() int32 {
	if b.Magic() != MagicV2 {
		return NoLeaderEpoch
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

// StatisticsLength returns the size of the V1/V2 statistics block, 0 for V0.
func (b Batch) StatisticsLength() int {
	if b.Magic() == MagicV0 {
		return 0
	}
	return int(int32(binary.LittleEndian.Uint32(b[b.layout().header-4:])))
}

// Statistics returns the raw V1/V2 statistics block (see ParseStatistics), or nil when the
// batch has none.
func (b Batch) Statistics() []byte {
	n := b.StatisticsLength()
	if n == 0 {
		return nil
	}
	h := b.HeaderSize()
	return b[h : h+n : h+n]
}

// RecordsOffset returns where the records section starts (after the header and any statistics).
func (b Batch) RecordsOffset() int { return b.HeaderSize() + b.StatisticsLength() }

// Records returns the records section: for ARROW batches the optional change-type vector
// followed by one Arrow IPC message; for row formats the row records back to back.
func (b Batch) Records() []byte { return b[b.RecordsOffset():] }

// Checksum computes CRC-32C over data, the checksum used by every Fluss batch format.
func Checksum(data []byte) uint32 { return crc32.Checksum(data, crcTable) }

// V0Header holds the fields a writer chooses for a new batch. BaseOffset and
// CommitTimestamp are left 0; the log assigns them on append. Despite the name it also
// describes V1/V2 batches built with AppendBatch.
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
	dst, start := BeginV0Batch(dst)
	dst = append(dst, records...)
	finishBatch(dst[start:], MagicV0, h)
	return dst
}

// BeginV0Batch reserves room for a V0 header at the end of dst and returns the extended
// buffer and the batch's start. Append the records section (for example with
// AppendRowLogRecord) and then call FinishV0Batch(dst[start:], h): the batch is built in
// place, with no copy of the records.
func BeginV0Batch(dst []byte) (out []byte, start int) {
	start = len(dst)
	return append(dst, make([]byte, HeaderSizeV0)...), start
}

// FinishV0Batch fills in the V0 header of batch, which must be exactly the bytes from a
// BeginV0Batch start to the end of the records section, and computes Length,
// LastOffsetDelta and the CRC.
func FinishV0Batch(batch []byte, h V0Header) error {
	if len(batch) < HeaderSizeV0 {
		return fmt.Errorf("%w: %d bytes", ErrShortBatch, len(batch))
	}
	finishBatch(batch, MagicV0, h)
	return nil
}

// AppendBatch appends a complete batch of the given magic to dst. statistics must be empty
// for V0; for V2 the leader epoch is written as NoLeaderEpoch, as clients do. The statistics
// block is copied as is (see ParseStatistics for its layout).
func AppendBatch(dst []byte, magic byte, h V0Header, statistics, records []byte) ([]byte, error) {
	var l layout
	switch magic {
	case MagicV0:
		if len(statistics) != 0 {
			return dst, fmt.Errorf("record: a V0 batch cannot carry statistics")
		}
		l = layoutV0
	case MagicV1:
		l = layoutV1
	case MagicV2:
		l = layoutV2
	default:
		return dst, fmt.Errorf("%w %d", ErrBadMagic, magic)
	}
	start := len(dst)
	dst = append(dst, make([]byte, l.header)...)
	if magic != MagicV0 {
		binary.LittleEndian.PutUint32(dst[start+l.header-4:], uint32(len(statistics)))
	}
	dst = append(dst, statistics...)
	dst = append(dst, records...)
	finishBatch(dst[start:], magic, h)
	return dst, nil
}

// finishBatch writes every header field of b except StatisticsLength (already in place for
// V1/V2) and computes the CRC last. BaseOffset and CommitTimestamp are written as 0.
func finishBatch(b []byte, magic byte, h V0Header) {
	l := layoutV0
	switch magic {
	case MagicV1:
		l = layoutV1
	case MagicV2:
		l = layoutV2
		binary.LittleEndian.PutUint32(b[offLeaderEpochV2:], 0xFFFFFFFF) // NoLeaderEpoch
	}
	binary.LittleEndian.PutUint64(b[offBaseOffset:], 0)
	binary.LittleEndian.PutUint32(b[offLength:], uint32(len(b)-LogOverhead))
	b[offMagic] = magic
	binary.LittleEndian.PutUint64(b[offCommitTimestamp:], 0)
	binary.LittleEndian.PutUint16(b[l.schemaID:], uint16(h.SchemaID))
	b[l.attributes] = 0
	if h.AppendOnly {
		b[l.attributes] = AppendOnlyFlag
	}
	binary.LittleEndian.PutUint32(b[l.lastOffsetDelta:], uint32(max(h.RecordCount-1, 0)))
	binary.LittleEndian.PutUint64(b[l.writerID:], uint64(h.WriterID))
	binary.LittleEndian.PutUint32(b[l.batchSeq:], uint32(h.BatchSequence))
	binary.LittleEndian.PutUint32(b[l.recordCount:], uint32(h.RecordCount))
	binary.LittleEndian.PutUint32(b[l.crc:], crc32.Checksum(b[l.schemaID:], crcTable))
}
