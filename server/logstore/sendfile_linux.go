//go:build linux

package logstore

import (
	"io"
	"os"
	"syscall"
)

// sendFile copies [pos, pos+n) of f to w with sendfile(2) when w is a socket, pipe or file
// (anything exposing syscall.Conn). It passes the offset explicitly, so the shared file
// position is never touched and concurrent readers of one descriptor do not interfere.
// handled is false when sendfile cannot be used at all; the caller then copies.
func sendFile(w io.Writer, f *os.File, pos, n int64) (written int64, handled bool, err error) {
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
				m, e := syscall.Sendfile(int(out), int(in), &off, int(min(n-written, 1<<30)))
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
					serr = io.ErrUnexpectedEOF
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
