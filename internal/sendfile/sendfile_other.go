//go:build !linux

package sendfile

import (
	"io"
	"os"
)

// Send never handles anything on this platform: the caller copies.
func Send(io.Writer, *os.File, int64, int64) (int64, bool, error) { return 0, false, nil }

// Supported is false on this platform.
func Supported(io.Writer) bool { return false }
