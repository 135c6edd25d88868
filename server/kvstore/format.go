package kvstore

import (
	"fmt"
	"os"

	"github.com/stromdb/strom/internal/formatver"
)

// DirFormat is the format of the KV store's directory: Strom's key layout and row
// encodings inside the Pebble database (Pebble versions its own files with its format
// major version). Open refuses a directory of a version this binary does not read before
// Pebble opens it; docs/durability.md, "Versioned formats".
var DirFormat = formatver.Format{Name: "strom-kv", Current: 1, Supported: []int{1}}

// checkDirFormat checks (and on first use records) the format version of dir, creating dir
// when it does not exist yet.
func checkDirFormat(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("kvstore: open %s: %w", dir, err)
	}
	if _, err := formatver.OpenDir(dir, DirFormat); err != nil {
		return fmt.Errorf("kvstore: open %s: %w", dir, err)
	}
	return nil
}
