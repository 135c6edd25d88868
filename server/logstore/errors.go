package logstore

import (
	"fmt"

	"github.com/stromdb/strom/internal/ferr"
)

// ErrClosed is returned by every operation on a closed Log. A log is closed when its bucket
// is dropped or the server stops, so clients see UNKNOWN_TABLE_OR_BUCKET_EXCEPTION, which
// makes them refresh metadata and retry.
var ErrClosed error = ferr.New(ferr.UnknownTableOrBucketException, "the bucket's log is closed (bucket dropped or server stopping)")

// storageErr wraps an I/O or consistency failure while reading segment s as
// LOG_STORAGE_EXCEPTION, keeping the cause for errors.Is.
func storageErr(s *segment, err error) error {
	return fmt.Errorf("%w: %w", ferr.New(ferr.LogStorageException, "segment %d of %s", s.base, s.dir), err)
}

func outOfRange(offset, start, end int64) error {
	return ferr.New(ferr.LogOffsetOutOfRangeException,
		"offset %d is out of range [%d, %d]", offset, start, end)
}
