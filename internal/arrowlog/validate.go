package arrowlog

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/stromdb/strom/internal/record"
)

// Validate checks the records section of an ARROW log batch the way Decode reads it, without
// keeping the result: the change-type vector, the IPC message structure (continuation marker,
// flatbuffer metadata, every buffer inside the body), a row count equal to recordCount, one
// field node and the right number of buffers per column of schema, and every validity
// bitmap, offsets buffer and values buffer large enough for its node. Compressed buffers are
// decompressed to check their sizes. A batch that passes can be decoded by every later scan.
//
// Uncompressed buffers are only aliased, so the cost is proportional to the metadata plus
// the offsets buffers; compressed batches cost one decompression. Errors carry
// ferr.CorruptRecordException.
func Validate(schema *arrow.Schema, appendOnly bool, recordCount int, records []byte) error {
	_, rec, err := Decode(schema, appendOnly, recordCount, records, memory.DefaultAllocator)
	if err != nil {
		return err
	}
	rec.Release()
	return nil
}

// ValidateBatch checks the records section of a complete ARROW log batch (its header already
// validated, see record.Batch.Validate) against schema, the Arrow schema of the batch's
// schema id: the record count in the header must be the Arrow body's row count and the body
// must decode (Validate).
func ValidateBatch(schema *arrow.Schema, b record.Batch) error {
	return Validate(schema, b.AppendOnly(), int(b.RecordCount()), b.Records())
}
