package kvsnap

import (
	"context"
	"fmt"
	"os"

	"github.com/stromdb/strom/server/cluster"
	"github.com/stromdb/strom/server/kvstore"
)

// Rows iterates the rows of one snapshot in key order, read from its files (the merge of its
// tables that RocksDB would make): Key is the primary key as LOOKUP encodes it, Value the
// stored value. A replica that bootstraps from a snapshot loads them into its own state
// (kvstore.Store.LoadBucket).
type Rows struct {
	st  *state
	dir string // the local copy of the tables, removed by Close
	// Snapshot is the snapshot read; its LogOffset is the first changelog offset the rows do
	// not reflect.
	Snapshot *Snapshot
}

// Valid reports whether the iterator is at a row.
func (r *Rows) Valid() bool { return r.st.valid() }

// Key is the current row's key, valid until Next.
func (r *Rows) Key() []byte { return r.st.key }

// Value is the current row's value, valid until Next.
func (r *Rows) Value() []byte { return r.st.value }

// Next moves to the next row.
func (r *Rows) Next() { r.st.next() }

// Err is the first read error met, if any (the iteration then ends).
func (r *Rows) Err() error { return r.st.err }

// Close releases the files and removes the local copy.
func (r *Rows) Close() error {
	r.st.close()
	return os.RemoveAll(r.dir)
}

// OpenLatest opens the rows of b's newest snapshot as the metadata store has it now (not the
// view, which may trail it). ok is false when b has no snapshot.
func (m *Manager) OpenLatest(ctx context.Context, b cluster.Bucket) (_ *Rows, ok bool, _ error) {
	ss, err := m.listBucket(ctx, b)
	if err != nil {
		return nil, false, fmt.Errorf("kvsnap: list snapshots of %s: %w", b, err)
	}
	if len(ss) == 0 {
		return nil, false, nil
	}
	s := ss[len(ss)-1]
	// The tables are downloaded to local disk (the sstable reader reads at offsets), into a
	// directory of this read's own.
	dir, err := os.MkdirTemp(m.opts.LocalDir, "read-")
	if err != nil {
		return nil, false, fmt.Errorf("kvsnap: %w", err)
	}
	if err := fetchTables(ctx, m.opts.Remote.Bucket, b, s.Tables, dir); err != nil {
		os.RemoveAll(dir)
		return nil, false, fmt.Errorf("kvsnap: read snapshot %d of %s from %s: %w", s.ID, b, m.opts.Remote.Root(), err)
	}
	st, err := openState(dir, s)
	if err != nil {
		os.RemoveAll(dir)
		return nil, false, fmt.Errorf("kvsnap: open snapshot %d of %s: %w", s.ID, b, err)
	}
	return &Rows{st: st, Snapshot: s, dir: dir}, true, nil
}

// OpenLatestState is OpenLatest in the shape a tablet server's replica bootstrap takes
// (tablet.SnapshotSource).
func (m *Manager) OpenLatestState(ctx context.Context, b cluster.Bucket) (kvstore.SnapshotRows, int64, bool, error) {
	r, ok, err := m.OpenLatest(ctx, b)
	if err != nil || !ok {
		return nil, 0, ok, err
	}
	return r, r.Snapshot.LogOffset, true, nil
}
