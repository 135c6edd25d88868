package fluss

import (
	"context"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
)

// KvSnapshot is the newest KV snapshot of one bucket of a primary-key table: every row of the
// bucket as of LogOffset, the first changelog offset it does not contain. A reader that loads
// it and then reads the changelog from LogOffset sees the bucket's current state.
type KvSnapshot struct {
	Bucket     int32
	SnapshotID int64
	LogOffset  int64
}

// KvSnapshots are the newest KV snapshots of a table's (or one partition's) buckets. Buckets
// without a snapshot are missing from Snapshots; their whole changelog is still there.
type KvSnapshots struct {
	TableID     int64
	PartitionID int64 // NoPartition for a non-partitioned table
	NumBuckets  int
	Snapshots   map[int32]KvSnapshot
}

// GetLatestKvSnapshots returns the newest KV snapshot of every bucket of a primary-key table,
// or of one partition (by name) of a partitioned one.
func (a *Admin) GetLatestKvSnapshots(ctx context.Context, path TablePath, partition string) (*KvSnapshots, error) {
	req := &flusspb.GetLatestKvSnapshotsRequest{TablePath: pbPath(path)}
	if partition != "" {
		req.PartitionName = proto.String(partition)
	}
	var resp flusspb.GetLatestKvSnapshotsResponse
	if err := a.conn.callCoordinator(ctx, wire.GetLatestKvSnapshots, req, &resp); err != nil {
		return nil, err
	}
	out := &KvSnapshots{TableID: resp.GetTableId(), PartitionID: NoPartition, NumBuckets: len(resp.LatestSnapshots), Snapshots: map[int32]KvSnapshot{}}
	if resp.PartitionId != nil {
		out.PartitionID = resp.GetPartitionId()
	}
	for _, s := range resp.LatestSnapshots {
		if s.SnapshotId != nil {
			out.Snapshots[s.GetBucketId()] = KvSnapshot{Bucket: s.GetBucketId(), SnapshotID: s.GetSnapshotId(), LogOffset: s.GetLogOffset()}
		}
	}
	return out, nil
}

// KvSnapshotFile is one file of a KV snapshot: where the server keeps it (a file:// URL on a
// Strom server) and the name it must have in the directory a reader opens with RocksDB.
type KvSnapshotFile struct {
	RemotePath    string
	LocalFileName string
}

// KvSnapshotMetadata describes one KV snapshot.
type KvSnapshotMetadata struct {
	LogOffset int64
	Files     []KvSnapshotFile
}

// GetKvSnapshotMetadata returns the log offset and files of snapshot snapshotID of bucket b;
// ErrKvSnapshotNotExist when the snapshot is unknown or was cleaned up.
func (a *Admin) GetKvSnapshotMetadata(ctx context.Context, b TableBucket, snapshotID int64) (*KvSnapshotMetadata, error) {
	req := &flusspb.GetKvSnapshotMetadataRequest{TableId: proto.Int64(b.TableID), BucketId: proto.Int32(b.Bucket), SnapshotId: proto.Int64(snapshotID)}
	if b.PartitionID != NoPartition {
		req.PartitionId = proto.Int64(b.PartitionID)
	}
	var resp flusspb.GetKvSnapshotMetadataResponse
	if err := a.conn.callCoordinator(ctx, wire.GetKvSnapshotMetadata, req, &resp); err != nil {
		return nil, err
	}
	out := &KvSnapshotMetadata{LogOffset: resp.GetLogOffset()}
	for _, f := range resp.SnapshotFiles {
		out.Files = append(out.Files, KvSnapshotFile{RemotePath: f.GetRemotePath(), LocalFileName: f.GetLocalFileName()})
	}
	return out, nil
}

// KvSnapshotRef names one snapshot of one bucket, for leases.
type KvSnapshotRef struct {
	Bucket     TableBucket
	SnapshotID int64
}

// AcquireKvSnapshotLease creates lease leaseID, or extends it to d from now, and makes it hold
// the given snapshots (one per bucket; a later snapshot of the same bucket replaces the earlier
// one). While held, a snapshot and the changelog from its offset are kept. It returns the
// snapshots the server could not hold (on Strom: those that do not exist).
func (a *Admin) AcquireKvSnapshotLease(ctx context.Context, leaseID string, d time.Duration, snaps []KvSnapshotRef) ([]KvSnapshotRef, error) {
	req := &flusspb.AcquireKvSnapshotLeaseRequest{LeaseId: proto.String(leaseID), LeaseDurationMs: proto.Int64(d.Milliseconds())}
	byTable := map[int64]*flusspb.PbKvSnapshotLeaseForTable{}
	for _, s := range snaps {
		t := byTable[s.Bucket.TableID]
		if t == nil {
			t = &flusspb.PbKvSnapshotLeaseForTable{TableId: proto.Int64(s.Bucket.TableID)}
			byTable[s.Bucket.TableID] = t
			req.SnapshotsToLease = append(req.SnapshotsToLease, t)
		}
		pb := &flusspb.PbKvSnapshotLeaseForBucket{BucketId: proto.Int32(s.Bucket.Bucket), SnapshotId: proto.Int64(s.SnapshotID)}
		if s.Bucket.PartitionID != NoPartition {
			pb.PartitionId = proto.Int64(s.Bucket.PartitionID)
		}
		t.BucketSnapshots = append(t.BucketSnapshots, pb)
	}
	var resp flusspb.AcquireKvSnapshotLeaseResponse
	if err := a.conn.callCoordinator(ctx, wire.AcquireKvSnapshotLease, req, &resp); err != nil {
		return nil, err
	}
	var out []KvSnapshotRef
	for _, t := range resp.UnavailableSnapshots {
		for _, b := range t.BucketSnapshots {
			tb := TableBucket{TableID: t.GetTableId(), PartitionID: NoPartition, Bucket: b.GetBucketId()}
			if b.PartitionId != nil {
				tb.PartitionID = b.GetPartitionId()
			}
			out = append(out, KvSnapshotRef{Bucket: tb, SnapshotID: b.GetSnapshotId()})
		}
	}
	return out, nil
}

// ReleaseKvSnapshotLease makes lease leaseID stop holding the snapshots of the given buckets; a
// lease left with none is dropped.
func (a *Admin) ReleaseKvSnapshotLease(ctx context.Context, leaseID string, buckets []TableBucket) error {
	req := &flusspb.ReleaseKvSnapshotLeaseRequest{LeaseId: proto.String(leaseID)}
	for _, b := range buckets {
		pb := &flusspb.PbTableBucket{TableId: proto.Int64(b.TableID), BucketId: proto.Int32(b.Bucket)}
		if b.PartitionID != NoPartition {
			pb.PartitionId = proto.Int64(b.PartitionID)
		}
		req.BucketsToRelease = append(req.BucketsToRelease, pb)
	}
	return a.conn.callCoordinator(ctx, wire.ReleaseKvSnapshotLease, req, &flusspb.ReleaseKvSnapshotLeaseResponse{})
}

// DropKvSnapshotLease drops lease leaseID and everything it holds.
func (a *Admin) DropKvSnapshotLease(ctx context.Context, leaseID string) error {
	return a.conn.callCoordinator(ctx, wire.DropKvSnapshotLease, &flusspb.DropKvSnapshotLeaseRequest{LeaseId: proto.String(leaseID)}, &flusspb.DropKvSnapshotLeaseResponse{})
}
