package arrowlog

import (
	"github.com/stromdb/strom/internal/ferr"
)

// corruptf returns a CORRUPT_RECORD_EXCEPTION error, the code a Java server sends for a batch
// it cannot read.
func corruptf(format string, args ...any) error {
	return ferr.New(ferr.CorruptRecordException, "arrow: "+format, args...)
}

// projectionf returns an INVALID_COLUMN_PROJECTION error.
func projectionf(format string, args ...any) error {
	return ferr.New(ferr.InvalidColumnProjection, format, args...)
}

// corrupt wraps a lower-level decoding error as CORRUPT_RECORD_EXCEPTION.
func corrupt(err error) error {
	return corruptf("%v", err)
}
