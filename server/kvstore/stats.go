package kvstore

import "github.com/cockroachdb/pebble"

// Metrics returns Pebble's metrics of the store (flushes, compactions, levels, caches).
func (s *Store) Metrics() *pebble.Metrics { return s.db.Metrics() }

// DiskUsage estimates the bytes on disk taken by the tablet's rows (sstables only; rows
// still in the memtable are not counted).
func (t *Tablet) DiskUsage() (uint64, error) {
	return t.store.db.EstimateDiskUsage(t.prefix, t.hi)
}
