package record

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
)

// KV record batch (PutKvRequest bucket `records`): one batch per bucket.
//
//	0  int32  Length = total size - 4
//	4  int8   Magic = 0
//	5  uint32 CRC-32C over bytes [9, end)
//	9  int16  SchemaID of the value rows
//	11 int8   Attributes (0, unused)
//	12 int64  WriterID (-1 if none)
//	20 int32  BatchSequence (-1 if none)
//	24 int32  RecordCount
//	28 ...    records: int32 size | uvarint key length | key | row
//
// A record's size counts the bytes after its size field. The row is whatever remains after
// the key; no remaining bytes means the record deletes the key.

// KV batch constants.
const (
	KvMagicV0    = 0
	KvOverhead   = 4  // the Length field
	KvHeaderSize = 28 // fixed header, records follow
)

const (
	kvOffLength      = 0
	kvOffMagic       = 4
	kvOffCRC         = 5
	kvOffSchemaID    = 9
	kvOffAttributes  = 11
	kvOffWriterID    = 12
	kvOffBatchSeq    = 20
	kvOffRecordCount = 24
)

// maxUvarint32Len is the longest unsigned varint for a 32-bit value.
const maxUvarint32Len = 5

// KvHeader holds the fields a writer chooses for a KV batch. RecordCount is derived from the
// records appended.
type KvHeader struct {
	SchemaID      int16
	WriterID      int64
	BatchSequence int32
}

// KvRecord is one key/row pair of a KV batch. A nil or empty Row is a delete of Key.
type KvRecord struct {
	Key []byte
	Row []byte
}

// KvBatch is a view over one KV record batch. It aliases the underlying bytes. Its accessors
// need at least KvHeaderSize bytes; ParseKvBatch guarantees that and more.
type KvBatch []byte

// ParseKvBatch checks buf as a complete KV batch (see KvBatch.Validate) and returns it as a view.
func ParseKvBatch(buf []byte) (KvBatch, error) {
	b := KvBatch(buf)
	if err := b.Validate(); err != nil {
		return nil, err
	}
	return b, nil
}

// Validate checks that b is exactly one well-formed KV batch: Length matches len(b), the magic
// is known, the CRC matches and the records section holds exactly RecordCount well-formed
// records. Java's server checks none of this (it does not verify KV CRCs), but both official
// clients write valid batches, so a failure means the request was mangled.
func (b KvBatch) Validate() error {
	if len(b) < KvHeaderSize {
		return fmt.Errorf("kv batch: %w: %d bytes", ErrShortBatch, len(b))
	}
	if n := int(b.Length()) + KvOverhead; n != len(b) {
		return fmt.Errorf("kv batch: %w: length field says %d bytes, have %d", ErrBadLength, n, len(b))
	}
	if m := b.Magic(); m != KvMagicV0 {
		return fmt.Errorf("kv batch: %w %d", ErrBadMagic, m)
	}
	want := b.CRC()
	if got := crc32.Checksum(b[kvOffSchemaID:], crcTable); got != want {
		return fmt.Errorf("kv batch: %w: stored %08x, computed %08x", ErrCRCMismatch, want, got)
	}
	it := b.Records()
	for {
		if _, _, ok := it.Next(); !ok {
			if err := it.Err(); err != nil {
				return fmt.Errorf("kv batch: %w", err)
			}
			return nil
		}
	}
}

// Length returns the Length field: the batch size minus KvOverhead.
func (b KvBatch) Length() int32 { return int32(binary.LittleEndian.Uint32(b[kvOffLength:])) }

// Magic returns the magic byte (KvMagicV0 is the only one defined).
func (b KvBatch) Magic() byte { return b[kvOffMagic] }

// CRC returns the stored checksum.
func (b KvBatch) CRC() uint32 { return binary.LittleEndian.Uint32(b[kvOffCRC:]) }

// SchemaID returns the id of the schema the value rows were written with.
func (b KvBatch) SchemaID() int16 { return int16(binary.LittleEndian.Uint16(b[kvOffSchemaID:])) }

// Attributes returns the attributes byte (0; no bit is defined).
func (b KvBatch) Attributes() byte { return b[kvOffAttributes] }

// WriterID returns the idempotent writer id, or NoWriterID.
func (b KvBatch) WriterID() int64 { return int64(binary.LittleEndian.Uint64(b[kvOffWriterID:])) }

// BatchSequence returns the writer's per-bucket sequence number, or NoBatchSequence.
func (b KvBatch) BatchSequence() int32 {
	return int32(binary.LittleEndian.Uint32(b[kvOffBatchSeq:]))
}

// RecordCount returns the number of records the header declares.
func (b KvBatch) RecordCount() int32 {
	return int32(binary.LittleEndian.Uint32(b[kvOffRecordCount:]))
}

// Records returns an iterator over the batch's records.
func (b KvBatch) Records() KvReader {
	r := KvReader{rest: b[KvHeaderSize:], left: b.RecordCount()}
	if r.left < 0 {
		r.err = fmt.Errorf("%w: %d", ErrRecordCount, r.left)
	}
	return r
}

// KvReader iterates over the records of a KV batch without allocating.
//
// Invariant: rest starts at the next unread record and left records remain to be read.
type KvReader struct {
	rest []byte
	left int32
	off  int
	err  error
}

