package record

import "github.com/stromdb/strom/internal/ferr"

// corrupt returns a sentinel that errors.Is can match and that ferr.CodeOf maps to
// CORRUPT_RECORD_EXCEPTION (14), the code a Java server sends for a malformed batch.
func corrupt(msg string) error {
	return &ferr.Error{Code: ferr.CorruptRecordException, Message: msg}
}

// Errors returned by the decoders in this package. All of them carry
// ferr.CorruptRecordException; decoders wrap them with detail via fmt.Errorf("%w").
var (
	ErrShortBatch  = corrupt("record: batch shorter than its header")
	ErrBadMagic    = corrupt("record: unknown batch magic")
	ErrBadLength   = corrupt("record: batch length field disagrees with the data")
	ErrCRCMismatch = corrupt("record: batch CRC mismatch")
	ErrRecordCount = corrupt("record: negative record count or inconsistent last offset delta")

	// ErrTrailingBytes reports bytes after the last complete batch of a payload, or after the
	// last record of a batch.
	ErrTrailingBytes = corrupt("record: trailing bytes after the last batch or record")
	// ErrBadRecord reports a malformed record inside a batch (size, key length, change type).
	ErrBadRecord = corrupt("record: malformed record")
	// ErrBadStatistics reports a V1/V2 statistics block whose fields overrun it.
	ErrBadStatistics = corrupt("record: malformed statistics block")
)
