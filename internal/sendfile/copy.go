package sendfile

import (
	"fmt"
	"io"
	"os"
	"sync"
)

// copyBufferSize is the buffer Copy reads through: what one fallback copy holds in memory,
// whatever the size of the range.
const copyBufferSize = 64 << 10

// Copy writes [pos, pos+n) of f to w through a buffer of copyBufferSize bytes, using
// positional reads only. A file that ends before pos+n gives io.ErrUnexpectedEOF.
func Copy(w io.Writer, f *os.File, pos, n int64) (int64, error) {
	if n <= 0 {
		return 0, nil
	}
	// onlyWriter hides w's ReadFrom, so that the copy cannot fall into a ReaderFrom that
	// reads the whole range into memory or uses the file's shared seek position.
	buf := copyBuffers.Get().(*[copyBufferSize]byte)
	defer copyBuffers.Put(buf)
	written, err := io.CopyBuffer(onlyWriter{w}, io.NewSectionReader(f, pos, n), buf[:min(n, copyBufferSize)])
	if err == nil && written < n {
		err = fmt.Errorf("sendfile: %s ends before byte %d: %w", f.Name(), pos+n, io.ErrUnexpectedEOF)
	}
	return written, err
}

// copyBuffers holds Copy's buffers between calls. A connection that cannot use sendfile(2)
// (TLS between the servers: every follower fetch) copies each file range of every response,
// and a fresh 64 KiB buffer per range was a measurable share of a TLS leader's CPU
// (allocation, zeroing and the collector; docs/security.md, "What the TLS costs"). An
// io.Writer must not retain the slice it is given, so a buffer is free again once Copy
// returns.
var copyBuffers = sync.Pool{New: func() any { return new([copyBufferSize]byte) }}

type onlyWriter struct{ io.Writer }
