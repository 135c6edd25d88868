package kvstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble"

	"github.com/stromdb/strom/server/cluster"
)

// SnapshotRows iterates the rows of a KV snapshot in key order (kvsnap.Rows): Key is a
// primary key as LOOKUP encodes it, Value the stored value (int16 schema id, then the row).
type SnapshotRows interface {
	Valid() bool
	Key() []byte
	Value() []byte
	Next()
	Err() error
	Close() error
}

// loadCommitBytes bounds one Pebble batch of a snapshot load.
const loadCommitBytes = 8 << 20

// LoadBucket replaces the state of bucket b, which must not be open, with the rows of a KV
// snapshot whose log offset is offset, and makes it durable. The applied offset is written
// last, in the final batch, and the store is flushed before LoadBucket returns: afterwards the
// bucket's state is exactly the snapshot's, at offset, and a tablet opened on a changelog that
// starts at offset (logstore.Options.InitialOffset) recovers it as is. An interrupted load
// leaves the bucket without an applied offset: its changelog then cannot back it and the
// tablet opens offline (recover.go) until the load is run again.
//
// A replica that must start from a position its leader's changelog no longer holds
// bootstraps this way (docs/cluster.md, "Snapshot bootstrap").
func (s *Store) LoadBucket(ctx context.Context, b cluster.Bucket, offset int64, rows SnapshotRows) (n int64, err error) {
	s.mu.Lock()
	_, open := s.tablets[b]
	s.mu.Unlock()
	if open {
		return 0, fmt.Errorf("kvstore: load %s: the bucket is open", b)
	}
	if err := dropBucket(s.db, b); err != nil {
		return 0, err
	}
	prefix := bucketKey(tagData, b)
	batch := s.db.NewBatch()
	defer func() { _ = batch.Close() }()
	key := make([]byte, 0, 64)
	for ; rows.Valid(); rows.Next() {
		if err := ctx.Err(); err != nil {
			return n, err
		}
		key = append(append(key[:0], prefix...), rows.Key()...)
		if err := batch.Set(key, rows.Value(), nil); err != nil {
			return n, err
		}
		n++
		if batch.Len() >= loadCommitBytes {
			if err := batch.Commit(pebble.NoSync); err != nil {
				return n, fmt.Errorf("kvstore: load %s: %w", b, err)
			}
			_ = batch.Close()
			batch = s.db.NewBatch()
		}
	}
	if err := rows.Err(); err != nil {
		return n, fmt.Errorf("kvstore: load %s: read snapshot: %w", b, err)
	}
	if err := batch.Set(bucketKey(tagMeta, b), appendOffset(nil, offset), nil); err != nil {
		return n, err
	}
	if err := batch.Commit(pebble.NoSync); err != nil {
		return n, fmt.Errorf("kvstore: load %s: %w", b, err)
	}
	// Pebble runs without a WAL: only flushed tables survive a crash.
	if err := s.db.Flush(); err != nil {
		return n, errors.Join(fmt.Errorf("kvstore: load %s: flush: %w", b, err), dropBucket(s.db, b))
	}
	return n, nil
}
