// Package sendfile copies byte ranges of open files to sockets inside the kernel, with
// sendfile(2) on Linux, so that data served from disk (FETCH_LOG's record batches) never
// passes through user space.
//
// It passes the file offset explicitly on every call: the shared seek position of the
// descriptor is never read or moved, so any number of goroutines may send from one *os.File
// at once (as Go's own net.TCPConn.ReadFrom(*os.File) would not allow: it uses the file's
// position). The destination's deadlines are honoured, since the wait for a writable socket
// goes through the Go runtime's poller.
//
// Where sendfile cannot be used — a destination that is not a socket, pipe or file descriptor
// (a TLS connection, an in-memory pipe), or a platform without it — Send reports that it did
// nothing and the caller copies instead; Copy does exactly that through a bounded buffer.
package sendfile
