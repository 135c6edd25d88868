package kvstore

import (
	"errors"

	"github.com/cockroachdb/pebble"
)

// stateBatch collects the state writes of one PUT_KV batch. Reads see the batch's own
// earlier writes first (records of one batch see each other), then the committed state.
//
// It replaces a Pebble indexed batch: an indexed batch's Get builds a merged iterator over
// the batch, the memtables and every level for each key, while a pending-write map lookup
// plus a plain DB.Get is much cheaper on the upsert hot path.
type stateBatch struct {
	db      *pebble.DB
	b       *pebble.Batch
	pending map[string][]byte // key -> value written in this batch; nil value = deleted
}

func (s *stateBatch) reset(db *pebble.DB) {
	s.db = db
	s.b = db.NewBatch()
	if s.pending == nil {
		s.pending = make(map[string][]byte)
	}
	clear(s.pending)
}

// Set writes key=value into the batch. value is copied.
func (s *stateBatch) Set(key, value []byte, _ *pebble.WriteOptions) error {
	s.pending[string(key)] = append([]byte{}, value...)
	return s.b.Set(key, value, nil)
}

// Delete deletes key in the batch.
func (s *stateBatch) Delete(key []byte, _ *pebble.WriteOptions) error {
	s.pending[string(key)] = nil
	return s.b.Delete(key, nil)
}

// get appends the current value of key to dst; found is false for a missing or deleted key.
func (s *stateBatch) get(dst, key []byte) ([]byte, bool, error) {
	if v, ok := s.pending[string(key)]; ok {
		return append(dst, v...), v != nil, nil
	}
	v, closer, err := s.db.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return dst, false, nil
	}
	if err != nil {
		return dst, false, err
	}
	dst = append(dst, v...)
	closer.Close()
	return dst, true, nil
}

// Commit commits the batch's writes.
func (s *stateBatch) Commit(o *pebble.WriteOptions) error { return s.b.Commit(o) }

// Close releases the batch.
func (s *stateBatch) Close() error {
	if s.b == nil {
		return nil
	}
	err := s.b.Close()
	s.b = nil
	return err
}
