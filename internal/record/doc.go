// Package record implements the byte formats that travel inside the `records` fields of the
// Fluss RPCs. Every Fluss-defined integer is little-endian and every checksum is CRC-32C
// (Castagnoli).
//
// # Log record batches (PRODUCE_LOG, FETCH_LOG, log segments)
//
// A records payload is a plain concatenation of batches with no outer framing. Each batch
// starts with BaseOffset (int64) and Length (int32, the number of bytes that follow the Length
// field), so a batch occupies Length+LogOverhead bytes, then a magic byte that selects the
// header layout:
//
//   - V0, 48-byte header: CommitTimestamp, CRC, SchemaID, Attributes, LastOffsetDelta,
//     WriterID, BatchSequence, RecordCount. This is what every official client writes by
//     default and the only layout the Rust client (and so pyfluss) can read.
//   - V1, 52-byte header: V0 plus StatisticsLength; a statistics block of that many bytes
//     sits between the header and the records. Java writes it for tables with
//     table.statistics.columns set.
//   - V2, 56-byte header: V1 with a LeaderEpoch int32 inserted after CommitTimestamp, so
//     every later field moves by four bytes. Nothing writes it today.
//
// The CRC covers everything from SchemaID to the end of the batch. BaseOffset,
// CommitTimestamp (and the V2 leader epoch) are outside it, which is what lets the log assign
// them in place without touching the checksum. LastOffsetDelta is RecordCount-1, or 0 for an
// empty batch, so even an empty batch occupies one offset.
//
// The records section depends on the table's log format. ARROW: when the append-only
// attribute bit is clear, one change-type byte per record, then one Arrow IPC record batch
// message. INDEXED and COMPACTED: RecordCount row records, each an int32 size, a change-type
// byte and the row bytes (size counts the change-type byte and the row).
//
// # KV record batches (PUT_KV)
//
// A PUT_KV bucket carries exactly one KV batch: a 28-byte header (Length, magic 0, CRC over
// everything after the CRC field, SchemaID, Attributes, WriterID, BatchSequence, RecordCount)
// followed by records of the form int32 size, unsigned-varint key length, key, row. A record
// whose size leaves no bytes after the key is a delete of that key.
//
// # Conventions in this package
//
// Readers alias their input and never copy; appenders append to a caller-owned buffer. Views
// such as Batch and KvBatch index their bytes directly: their accessors assume the view passed
// the shape check of Iterate, ParseKvBatch or Validate and may panic on shorter input. Every
// decoding error wraps one of the Err* sentinels below, each of which is a *ferr.Error with code
// CORRUPT_RECORD_EXCEPTION, so ferr.CodeOf maps it to the code a Java server would send.
package record
