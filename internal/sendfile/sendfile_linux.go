//go:build linux

package sendfile

import (
	"io"
	"os"
	"syscall"
)

// maxChunk bounds one sendfile(2) call (Linux sends at most 0x7ffff000 bytes per call anyway).
const maxChunk = 1 << 30

// Send copies [pos, pos+n) of f to w with sendfile(2) when w exposes a file descriptor
// (syscall.Conn: TCP and Unix sockets, pipes, files). handled is false when sendfile cannot be
// used at all and nothing was written; the caller then copies. With handled true, written is
// what reached w; an error after a partial send leaves w mid-stream.
func Send(w io.Writer, f *os.File, pos, n int64) (written int64, handled bool, err error) {
	sc, ok := w.(syscall.Conn)
	if !ok {
		return 0, false, nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return 0, false, nil
	}
	src, err := f.SyscallConn()
	if err != nil {
		return 0, false, nil
	}
	var serr error
	unsupported := false
	cerr := src.Read(func(in uintptr) bool {
		werr := rc.Write(func(out uintptr) bool {
			for written < n {
				off := pos + written
				m, e := syscall.Sendfile(int(out), int(in), &off, int(min(n-written, maxChunk)))
				if m > 0 {
					written += int64(m)
				}
				switch {
				case e == syscall.EAGAIN:
					return false // wait until the destination is writable
				case e == syscall.EINTR:
				case (e == syscall.EINVAL || e == syscall.ENOSYS) && written == 0:
					unsupported = true
					return true
				case e != nil:
					serr = e
					return true
				case m == 0:
					serr = io.ErrUnexpectedEOF // the file ends before pos+n
					return true
				}
			}
			return true
		})
		if serr == nil {
			serr = werr
		}
		return true
	})
	if unsupported {
		return 0, false, nil
	}
	if serr == nil {
		serr = cerr
	}
	return written, true, serr
}

// Supported reports whether Send can use sendfile(2) towards w.
func Supported(w io.Writer) bool {
	_, ok := w.(syscall.Conn)
	return ok
}
