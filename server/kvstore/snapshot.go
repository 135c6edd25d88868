package kvstore

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble"

	"github.com/stromdb/strom/internal/ferr"
)

// StateView is a consistent, immutable view of one bucket's rows for KV snapshots
// (server/kvsnap): a Pebble snapshot, read at the applied offset stored in it. Data keys and
// the applied offset are committed in the same Pebble batch (pipeline.go, recover.go), so the
// view holds exactly the effect of the changelog below Offset: a reader that loads the view and
// then replays the changelog from Offset reaches the bucket's current state.
type StateView struct {
	snap   *pebble.Snapshot
	prefix []byte
	hi     []byte
	// Offset is the first changelog offset the view does not reflect.
	Offset int64
}

// OpenStateView returns a view of the bucket's applied state. Close it when done: it pins
// Pebble's files.
func (t *Tablet) OpenStateView() (*StateView, error) {
	if err := t.offlineError(); err != nil {
		return nil, err
	}
	if t.rebuilding.Load() {
		return nil, ferr.New(ferr.KvStorageException, "kv state of %s is being rebuilt", t.bucket)
	}
	snap := t.store.db.NewSnapshot()
	off, err := readOffset(snap, t.meta)
	if err != nil {
		_ = snap.Close()
		return nil, fmt.Errorf("kvstore: state view of %s: %w", t.bucket, err)
	}
	return &StateView{snap: snap, prefix: t.prefix, hi: t.hi, Offset: off}, nil
}

func readOffset(r pebble.Reader, key []byte) (int64, error) {
	v, closer, err := r.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	defer closer.Close()
	if len(v) != 8 {
		return 0, fmt.Errorf("applied offset has %d bytes", len(v))
	}
	return int64(binary.BigEndian.Uint64(v)), nil
}

// StateIter iterates a view's rows in key order. Key and Value are valid until Next.
type StateIter struct {
	it     *pebble.Iterator
	prefix []byte
	ok     bool
}

// Iter returns an iterator positioned at the view's first row.
func (v *StateView) Iter() (*StateIter, error) {
	it, err := v.snap.NewIter(&pebble.IterOptions{LowerBound: v.prefix, UpperBound: v.hi})
	if err != nil {
		return nil, err
	}
	s := &StateIter{it: it, prefix: v.prefix}
	s.ok = it.First()
	return s, nil
}

// Valid reports whether the iterator is at a row.
func (s *StateIter) Valid() bool { return s.ok }

// Key is the row's primary key (the encoded key a LOOKUP carries).
func (s *StateIter) Key() []byte { return bytes.TrimPrefix(s.it.Key(), s.prefix) }

// Value is the stored value: int16 schema id, then the row (Fluss's KV value format).
func (s *StateIter) Value() []byte { return s.it.Value() }

// Next moves to the next row.
func (s *StateIter) Next() { s.ok = s.it.Next() }

// Close releases the iterator and returns its error, if any.
func (s *StateIter) Close() error { return errors.Join(s.it.Error(), s.it.Close()) }

// Close releases the view.
func (v *StateView) Close() error { return v.snap.Close() }
