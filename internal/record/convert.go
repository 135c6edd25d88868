package record

import (
	"encoding/binary"
	"hash/crc32"
)

// AppendAsV0 appends a V0 copy of b to dst: the statistics block and the V2 leader epoch are
// dropped, every other header field (BaseOffset and CommitTimestamp included) and the records
// section are kept, and the CRC is recomputed because it covered the statistics. A V0 batch is
// appended unchanged.
//
// Why: the Rust client (and so pyfluss) reads every batch with the V0 layout regardless of
// its magic, so it cannot read a V1 batch that a Java writer produced for a table with
// table.statistics.columns. A server that chooses to down-convert on fetch for such clients
// would call this per batch; Java's server does not down-convert. The copy costs one pass over
// the batch for the CRC.
//
// b must be complete and in shape (as Iterate yields or Validate accepts); its own CRC is not
// checked here, so validate first if the source is untrusted.
func AppendAsV0(dst []byte, b Batch) ([]byte, error) {
	if err := b.checkShape(); err != nil {
		return dst, err
	}
	if b.Magic() == MagicV0 {
		return append(dst, b...), nil
	}
	l := b.layout()
	recs := b.Records()
	start := len(dst)
	dst = append(dst, make([]byte, HeaderSizeV0)...)
	dst = append(dst, recs...)
	out := dst[start:]
	copy(out[:offCommitTimestamp+8], b[:offCommitTimestamp+8]) // BaseOffset, Length, Magic, CommitTimestamp
	binary.LittleEndian.PutUint32(out[offLength:], uint32(len(out)-LogOverhead))
	out[offMagic] = MagicV0
	// SchemaID through RecordCount are contiguous and keep their order in every layout.
	copy(out[layoutV0.schemaID:HeaderSizeV0], b[l.schemaID:l.recordCount+4])
	binary.LittleEndian.PutUint32(out[layoutV0.crc:], crc32.Checksum(out[layoutV0.schemaID:], crcTable))
	return dst, nil
}
