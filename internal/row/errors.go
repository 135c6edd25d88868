package row

import (
	"errors"
	"fmt"

	"github.com/stromdb/strom/internal/ferr"
)

// ErrInvalidValue is wrapped by encoder errors: a Datum that does not fit its declared type
// (NULL in a NOT NULL field, an INT out of range, an unsupported type root, ...).
var ErrInvalidValue = errors.New("row: invalid value")

// corruptf returns a decoding error. It carries CORRUPT_RECORD_EXCEPTION so that the server can
// hand it to a client unchanged; callers add context with %w.
func corruptf(format string, args ...any) error {
	return ferr.New(ferr.CorruptRecordException, "row: "+format, args...)
}

// invalidf returns an encoding error wrapping ErrInvalidValue.
func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalidValue}, args...)...)
}

// errTruncated is the common decoding failure: the buffer ends inside a value.
func errTruncated(what string, need, have int) error {
	return corruptf("%s needs %d bytes, %d left", what, need, have)
}
