package coordinator

import (
	"context"

	"github.com/stromdb/strom/server/meta"
)

// The narrow views of the metadata store (server/meta) the services use. A service is handed
// the smallest of them that covers what it reads and writes; in a cluster the store behind
// them is fenced, so every write fails with NOT_COORDINATOR_LEADER on a standby.

// recordReader reads one record.
type recordReader interface {
	Get(ctx context.Context, key string) ([]byte, error)
}

// recordLister lists the records under a prefix.
type recordLister interface {
	List(ctx context.Context, prefix string) ([]meta.KV, error)
}

// txnWriter writes records atomically under conditions.
type txnWriter interface {
	Txn(ctx context.Context, conds []meta.Cond, ops []meta.Op) (bool, error)
}

// idAllocator hands out ids from named counters.
type idAllocator interface {
	NextID(ctx context.Context, name string) (int64, error)
}

// recordStore reads and writes single records: producer offsets, cluster configs.
type recordStore interface {
	recordReader
	txnWriter
}

// catalogStore is what the catalog reads and writes: databases, tables, schemas, partitions
// and their id counters.
type catalogStore interface {
	recordReader
	recordLister
	txnWriter
	idAllocator
}

// partitionStore is what the partition service writes (it reads through the catalog).
type partitionStore interface {
	txnWriter
	idAllocator
}
