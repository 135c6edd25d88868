package coordinator

import (
	"context"
	"errors"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/proto/flusspb"
	"github.com/stromdb/strom/server/cluster"
	"github.com/stromdb/strom/server/kvsnap"
)

// fakeKvSnapshots holds one snapshot per bucket; acquireErr fails every lease change.
type fakeKvSnapshots struct {
	latest     map[cluster.Bucket]*kvsnap.Snapshot
	acquireErr error
	acquired   []kvsnap.Ref
}

func (f *fakeKvSnapshots) Latest(b cluster.Bucket) (*kvsnap.Snapshot, bool) {
	s, ok := f.latest[b]
	return s, ok
}

func (f *fakeKvSnapshots) Get(b cluster.Bucket, id int64) (*kvsnap.Snapshot, bool) {
	if s, ok := f.latest[b]; ok && s.ID == id {
		return s, true
	}
	return nil, false
}

func (f *fakeKvSnapshots) Files(b cluster.Bucket, s *kvsnap.Snapshot) []kvsnap.File {
	return []kvsnap.File{{RemotePath: "file:///snap/1.sst", LocalFileName: "1.sst"}}
}

func (f *fakeKvSnapshots) Active(tableID, partitionID int64) map[int32][]int64 { return nil }

func (f *fakeKvSnapshots) Acquire(ctx context.Context, leaseID string, durationMs int64, refs []kvsnap.Ref) ([]kvsnap.Ref, error) {
	if f.acquireErr != nil {
		return nil, f.acquireErr
	}
	var unavailable []kvsnap.Ref
	for _, r := range refs {
		if _, ok := f.Get(r.Bucket, r.ID); !ok {
			unavailable = append(unavailable, r)
			continue
		}
		f.acquired = append(f.acquired, r)
	}
	return unavailable, nil
}

func (f *fakeKvSnapshots) Release(ctx context.Context, leaseID string, buckets []cluster.Bucket) error {
	return f.acquireErr
}
func (f *fakeKvSnapshots) Drop(ctx context.Context, leaseID string) error { return f.acquireErr }
func (f *fakeKvSnapshots) LeaseTables(leaseID string) []int64             { return nil }

