// Package arrowlog implements the ARROW records section of a Fluss log batch: the optional
// change-type vector followed by exactly one Arrow IPC RecordBatch message (continuation
// marker, metadata length, flatbuffer, body), with Arrow per-buffer body compression (ZSTD or
// LZ4_FRAME). There is never a Schema message on the wire: both sides derive the Arrow schema
// from the Fluss row type of the batch's schema id (ArrowSchema).
//
// The package offers:
//   - ArrowSchema: the Fluss → Arrow type mapping used by the official clients;
//   - Decode / Encode / AppendBatch: records section ↔ arrow.Record;
//   - RowsToRecord / RecordToRows: row.Datum rows ↔ arrow.Record;
//   - Project: server-side projection push-down on a stored batch, at the IPC buffer level
//     (no decompression), as Fluss's FileLogProjection does.
//
// Every decoder returns an error carrying ferr.CorruptRecordException on malformed input and
// never panics; arrow-go is only handed buffers that were bounds-checked first.
package arrowlog
