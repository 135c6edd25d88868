package logstore

import (
	"fmt"

	"github.com/stromdb/strom/internal/formatver"
)

// DirFormat is the format of a bucket's log directory: its segment files (Fluss record
// batches), their offset and time indexes and the sidecar files next to them (leader
// epochs, high watermark, writer state, batch statistics, tier snapshots, markers). One
// version covers the whole directory; docs/durability.md, "Versioned formats" lists its
// files. Open refuses a directory of a version this binary does not read before it touches
// any file in it.
var DirFormat = formatver.Format{Name: "strom-log", Current: 1, Supported: []int{1}}

// checkDirFormat checks (and on first use records) the format version of dir.
func checkDirFormat(dir string) error {
	if _, err := formatver.OpenDir(dir, DirFormat); err != nil {
		return fmt.Errorf("logstore: open %s: %w", dir, err)
	}
	return nil
}
