package logstore

import (
	"errors"
	"fmt"

	"github.com/stromdb/strom/internal/ferr"
)

// ErrClosed is returned by every operation on a closed Log.
var ErrClosed = errors.New("logstore: log closed")

// storageErr wraps an I/O or consistency failure while reading segment s as
// LOG_STORAGE_EXCEPTION, keeping the cause for errors.Is.
func storageErr(s *segment, err error) error {
	return fmt.Errorf("%w: %w", ferr.New(ferr.LogStorageException, "segment %d of %s", s.base, s.dir), err)
}

func outOfRange(offset, start, end int64) error {
	return ferr.New(ferr.LogOffsetOutOfRangeException,
		"offset %d is out of range [%d, %d]", offset, start, end)
}
