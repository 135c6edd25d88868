package coordinator

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/server/auth"
	"github.com/stromdb/strom/server/cluster"
	"github.com/stromdb/strom/server/kvsnap"
)

// KvSnapshots is the store of primary-key buckets' KV snapshots (kvsnap.Manager): the reads
// and leases the KV snapshot APIs need (docs/kv-snapshots.md).
type KvSnapshots interface {
	Latest(b cluster.Bucket) (*kvsnap.Snapshot, bool)
	Get(b cluster.Bucket, id int64) (*kvsnap.Snapshot, bool)
	Files(b cluster.Bucket, s *kvsnap.Snapshot) []kvsnap.File
	Active(tableID, partitionID int64) map[int32][]int64
	Acquire(ctx context.Context, leaseID string, durationMs int64, refs []kvsnap.Ref) ([]kvsnap.Ref, error)
	Release(ctx context.Context, leaseID string, buckets []cluster.Bucket) error
	Drop(ctx context.Context, leaseID string) error
	// LeaseTables lists the tables whose snapshots the lease holds.
	LeaseTables(leaseID string) []int64
}

// kvSnapshotService serves the KV snapshot APIs (docs/kv-snapshots.md) over the snapshot
// store, which owns the snapshots and leases (kvsnap.Manager): GET_LATEST_KV_SNAPSHOTS,
// GET_KV_SNAPSHOT_METADATA, LIST_KV_SNAPSHOTS and ACQUIRE/RELEASE/DROP_KV_SNAPSHOT_LEASE.
type kvSnapshotService struct {
	catalog kvSnapshotCatalog
	access  access
	snaps   atomic.Pointer[KvSnapshots] // nil: no snapshot store connected
}

var kvSnapshotAPIs apiTable[*kvSnapshotService]

// kvSnapshotCatalog is the part of the catalog the KV snapshot APIs read (Catalog).
type kvSnapshotCatalog interface {
	tableReader
	TableByID(id int64) (*cluster.TableInfo, bool)
	PartitionByID(id int64) (*cluster.PartitionInfo, bool)
	PartitionByName(tableID int64, name string) (*cluster.PartitionInfo, bool)
}

// connect connects the KV snapshot APIs to the snapshot store. Without it every bucket
// answers "no snapshot" and leases hold nothing.
func (s *kvSnapshotService) connect(store KvSnapshots) { s.snaps.Store(&store) }

// store returns the snapshot store, nil when none is connected.
func (s *kvSnapshotService) store() KvSnapshots {
	if p := s.snaps.Load(); p != nil {
		return *p
	}
	return nil
}

// javaBucket renders a bucket as Java's TableBucket.toString does, for error messages.
func javaBucket(b cluster.Bucket) string {
	p := "null"
	if b.PartitionID != cluster.NoPartition {
		p = fmt.Sprint(b.PartitionID)
	}
	return fmt.Sprintf("TableBucket{tableId=%d, partitionId=%s, bucket=%d}", b.TableID, p, b.Bucket)
}

// checkKvTable is Fluss's validateKvTable for the lease APIs: READ on the table (when
// authorization is on), which must exist and have a primary key.
func (s *kvSnapshotService) checkKvTable(req *wire.Request, tableID int64) error {
	if err := s.access.authorizeTableID(req, s.catalog, auth.OpRead, tableID); err != nil {
		return err
	}
	t, ok := s.catalog.TableByID(tableID)
	if !ok {
		return ferr.New(ferr.TableNotExist, "The table id %d does not exist.", tableID)
	}
	if !t.HasPrimaryKey() {
		return ferr.New(ferr.NonPrimaryKeyTableException, "Table '%s' is not a primary key table", t.Path)
	}
	return nil
}

// leaseError is the answer to a lease change that failed: NOT_COORDINATOR_LEADER as is (a
// standby's or a deposed coordinator's fenced write; the standby forwards the request to the
// active coordinator), anything else as an unknown server error.
func leaseError(err error, op, leaseID string) error {
	if ferr.CodeOf(err) == ferr.NotCoordinatorLeaderException {
		return err
	}
	return ferr.New(ferr.UnknownServerError, "Failed to %s kv snapshot lease for %s: %v", op, leaseID, err)
}

func errNoSnapshotStore() error {
	return ferr.New(ferr.UnknownServerError, "KV snapshots are not enabled on this server")
}
