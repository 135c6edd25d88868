package record

import (
	"encoding/binary"
	"fmt"
)

// Row-based log records (log formats INDEXED and COMPACTED). Each record is
//
//	int32 size | int8 change type | row bytes
//
// where size = 1 + len(row) counts the bytes after the size field. The row is an IndexedRow
// or a CompactedRow, without a length of its own. Java clients write change type +A and set
// the append-only attribute; server changelogs clear it and write real change types.

// rowLogSizeLen and rowLogMinSize are the size field's width and the smallest size value
// (the change-type byte of an empty row).
const (
	rowLogSizeLen = 4
	rowLogMinSize = 1
)

// RowLogRecordSize returns the encoded size of a row record holding row.
func RowLogRecordSize(row []byte) int { return rowLogSizeLen + 1 + len(row) }

// AppendRowLogRecord appends one row record to dst. Together with BeginV0Batch and
// FinishV0Batch it builds an INDEXED or COMPACTED batch in place.
func AppendRowLogRecord(dst []byte, ct ChangeType, row []byte) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, uint32(1+len(row)))
	dst = append(dst, byte(ct))
	return append(dst, row...)
}

// RowLogReader iterates over the records section of an INDEXED or COMPACTED batch without
// allocating. Make one with NewRowLogReader or Batch.RowLogRecords.
//
// Invariant: rest starts at the next unread record and left records remain to be read.
type RowLogReader struct {
	rest []byte
	left int32
	off  int
	err  error
}

// NewRowLogReader returns a reader over a records section that should hold count records.
func NewRowLogReader(records []byte, count int32) RowLogReader {
	r := RowLogReader{rest: records, left: count}
	if count < 0 {
		r.err = fmt.Errorf("%w: %d", ErrRecordCount, count)
	}
	return r
}

// RowLogRecords returns a reader over the batch's row records.
func (b Batch) RowLogRecords() RowLogReader {
	return NewRowLogReader(b.Records(), b.RecordCount())
}

// Next returns the next record's change type and row bytes (aliasing the input). It returns
// ok=false after the last record or at the first malformed one; Err tells which.
func (r *RowLogReader) Next() (ct ChangeType, row []byte, ok bool) {
	if r.err != nil {
		return 0, nil, false
	}
	if r.left == 0 {
		if len(r.rest) != 0 {
			r.err = fmt.Errorf("%w: %d bytes after the last row record", ErrTrailingBytes, len(r.rest))
		}
		return 0, nil, false
	}
	if len(r.rest) < rowLogSizeLen+rowLogMinSize {
		return r.fail("record header needs 5 bytes, have %d", len(r.rest))
	}
	size := int64(int32(binary.LittleEndian.Uint32(r.rest)))
	if size < rowLogMinSize || size > int64(len(r.rest)-rowLogSizeLen) {
		return r.fail("record size %d with %d bytes left", size, len(r.rest)-rowLogSizeLen)
	}
	end := rowLogSizeLen + int(size)
	c := ChangeType(r.rest[rowLogSizeLen])
	if !c.Valid() {
		return r.fail("unknown change type %d", byte(c))
	}
	row = r.rest[rowLogSizeLen+1 : end : end]
	r.rest = r.rest[end:]
	r.off += end
	r.left--
	return c, row, true
}

func (r *RowLogReader) fail(format string, args ...any) (ChangeType, []byte, bool) {
	r.err = fmt.Errorf("row record at byte %d: %w: %s", r.off, ErrBadRecord, fmt.Sprintf(format, args...))
	return 0, nil, false
}

// Err returns why iteration stopped early, or nil when every declared record was read and
// nothing followed them. Call it after Next returns ok=false.
func (r *RowLogReader) Err() error { return r.err }

// ValidateRowLogRecords checks that records holds exactly count well-formed row records.
func ValidateRowLogRecords(records []byte, count int32) error {
	r := NewRowLogReader(records, count)
	for {
		if _, _, ok := r.Next(); !ok {
			return r.Err()
		}
	}
}

// ValidateRowBatch checks the records section of a complete INDEXED or COMPACTED log batch
// (header already validated): it must hold exactly RecordCount well-formed row records and
// nothing after them, so that the offsets the header claims are backed by rows.
func ValidateRowBatch(b Batch) error {
	return ValidateRowLogRecords(b.Records(), b.RecordCount())
}
