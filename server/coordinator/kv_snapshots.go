package coordinator

import (
	"context"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
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

// SetKvSnapshots connects the KV snapshot APIs to the snapshot store. Without it every bucket
// answers "no snapshot" and leases hold nothing.
func (c *Coordinator) SetKvSnapshots(s KvSnapshots) { c.kvSnapshots.Store(&s) }

func (c *Coordinator) kvSnaps() KvSnapshots {
	if p := c.kvSnapshots.Load(); p != nil {
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

func init() {
	registerReadOnly(wire.GetLatestKvSnapshots, 0, 0, (*Coordinator).handleGetLatestKvSnapshots)
}

// handleGetLatestKvSnapshots answers, per bucket of the table (or of one of its partitions),
// the newest snapshot id and its log offset, or neither when the bucket has none (Fluss
// RpcServiceBase.getLatestKvSnapshots, same checks and codes).
func (c *Coordinator) handleGetLatestKvSnapshots(ctx context.Context, req *wire.Request) (proto.Message, error) {
	var r flusspb.GetLatestKvSnapshotsRequest
	if err := req.Decode(&r); err != nil {
		return nil, err
	}
	path := tablePathOf(r.GetTablePath())
	if err := c.authorize(req, auth.OpDescribe, tableResource(path)); err != nil {
		return nil, err
	}
	t, err := c.table(r.GetTablePath())
	if err != nil {
		return nil, err
	}
	switch {
	case !t.HasPrimaryKey():
		return nil, ferr.New(ferr.NonPrimaryKeyTableException, "Table '%s' is not a primary key table, so it doesn't have any kv snapshots.", t.Path)
	case r.PartitionName != nil && !t.Partitioned():
		return nil, ferr.New(ferr.TableNotPartitionedException, "Table '%s' is not a partitioned table.", t.Path)
	case r.PartitionName == nil && t.Partitioned():
		return nil, ferr.New(ferr.PartitionNotExists, "Table '%s' is a partitioned table, but partition name is not provided.", t.Path)
	}
	resp := &flusspb.GetLatestKvSnapshotsResponse{TableId: proto.Int64(t.ID)}
	pid := cluster.NoPartition
	if r.PartitionName != nil {
		p, ok := c.PartitionByName(t.ID, r.GetPartitionName())
		if !ok {
			return nil, ferr.New(ferr.PartitionNotExists, "The partition '%s' of table '%s' does not exist.", r.GetPartitionName(), t.Path)
		}
		pid = p.ID
		resp.PartitionId = proto.Int64(pid)
	}
	snaps := c.kvSnaps()
	for b := int32(0); b < t.NumBuckets(); b++ {
		pb := &flusspb.PbKvSnapshot{BucketId: proto.Int32(b)}
		if snaps != nil {
			if s, ok := snaps.Latest(cluster.Bucket{TableID: t.ID, PartitionID: pid, Bucket: b}); ok {
				pb.SnapshotId, pb.LogOffset = proto.Int64(s.ID), proto.Int64(s.LogOffset)
			}
		}
		resp.LatestSnapshots = append(resp.LatestSnapshots, pb)
	}
	return resp, nil
}

func init() {
	registerReadOnly(wire.GetKvSnapshotMetadata, 0, 0, (*Coordinator).handleGetKvSnapshotMetadata)
}

// handleGetKvSnapshotMetadata answers a snapshot's log offset and files: file:// URLs of the
// remote directory and the names they take in the reader's RocksDB directory.
func (c *Coordinator) handleGetKvSnapshotMetadata(ctx context.Context, req *wire.Request) (proto.Message, error) {
	var r flusspb.GetKvSnapshotMetadataRequest
	if err := req.Decode(&r); err != nil {
		return nil, err
	}
	if err := c.authorizeTableID(req, auth.OpDescribe, r.GetTableId()); err != nil {
		return nil, err
	}
	b := cluster.Bucket{TableID: r.GetTableId(), PartitionID: cluster.NoPartition, Bucket: r.GetBucketId()}
	if r.PartitionId != nil {
		b.PartitionID = r.GetPartitionId()
	}
	var s *kvsnap.Snapshot
	snaps := c.kvSnaps()
	if snaps != nil {
		s, _ = snaps.Get(b, r.GetSnapshotId())
	}
	if s == nil {
		return nil, ferr.New(ferr.KvSnapshotNotExist, "Failed to get kv snapshot metadata for table bucket %s and snapshot id %d. Error: Kv snapshot not found",
			javaBucket(b), r.GetSnapshotId())
	}
	resp := &flusspb.GetKvSnapshotMetadataResponse{LogOffset: proto.Int64(s.LogOffset)}
	for _, f := range snaps.Files(b, s) {
		resp.SnapshotFiles = append(resp.SnapshotFiles, &flusspb.PbRemotePathAndLocalFile{
			RemotePath: proto.String(f.RemotePath), LocalFileName: proto.String(f.LocalFileName)})
	}
	return resp, nil
}

func init() { registerAdmin(wire.ListKvSnapshots, 0, 0, (*Coordinator).handleListKvSnapshots) }

// handleListKvSnapshots answers every snapshot still kept (retained or leased) per bucket
// (Fluss CoordinatorService.listKvSnapshots).
func (c *Coordinator) handleListKvSnapshots(ctx context.Context, req *wire.Request) (proto.Message, error) {
	var r flusspb.ListKvSnapshotsRequest
	if err := req.Decode(&r); err != nil {
		return nil, err
	}
	if err := c.authorizeTableID(req, auth.OpDescribe, r.GetTableId()); err != nil {
		return nil, err
	}
	pid := cluster.NoPartition
	if r.PartitionId != nil {
		pid = r.GetPartitionId()
		p, ok := c.PartitionByID(pid)
		if !ok {
			return nil, ferr.New(ferr.PartitionNotExists, "Partition %d does not exist", pid)
		}
		if p.TableID != r.GetTableId() {
			return nil, ferr.New(ferr.PartitionNotExists, "Partition %d does not belong to table %d", pid, r.GetTableId())
		}
	} else if _, ok := c.TableByID(r.GetTableId()); !ok {
		return nil, ferr.New(ferr.TableNotExist, "Table %d does not exist", r.GetTableId())
	}
	resp := &flusspb.ListKvSnapshotsResponse{TableId: proto.Int64(r.GetTableId())}
	if r.PartitionId != nil {
		resp.PartitionId = proto.Int64(pid)
	}
	if snaps := c.kvSnaps(); snaps != nil {
		active := snaps.Active(r.GetTableId(), pid)
		t, _ := c.TableByID(r.GetTableId())
		for b := int32(0); t != nil && b < t.NumBuckets(); b++ {
			for _, id := range active[b] {
				resp.ActiveSnapshots = append(resp.ActiveSnapshots, &flusspb.PbKvSnapshot{BucketId: proto.Int32(b), SnapshotId: proto.Int64(id)})
			}
		}
	}
	return resp, nil
}

// checkKvTable is Fluss's validateKvTable for the lease APIs: READ on the table (when
// authorization is on), which must exist and have a primary key.
func (c *Coordinator) checkKvTable(req *wire.Request, tableID int64) error {
	if err := c.authorizeTableID(req, auth.OpRead, tableID); err != nil {
		return err
	}
	t, ok := c.TableByID(tableID)
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

func init() {
	registerAdmin(wire.AcquireKvSnapshotLease, 0, 0, (*Coordinator).handleAcquireKvSnapshotLease)
}

// handleAcquireKvSnapshotLease creates or extends a lease and makes it hold the given
// snapshots; snapshots that do not exist come back as unavailable.
func (c *Coordinator) handleAcquireKvSnapshotLease(ctx context.Context, req *wire.Request) (proto.Message, error) {
	var r flusspb.AcquireKvSnapshotLeaseRequest
	if err := req.Decode(&r); err != nil {
		return nil, err
	}
	var refs []kvsnap.Ref
	for _, tl := range r.GetSnapshotsToLease() {
		if err := c.checkKvTable(req, tl.GetTableId()); err != nil {
			return nil, err
		}
		for _, bs := range tl.GetBucketSnapshots() {
			b := cluster.Bucket{TableID: tl.GetTableId(), PartitionID: cluster.NoPartition, Bucket: bs.GetBucketId()}
			if bs.PartitionId != nil {
				b.PartitionID = bs.GetPartitionId()
			}
			refs = append(refs, kvsnap.Ref{Bucket: b, ID: bs.GetSnapshotId()})
		}
	}
	snaps := c.kvSnaps()
	if snaps == nil {
		return nil, errNoSnapshotStore()
	}
	unavailable, err := snaps.Acquire(ctx, r.GetLeaseId(), r.GetLeaseDurationMs(), refs)
	if err != nil {
		return nil, leaseError(err, "acquire", r.GetLeaseId())
	}
	resp := &flusspb.AcquireKvSnapshotLeaseResponse{}
	byTable := map[int64]*flusspb.PbKvSnapshotLeaseForTable{}
	for _, u := range unavailable {
		tl := byTable[u.Bucket.TableID]
		if tl == nil {
			tl = &flusspb.PbKvSnapshotLeaseForTable{TableId: proto.Int64(u.Bucket.TableID)}
			byTable[u.Bucket.TableID] = tl
			resp.UnavailableSnapshots = append(resp.UnavailableSnapshots, tl)
		}
		bs := &flusspb.PbKvSnapshotLeaseForBucket{BucketId: proto.Int32(u.Bucket.Bucket), SnapshotId: proto.Int64(u.ID)}
		if u.Bucket.PartitionID != cluster.NoPartition {
			bs.PartitionId = proto.Int64(u.Bucket.PartitionID)
		}
		tl.BucketSnapshots = append(tl.BucketSnapshots, bs)
	}
	return resp, nil
}

func init() {
	registerAdmin(wire.ReleaseKvSnapshotLease, 0, 0, (*Coordinator).handleReleaseKvSnapshotLease)
}

// handleReleaseKvSnapshotLease makes a lease stop holding the given buckets' snapshots.
func (c *Coordinator) handleReleaseKvSnapshotLease(ctx context.Context, req *wire.Request) (proto.Message, error) {
	var r flusspb.ReleaseKvSnapshotLeaseRequest
	if err := req.Decode(&r); err != nil {
		return nil, err
	}
	var buckets []cluster.Bucket
	for _, tb := range r.GetBucketsToRelease() {
		if err := c.checkKvTable(req, tb.GetTableId()); err != nil {
			return nil, err
		}
		b := cluster.Bucket{TableID: tb.GetTableId(), PartitionID: cluster.NoPartition, Bucket: tb.GetBucketId()}
		if tb.PartitionId != nil {
			b.PartitionID = tb.GetPartitionId()
		}
		buckets = append(buckets, b)
	}
	snaps := c.kvSnaps()
	if snaps == nil {
		return nil, errNoSnapshotStore()
	}
	if err := snaps.Release(ctx, r.GetLeaseId(), buckets); err != nil {
		return nil, leaseError(err, "release", r.GetLeaseId())
	}
	return &flusspb.ReleaseKvSnapshotLeaseResponse{}, nil
}

func init() { registerAdmin(wire.DropKvSnapshotLease, 0, 0, (*Coordinator).handleDropKvSnapshotLease) }

// handleDropKvSnapshotLease removes a lease; an unknown lease is not an error.
func (c *Coordinator) handleDropKvSnapshotLease(ctx context.Context, req *wire.Request) (proto.Message, error) {
	var r flusspb.DropKvSnapshotLeaseRequest
	if err := req.Decode(&r); err != nil {
		return nil, err
	}
	snaps := c.kvSnaps()
	if snaps == nil {
		return nil, errNoSnapshotStore()
	}
	if c.checksAccess(req) {
		// READ on every table the lease holds, as Fluss checks.
		for _, id := range snaps.LeaseTables(r.GetLeaseId()) {
			if err := c.authorizeTableID(req, auth.OpRead, id); err != nil {
				return nil, err
			}
		}
	}
	if err := snaps.Drop(ctx, r.GetLeaseId()); err != nil {
		return nil, leaseError(err, "drop", r.GetLeaseId())
	}
	return &flusspb.DropKvSnapshotLeaseResponse{}, nil
}
