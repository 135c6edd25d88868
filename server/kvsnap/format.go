package kvsnap

import "github.com/stromdb/strom/internal/formatver"

// SnapshotFormat is the format of a KV snapshot: its etcd record (Snapshot, whose
// format_version member carries the version) and the Pebble files and MANIFEST it names.
// docs/durability.md, "Versioned formats".
var SnapshotFormat = formatver.Format{Name: "strom-kv-snapshot", Current: 1, Supported: []int{1}}
