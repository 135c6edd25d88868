// Package meta is the durable metadata store behind the coordinator: databases, tables,
// schemas, partitions and id counters. The coordinator sees only the Store interface; the
// single-node default embeds etcd, and a multi-node deployment points the same code at an
// external etcd cluster.
package meta

import (
	"context"
	"errors"
)

// ErrNotFound is returned by Get for a key that does not exist.
var ErrNotFound = errors.New("meta: key not found")

// KV is one key and its value.
type KV struct {
	Key   string
	Value []byte
}

// Op is one write in a transaction: a put when Delete is false, else a delete of Key (or of
// every key under Key when Prefix is set).
type Op struct {
	Key    string
	Value  []byte
	Delete bool
	Prefix bool
	// LeaseID, when non-zero, attaches a put to an etcd lease: the key vanishes when the
	// lease expires.
	LeaseID int64
}

// Put returns a put operation.
func Put(key string, value []byte) Op { return Op{Key: key, Value: value} }

// Delete returns a delete of one key.
func Delete(key string) Op { return Op{Key: key, Delete: true} }

// DeletePrefix returns a delete of every key starting with prefix.
func DeletePrefix(prefix string) Op { return Op{Key: prefix, Delete: true, Prefix: true} }

// Cond is a precondition of a transaction on one key.
type Cond struct {
	Key    string
	Exists bool // true: the key must exist; false: it must not
	// CreateRevision, when non-zero, replaces Exists: the key must exist and have been
	// created at this revision. It is the fencing condition of docs/cluster.md: the
	// coordinator election key created at the coordinator epoch.
	CreateRevision int64
}

// Store is a small transactional key-value store.
type Store interface {
	// Get returns the value of key or ErrNotFound.
	Get(ctx context.Context, key string) ([]byte, error)
	// List returns every key with the given prefix, in key order.
	List(ctx context.Context, prefix string) ([]KV, error)
	// Txn applies ops atomically if every condition holds; ok reports whether it did.
	Txn(ctx context.Context, conds []Cond, ops []Op) (ok bool, err error)
	// NextID atomically increments the named counter and returns its previous value; the
	// first call for a name returns 0.
	NextID(ctx context.Context, name string) (int64, error)
	Close() error
}