// Next returns the next record's key and row, both aliasing the batch. row is nil for a
// delete. It returns ok=false after the last record or at the first malformed one; Err
// tells which.
func (r *KvReader) Next() (key, row []byte, ok bool) {
	if r.err != nil {
		return nil, nil, false
	}
	if r.left == 0 {
		if len(r.rest) != 0 {
			r.err = fmt.Errorf("%w: %d bytes after the last kv record", ErrTrailingBytes, len(r.rest))
		}
		return nil, nil, false
	}
	if len(r.rest) < 4 {
		return r.fail("size field needs 4 bytes, have %d", len(r.rest))
	}
	size := int64(int32(binary.LittleEndian.Uint32(r.rest)))
	if size < 1 || size > int64(len(r.rest)-4) {
		return r.fail("record size %d with %d bytes left", size, len(r.rest)-4)
	}
	rec := r.rest[4 : 4+size]
	klen, n := uvarint32(rec)
	if n <= 0 {
		return r.fail("bad key length varint")
	}
	if uint64(klen) > uint64(len(rec)-n) {
		return r.fail("key length %d with %d bytes left in the record", klen, len(rec)-n)
	}
	kend := n + int(klen)
	key = rec[n:kend:kend]
	if kend < len(rec) {
		row = rec[kend:len(rec):len(rec)]
	}
	r.rest = r.rest[4+size:]
	r.off += 4 + int(size)
	r.left--
	return key, row, true
}

func (r *KvReader) fail(format string, args ...any) ([]byte, []byte, bool) {
	r.err = fmt.Errorf("kv record at byte %d: %w: %s", KvHeaderSize+r.off, ErrBadRecord,
		fmt.Sprintf(format, args...))
	return nil, nil, false
}

// Err returns why iteration stopped early, or nil when every declared record was read and
// nothing followed them. Call it after Next returns ok=false.
func (r *KvReader) Err() error { return r.err }

// uvarint32 decodes an unsigned varint of at most five bytes (seven bits per byte, low
// first, high bit = more). It returns n <= 0 for a truncated, over-long or non-minimal
// encoding: Java re-derives the varint's width from the decoded value, so a padded encoding
// would make it read the key from the wrong place.
func uvarint32(b []byte) (v uint32, n int) {
	var x uint64
	for i := 0; i < maxUvarint32Len && i < len(b); i++ {
		c := b[i]
		x |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			if (i > 0 && c == 0) || x > 0xFFFFFFFF {
				return 0, -1
			}
			return uint32(x), i + 1
		}
	}
	return 0, -1
}

// appendUvarint32 appends v as an unsigned varint.
func appendUvarint32(dst []byte, v uint32) []byte {
	for v >= 0x80 {
		dst = append(dst, byte(v)|0x80)
		v >>= 7
	}
	return append(dst, byte(v))
}

// uvarint32Size returns the encoded width of v.
func uvarint32Size(v uint32) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

// KvRecordSize returns the encoded size of a record with the given key and row.
func KvRecordSize(key, row []byte) int {
	return 4 + uvarint32Size(uint32(len(key))) + len(key) + len(row)
}

// AppendKvRecord appends one KV record to dst; an empty row encodes a delete.
func AppendKvRecord(dst, key, row []byte) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, uint32(uvarint32Size(uint32(len(key)))+len(key)+len(row)))
	dst = appendUvarint32(dst, uint32(len(key)))
	dst = append(dst, key...)
	return append(dst, row...)
}

// AppendKvBatch appends a complete KV batch holding records to dst and returns the extended
// buffer. A record with an empty Row is written as a delete.
func AppendKvBatch(dst []byte, h KvHeader, records ...KvRecord) []byte {
	dst, start := BeginKvBatch(dst)
	for _, rec := range records {
		dst = AppendKvRecord(dst, rec.Key, rec.Row)
	}
	// The batch is at least KvHeaderSize bytes, so FinishKvBatch cannot fail.
	_ = FinishKvBatch(dst[start:], h, int32(len(records)))
	return dst
}

// BeginKvBatch reserves room for a KV header at the end of dst and returns the extended
// buffer and the batch's start. Append records with AppendKvRecord, then call
// FinishKvBatch(dst[start:], h, count).
func BeginKvBatch(dst []byte) (out []byte, start int) {
	start = len(dst)
	return append(dst, make([]byte, KvHeaderSize)...), start
}

// FinishKvBatch fills in the header of batch, which must be exactly the bytes from a
// BeginKvBatch start to the end of the records, and computes Length and the CRC.
func FinishKvBatch(batch []byte, h KvHeader, count int32) error {
	if len(batch) < KvHeaderSize {
		return fmt.Errorf("kv batch: %w: %d bytes", ErrShortBatch, len(batch))
	}
	binary.LittleEndian.PutUint32(batch[kvOffLength:], uint32(len(batch)-KvOverhead))
	batch[kvOffMagic] = KvMagicV0
	binary.LittleEndian.PutUint16(batch[kvOffSchemaID:], uint16(h.SchemaID))
	batch[kvOffAttributes] = 0
	binary.LittleEndian.PutUint64(batch[kvOffWriterID:], uint64(h.WriterID))
	binary.LittleEndian.PutUint32(batch[kvOffBatchSeq:], uint32(h.BatchSequence))
	binary.LittleEndian.PutUint32(batch[kvOffRecordCount:], uint32(count))
	binary.LittleEndian.PutUint32(batch[kvOffCRC:], crc32.Checksum(batch[kvOffSchemaID:], crcTable))
	return nil
}
