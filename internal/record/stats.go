package record

import (
	"encoding/binary"
	"fmt"
)

// V1/V2 statistics block, the StatisticsLength bytes between the header and the records:
//
//	int8       version (1)
//	int16      N, the number of columns with statistics
//	int16 × N  column index in the table's row type
//	int32 × N  null count per listed column
//	int32      M, then M bytes: min values as an AlignedRow of N fields (M = 0: absent)
//	int32      X, then X bytes: max values as an AlignedRow
//
// Java only reads it for filter push-down and ignores a block it cannot parse, so a bad
// block never makes a batch invalid; ParseStatistics reports it so the caller can ignore it too.

// StatisticsVersion is the only statistics block version defined.
const StatisticsVersion = 1

// Statistics is a parsed view over a statistics block. It aliases the block.
type Statistics struct {
	raw          []byte
	n            int // columns
	minOff, minN int // min-values row
	maxOff, maxN int // max-values row
}

// ParseStatistics checks the structure of a statistics block: a known version, a positive
// column count, and every array and length-prefixed row inside the block. Bytes after the
// max-values row are tolerated (Size reports where the block's content ends).
func ParseStatistics(block []byte) (Statistics, error) {
	if len(block) < 3 {
		return Statistics{}, fmt.Errorf("%w: %d bytes", ErrBadStatistics, len(block))
	}
	if v := block[0]; v != StatisticsVersion {
		return Statistics{}, fmt.Errorf("%w: version %d", ErrBadStatistics, v)
	}
	n := int(int16(binary.LittleEndian.Uint16(block[1:])))
	if n <= 0 {
		return Statistics{}, fmt.Errorf("%w: column count %d", ErrBadStatistics, n)
	}
	s := Statistics{raw: block, n: n}
	pos := 3 + 6*n // indexes and null counts
	var err error
	if s.minOff, s.minN, pos, err = sizedField(block, pos); err != nil {
		return Statistics{}, fmt.Errorf("min values: %w", err)
	}
	if s.maxOff, s.maxN, _, err = sizedField(block, pos); err != nil {
		return Statistics{}, fmt.Errorf("max values: %w", err)
	}
	return s, nil
}

// sizedField reads an int32 length at pos and checks that many bytes follow it in block.
func sizedField(block []byte, pos int) (off, n, next int, err error) {
	if pos > len(block)-4 {
		return 0, 0, 0, fmt.Errorf("%w: length field at %d of %d bytes", ErrBadStatistics, pos, len(block))
	}
	n = int(int32(binary.LittleEndian.Uint32(block[pos:])))
	off = pos + 4
	if n < 0 || n > len(block)-off {
		return 0, 0, 0, fmt.Errorf("%w: %d bytes at %d of %d", ErrBadStatistics, n, off, len(block))
	}
	return off, n, off + n, nil
}

// ColumnCount returns N, the number of columns with statistics.
func (s Statistics) ColumnCount() int { return s.n }

// ColumnIndex returns the table column index of statistics position i (0 <= i < N).
func (s Statistics) ColumnIndex(i int) int16 {
	return int16(binary.LittleEndian.Uint16(s.raw[3+2*i:]))
}

// NullCount returns the null count of statistics position i (0 <= i < N).
func (s Statistics) NullCount(i int) int32 {
	return int32(binary.LittleEndian.Uint32(s.raw[3+2*s.n+4*i:]))
}

// MinValues returns the min-values AlignedRow bytes, nil when absent.
func (s Statistics) MinValues() []byte {
	if s.minN == 0 {
		return nil
	}
	return s.raw[s.minOff : s.minOff+s.minN : s.minOff+s.minN]
}

// MaxValues returns the max-values AlignedRow bytes, nil when absent.
func (s Statistics) MaxValues() []byte {
	if s.maxN == 0 {
		return nil
	}
	return s.raw[s.maxOff : s.maxOff+s.maxN : s.maxOff+s.maxN]
}

// Size returns the number of bytes the block's content occupies.
func (s Statistics) Size() int { return s.maxOff + s.maxN }

// AppendStatistics appends a statistics block to dst: nullCounts[i] and the column index
// columns[i] describe position i; minRow and maxRow are AlignedRows of len(columns) fields
// (empty = absent). It is meant for tests and clients that write V1 batches; it returns an
// error when the lists disagree or are empty.
func AppendStatistics(dst []byte, columns []int16, nullCounts []int32, minRow, maxRow []byte) ([]byte, error) {
	if len(columns) == 0 || len(columns) > 0x7FFF || len(columns) != len(nullCounts) {
		return dst, fmt.Errorf("record: statistics need 1..32767 columns with one null count each, got %d and %d",
			len(columns), len(nullCounts))
	}
	dst = append(dst, StatisticsVersion)
	dst = binary.LittleEndian.AppendUint16(dst, uint16(len(columns)))
	for _, c := range columns {
		dst = binary.LittleEndian.AppendUint16(dst, uint16(c))
	}
	for _, c := range nullCounts {
		dst = binary.LittleEndian.AppendUint32(dst, uint32(c))
	}
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(minRow)))
	dst = append(dst, minRow...)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(maxRow)))
	return append(dst, maxRow...), nil
}
