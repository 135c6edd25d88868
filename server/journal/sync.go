package journal

import (
	"os"
	"syscall"

	"github.com/stromdb/strom/internal/faultfs"
	"github.com/stromdb/strom/server/diskwatch"
)

// fdatasync forces f's data (and the metadata needed to read it, such as its size) to disk.
// Fault injection (internal/faultfs) and the slow-sync watch (server/diskwatch) see it like a
// segment sync.
func fdatasync(f *os.File) error {
	defer diskwatch.BeginSync(f.Name())()
	if err := faultfs.Before(faultfs.Sync, f.Name()); err != nil {
		return err
	}
	for {
		err := syscall.Fdatasync(int(f.Fd()))
		if err != syscall.EINTR {
			return err
		}
	}
}
