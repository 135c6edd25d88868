package kafka

import (
	"context"
	"time"

	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/server/auth"
	"github.com/stromdb/strom/server/cluster"
	"github.com/stromdb/strom/server/meta"
	"github.com/stromdb/strom/server/tablet"
)

// Catalog is the part of the coordinator the Kafka listener reads and changes: topics are log
// tables of one database.
type Catalog interface {
	cluster.Catalog
	TableNames(db string) ([]string, error)
	CreateDatabase(ctx context.Context, name string, descJSON []byte, ignoreIfExists bool) error
	CreateTable(ctx context.Context, path cluster.TablePath, descJSON []byte, ignoreIfExists bool) error
	DropTable(ctx context.Context, path cluster.TablePath, ignoreIfNotExists bool) error
}

// Log is the tablet server's data path (server/tablet's AppendLog, ReadLog, ListLogOffset).
type Log interface {
	AppendLog(ctx context.Context, b cluster.Bucket, batches []byte, acks int32, timeout time.Duration) (int64, func() error, error)
	ReadLog(b cluster.Bucket, offset int64, maxBytes int) (tablet.LogRead, error)
	ListLogOffset(b cluster.Bucket, typ int32, ts *int64) (int64, error)
}

// Cluster tells where the brokers and the bucket leaders are.
type Cluster interface {
	// Brokers returns the Kafka endpoints of the live tablet servers on listener.
	Brokers(listener, localHost string) map[int32]cluster.Endpoint
	// Buckets returns the state of each bucket of a table (leader, replicas, ISR);
	// known[i] is false while bucket i has no state.
	Buckets(t *cluster.TableInfo) (states []cluster.BucketState, known []bool)
	// Controller returns the broker id that serves DDL (the tablet server with the active
	// coordinator), or -1.
	Controller() int32
}

// IDs allocates cluster-unique ids (the metadata store's counters).
type IDs interface {
	NextID(ctx context.Context, name string) (int64, error)
}

// Store keeps the consumer groups' committed offsets (the metadata store, unfenced: any
// tablet server may coordinate a group).
type Store interface {
	Get(ctx context.Context, key string) ([]byte, error)
	List(ctx context.Context, prefix string) ([]meta.KV, error)
	Txn(ctx context.Context, conds []meta.Cond, ops []meta.Op) (bool, error)
}

// Options wires the Kafka listener to the node.
type Options struct {
	Config  Config
	NodeID  int32
	Catalog Catalog
	Log     Log
	Cluster Cluster
	IDs     IDs
	Store   Store
	// Authorizer checks ACLs (nil: every request is allowed).
	Authorizer *auth.Authorizer
	// MaxFrameSize bounds a request frame.
	MaxFrameSize int
	// Buckets is the bucket count of topics created without one (-1 partitions).
	DefaultBuckets int32
	// ReplicationFactor of topics created without one.
	DefaultReplication int32
	// Limits, when non-nil, are the node's connection and in-flight budgets, shared with its
	// Fluss listeners: each request is charged to them from reading its frame to writing its
	// answer. The listener passed to Serve counts the connections (wire.LimitedListener).
	Limits *wire.Limits
	// AuthTimeout bounds the time from accept to a successful SaslAuthenticate on a SASL
	// listener (0: unbounded); the connection is closed when it passes.
	AuthTimeout time.Duration
}
