//go:build !linux

package logstore

import (
	"io"
	"os"
)

func sendFile(io.Writer, *os.File, int64, int64) (int64, bool, error) { return 0, false, nil }