func TestKvSnapshotServiceAnswersFromTheStore(t *testing.T) {
	ctx := context.Background()
	c := newTestCatalog(t, newMemStore())
	for name, pk := range map[string][]string{"pk": {"id"}, "log": nil} {
		if err := c.CreateTable(ctx, cluster.TablePath{Database: DefaultDatabase, Table: name}, tableJSON(2, pk), false); err != nil {
			t.Fatal(err)
		}
	}
	pk, logTable := mustTable(t, c, "pk"), mustTable(t, c, "log")
	s := &kvSnapshotService{catalog: c}
	latest := func(table string) (*flusspb.GetLatestKvSnapshotsResponse, error) {
		resp, err := s.handleGetLatestKvSnapshots(ctx, request(t, &flusspb.GetLatestKvSnapshotsRequest{
			TablePath: pbTablePath(cluster.TablePath{Database: DefaultDatabase, Table: table})}))
		if err != nil {
			return nil, err
		}
		return resp.(*flusspb.GetLatestKvSnapshotsResponse), nil
	}

	// Without a snapshot store every bucket has none, and leases cannot be taken.
	resp, err := latest("pk")
	if err != nil || len(resp.GetLatestSnapshots()) != 2 || resp.GetLatestSnapshots()[0].SnapshotId != nil {
		t.Fatalf("no store: %v, %v", resp, err)
	}
	acquire := &flusspb.AcquireKvSnapshotLeaseRequest{LeaseId: proto.String("l"), LeaseDurationMs: proto.Int64(1000),
		SnapshotsToLease: []*flusspb.PbKvSnapshotLeaseForTable{{TableId: proto.Int64(pk.ID), BucketSnapshots: []*flusspb.PbKvSnapshotLeaseForBucket{
			{BucketId: proto.Int32(0), SnapshotId: proto.Int64(5)}, {BucketId: proto.Int32(1), SnapshotId: proto.Int64(9)}}}}}
	_, err = s.handleAcquireKvSnapshotLease(ctx, request(t, acquire))
	wantCode(t, err, ferr.UnknownServerError, "ACQUIRE_KV_SNAPSHOT_LEASE without a store")

	store := &fakeKvSnapshots{latest: map[cluster.Bucket]*kvsnap.Snapshot{
		{TableID: pk.ID, PartitionID: cluster.NoPartition, Bucket: 0}: {ID: 5, LogOffset: 42}}}
	s.connect(store)
	resp, err = latest("pk")
	if err != nil {
		t.Fatal(err)
	}
	if b0, b1 := resp.GetLatestSnapshots()[0], resp.GetLatestSnapshots()[1]; b0.GetSnapshotId() != 5 || b0.GetLogOffset() != 42 || b1.SnapshotId != nil {
		t.Fatalf("latest snapshots %v, want bucket 0 at 5/42 and none for bucket 1", resp.GetLatestSnapshots())
	}
	_, err = latest("log")
	wantCode(t, err, ferr.NonPrimaryKeyTableException, "GET_LATEST_KV_SNAPSHOTS of a log table")

	meta, err := s.handleGetKvSnapshotMetadata(ctx, request(t, &flusspb.GetKvSnapshotMetadataRequest{TableId: proto.Int64(pk.ID), BucketId: proto.Int32(0), SnapshotId: proto.Int64(5)}))
	if err != nil || meta.(*flusspb.GetKvSnapshotMetadataResponse).GetLogOffset() != 42 || len(meta.(*flusspb.GetKvSnapshotMetadataResponse).GetSnapshotFiles()) != 1 {
		t.Fatalf("snapshot metadata: %v, %v", meta, err)
	}
	_, err = s.handleGetKvSnapshotMetadata(ctx, request(t, &flusspb.GetKvSnapshotMetadataRequest{TableId: proto.Int64(pk.ID), BucketId: proto.Int32(1), SnapshotId: proto.Int64(5)}))
	wantCode(t, err, ferr.KvSnapshotNotExist, "metadata of a missing snapshot")

	// Bucket 1 has no snapshot 9: it comes back unavailable; bucket 0's is leased.
	out, err := s.handleAcquireKvSnapshotLease(ctx, request(t, acquire))
	if err != nil {
		t.Fatal(err)
	}
	un := out.(*flusspb.AcquireKvSnapshotLeaseResponse).GetUnavailableSnapshots()
	if len(un) != 1 || len(un[0].GetBucketSnapshots()) != 1 || un[0].GetBucketSnapshots()[0].GetBucketId() != 1 || len(store.acquired) != 1 {
		t.Fatalf("unavailable %v, acquired %v", un, store.acquired)
	}
	acquire.SnapshotsToLease[0].TableId = proto.Int64(logTable.ID)
	_, err = s.handleAcquireKvSnapshotLease(ctx, request(t, acquire))
	wantCode(t, err, ferr.NonPrimaryKeyTableException, "a lease on a log table")

	// A fenced lease change is NOT_COORDINATOR_LEADER, so that a standby forwards it; any
	// other failure is an unknown server error.
	store.acquireErr = errFenced
	_, err = s.handleDropKvSnapshotLease(ctx, request(t, &flusspb.DropKvSnapshotLeaseRequest{LeaseId: proto.String("l")}))
	wantCode(t, err, ferr.NotCoordinatorLeaderException, "a fenced lease drop")
	store.acquireErr = errors.New("disk full")
	_, err = s.handleDropKvSnapshotLease(ctx, request(t, &flusspb.DropKvSnapshotLeaseRequest{LeaseId: proto.String("l")}))
	wantCode(t, err, ferr.UnknownServerError, "a failed lease drop")
}
