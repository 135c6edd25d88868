package coordinator_test

import (
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/internal/row"
	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
)

// latestSnapshot polls GET_LATEST_KV_SNAPSHOTS until bucket 0 of table name has a snapshot at
// logOffset or later.
func latestSnapshot(t *testing.T, coord *wire.ClientConn, name string, logOffset int64) *flusspb.PbKvSnapshot {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		var resp flusspb.GetLatestKvSnapshotsResponse
		mustCall(t, coord, wire.GetLatestKvSnapshots, &flusspb.GetLatestKvSnapshotsRequest{TablePath: tablePath(name)}, &resp)
		if len(resp.LatestSnapshots) != 1 || resp.PartitionId != nil {
			t.Fatalf("GET_LATEST_KV_SNAPSHOTS: %v", &resp)
		}
		s := resp.LatestSnapshots[0]
		if s.SnapshotId != nil && s.GetLogOffset() >= logOffset {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("no snapshot at offset %d: %v", logOffset, s)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestKvSnapshotAPIs(t *testing.T) {
	dir := t.TempDir()
	set := map[string]string{"kv.snapshot.interval": "100ms"}
	tn := startNode(t, dir, set)
	id := createPKTable(t, tn.coord, "snap_t")
	logID := createLogTable(t, tn.coord, "snap_log", 1)
	partitioned := metadata.TableDescriptor{
		Schema: metadata.Schema{Columns: []metadata.Column{{Name: "id", Type: intType}, {Name: "day", Type: stringType}},
			PrimaryKey: []string{"id", "day"}},
		PartitionKeys: []string{"day"}, BucketCount: 1,
		Properties: map[string]string{}, CustomProperties: map[string]string{},
	}
	createTable(t, tn.coord, "snap_p", partitioned)

	latest := func(name string, partition *string) error {
		return call(t, tn.coord, wire.GetLatestKvSnapshots, &flusspb.GetLatestKvSnapshotsRequest{TablePath: tablePath(name), PartitionName: partition}, &flusspb.GetLatestKvSnapshotsResponse{})
	}
	wantCode(t, latest("snap_log", nil), ferr.NonPrimaryKeyTableException, "latest snapshots of a log table")
	wantCode(t, latest("missing", nil), ferr.TableNotExist, "latest snapshots of a missing table")
	wantCode(t, latest("snap_t", proto.String("x")), ferr.TableNotPartitionedException, "a partition of a non-partitioned table")
	wantCode(t, latest("snap_p", nil), ferr.PartitionNotExists, "a partitioned table without partition name")
	wantCode(t, latest("snap_p", proto.String("2026")), ferr.PartitionNotExists, "a missing partition")

	// An empty bucket gets a snapshot too (at offset 0), then one per change.
	s0 := latestSnapshot(t, tn.coord, "snap_t", 0)
	types := []metadata.DataType{intType, stringType}
	for i := 0; i < 20; i++ {
		kvPut(t, tn.tablet, id, 1, types, []row.Datum{{I: int64(i)}, {B: []byte("v")}})
	}
	var offs flusspb.ListOffsetsResponse
	mustCall(t, tn.tablet, wire.ListOffsets, &flusspb.ListOffsetsRequest{FollowerServerId: proto.Int32(-1), OffsetType: proto.Int32(1),
		TableId: proto.Int64(id), BucketId: []int32{0}}, &offs)
	end := offs.BucketsResp[0].GetOffset()
	if end == 0 {
		t.Fatalf("log end offset 0 after writes: %v", &offs)
	}
	s1 := latestSnapshot(t, tn.coord, "snap_t", end)
	if s1.GetLogOffset() != end || s1.GetSnapshotId() <= s0.GetSnapshotId() {
		t.Fatalf("snapshot after the writes: %v (log end %d, first snapshot %v)", s1, end, s0)
	}

	var md flusspb.GetKvSnapshotMetadataResponse
	mustCall(t, tn.coord, wire.GetKvSnapshotMetadata, &flusspb.GetKvSnapshotMetadataRequest{TableId: proto.Int64(id), BucketId: proto.Int32(0), SnapshotId: proto.Int64(s1.GetSnapshotId())}, &md)
	if md.GetLogOffset() != end {
		t.Errorf("metadata log offset %d, want %d", md.GetLogOffset(), end)
	}
	var names []string
	for _, f := range md.SnapshotFiles {
		names = append(names, f.GetLocalFileName())
		u, err := url.Parse(f.GetRemotePath())
		if err != nil || u.Scheme != "file" {
			t.Fatalf("remote path %q", f.GetRemotePath())
		}
		if _, err := os.Stat(u.Path); err != nil {
			t.Errorf("snapshot file: %v", err)
		}
		if !strings.HasPrefix(u.Path, filepath.Join(dir, "remote", "kv")) {
			t.Errorf("snapshot file %s outside <data dir>/remote/kv", u.Path)
		}
	}
	if !slices.Contains(names, "CURRENT") || !slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, "MANIFEST-") }) ||
		!slices.ContainsFunc(names, func(n string) bool { return strings.HasSuffix(n, ".sst") }) {
		t.Errorf("snapshot files %v", names)
	}
	err := call(t, tn.coord, wire.GetKvSnapshotMetadata, &flusspb.GetKvSnapshotMetadataRequest{TableId: proto.Int64(id), BucketId: proto.Int32(0), SnapshotId: proto.Int64(999)}, &md)
	wantCode(t, err, ferr.KvSnapshotNotExist, "metadata of a missing snapshot")
	// The tablet server answers the read-only snapshot APIs too, as Fluss's do.
	mustCall(t, tn.tablet, wire.GetKvSnapshotMetadata, &flusspb.GetKvSnapshotMetadataRequest{TableId: proto.Int64(id), BucketId: proto.Int32(0), SnapshotId: proto.Int64(s1.GetSnapshotId())}, &md)

	var list flusspb.ListKvSnapshotsResponse
	mustCall(t, tn.coord, wire.ListKvSnapshots, &flusspb.ListKvSnapshotsRequest{TableId: proto.Int64(id)}, &list)
	if !slices.ContainsFunc(list.ActiveSnapshots, func(s *flusspb.PbKvSnapshot) bool { return s.GetSnapshotId() == s1.GetSnapshotId() }) {
		t.Errorf("LIST_KV_SNAPSHOTS misses snapshot %d: %v", s1.GetSnapshotId(), &list)
	}
	err = call(t, tn.coord, wire.ListKvSnapshots, &flusspb.ListKvSnapshotsRequest{TableId: proto.Int64(12345)}, &list)
	wantCode(t, err, ferr.TableNotExist, "list snapshots of a missing table")
	err = call(t, tn.coord, wire.ListKvSnapshots, &flusspb.ListKvSnapshotsRequest{TableId: proto.Int64(id), PartitionId: proto.Int64(777)}, &list)
	wantCode(t, err, ferr.PartitionNotExists, "list snapshots of a missing partition")

	leaseOf := func(table, snapshot int64) []*flusspb.PbKvSnapshotLeaseForTable {
		return []*flusspb.PbKvSnapshotLeaseForTable{{TableId: proto.Int64(table),
			BucketSnapshots: []*flusspb.PbKvSnapshotLeaseForBucket{{BucketId: proto.Int32(0), SnapshotId: proto.Int64(snapshot)}}}}
	}
	var acq flusspb.AcquireKvSnapshotLeaseResponse
	mustCall(t, tn.coord, wire.AcquireKvSnapshotLease, &flusspb.AcquireKvSnapshotLeaseRequest{LeaseId: proto.String("job-1"), LeaseDurationMs: proto.Int64(600_000),
		SnapshotsToLease: leaseOf(id, s1.GetSnapshotId())}, &acq)
	if len(acq.UnavailableSnapshots) != 0 {
		t.Errorf("existing snapshot unavailable: %v", &acq)
	}
	mustCall(t, tn.coord, wire.AcquireKvSnapshotLease, &flusspb.AcquireKvSnapshotLeaseRequest{LeaseId: proto.String("job-2"), LeaseDurationMs: proto.Int64(600_000),
		SnapshotsToLease: leaseOf(id, 999)}, &acq)
	if len(acq.UnavailableSnapshots) != 1 || acq.UnavailableSnapshots[0].BucketSnapshots[0].GetSnapshotId() != 999 {
		t.Errorf("a missing snapshot is not reported unavailable: %v", &acq)
	}
	err = call(t, tn.coord, wire.AcquireKvSnapshotLease, &flusspb.AcquireKvSnapshotLeaseRequest{LeaseId: proto.String("job-3"), LeaseDurationMs: proto.Int64(1000),
		SnapshotsToLease: leaseOf(logID, 0)}, &acq)
	wantCode(t, err, ferr.NonPrimaryKeyTableException, "lease on a log table")
	err = call(t, tn.coord, wire.AcquireKvSnapshotLease, &flusspb.AcquireKvSnapshotLeaseRequest{LeaseId: proto.String("job-3"), LeaseDurationMs: proto.Int64(1000),
		SnapshotsToLease: leaseOf(4242, 0)}, &acq)
	wantCode(t, err, ferr.TableNotExist, "lease on a missing table")
	err = call(t, tn.tablet, wire.AcquireKvSnapshotLease, &flusspb.AcquireKvSnapshotLeaseRequest{LeaseId: proto.String("job-3"), LeaseDurationMs: proto.Int64(1000)}, &acq)
	wantCode(t, err, ferr.UnsupportedVersion, "lease on a tablet server")

	// The leased snapshot outlives the retained ones.
	for i := 0; i < 3; i++ {
		kvPut(t, tn.tablet, id, 1, types, []row.Datum{{I: int64(100 + i)}, {B: []byte("w")}})
		latestSnapshot(t, tn.coord, "snap_t", end+int64(i)+1)
	}
	time.Sleep(300 * time.Millisecond) // a cleanup pass
	mustCall(t, tn.coord, wire.GetKvSnapshotMetadata, &flusspb.GetKvSnapshotMetadataRequest{TableId: proto.Int64(id), BucketId: proto.Int32(0), SnapshotId: proto.Int64(s1.GetSnapshotId())}, &md)
	err = call(t, tn.coord, wire.GetKvSnapshotMetadata, &flusspb.GetKvSnapshotMetadataRequest{TableId: proto.Int64(id), BucketId: proto.Int32(0), SnapshotId: proto.Int64(s0.GetSnapshotId())}, &md)
	wantCode(t, err, ferr.KvSnapshotNotExist, "an old unleased snapshot after cleanup")

	release := &flusspb.ReleaseKvSnapshotLeaseRequest{LeaseId: proto.String("job-1"),
		BucketsToRelease: []*flusspb.PbTableBucket{{TableId: proto.Int64(id), BucketId: proto.Int32(0)}}}
	mustCall(t, tn.coord, wire.ReleaseKvSnapshotLease, release, &flusspb.ReleaseKvSnapshotLeaseResponse{})
	mustCall(t, tn.coord, wire.DropKvSnapshotLease, &flusspb.DropKvSnapshotLeaseRequest{LeaseId: proto.String("job-2")}, &flusspb.DropKvSnapshotLeaseResponse{})
	mustCall(t, tn.coord, wire.DropKvSnapshotLease, &flusspb.DropKvSnapshotLeaseRequest{LeaseId: proto.String("unknown")}, &flusspb.DropKvSnapshotLeaseResponse{})
	deadline := time.Now().Add(10 * time.Second)
	for {
		err = call(t, tn.coord, wire.GetKvSnapshotMetadata, &flusspb.GetKvSnapshotMetadataRequest{TableId: proto.Int64(id), BucketId: proto.Int32(0), SnapshotId: proto.Int64(s1.GetSnapshotId())}, &md)
		if ferr.CodeOf(err) == ferr.KvSnapshotNotExist {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("released snapshot still served: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}

	// Snapshot metadata survives a restart.
	before := latestSnapshot(t, tn.coord, "snap_t", 0)
	tn.close()
	tn = startNode(t, dir, map[string]string{"kv.snapshot.interval": "1h"})
	after := latestSnapshot(t, tn.coord, "snap_t", 0)
	if after.GetSnapshotId() != before.GetSnapshotId() || after.GetLogOffset() != before.GetLogOffset() {
		t.Errorf("after a restart latest snapshot %v, before %v", after, before)
	}
}

func listOffset(t *testing.T, tablet *wire.ClientConn, tableID int64, typ int32) int64 {
	t.Helper()
	var offs flusspb.ListOffsetsResponse
	mustCall(t, tablet, wire.ListOffsets, &flusspb.ListOffsetsRequest{FollowerServerId: proto.Int32(-1), OffsetType: proto.Int32(typ),
		TableId: proto.Int64(tableID), BucketId: []int32{0}}, &offs)
	if c := offs.BucketsResp[0].GetErrorCode(); c != 0 {
		t.Fatalf("LIST_OFFSETS: %d %s", c, offs.BucketsResp[0].GetErrorMessage())
	}
	return offs.BucketsResp[0].GetOffset()
}

// TestRetentionKeepsChangelogFromSnapshots: log retention never trims a primary-key changelog
// that no snapshot covers (no snapshot: nothing is trimmed), and once snapshots exist the log
// start offset stays at or below the latest snapshot's log offset.
func TestRetentionKeepsChangelogFromSnapshots(t *testing.T) {
	dir := t.TempDir()
	set := map[string]string{"log.segment.file-size": "1kb", "log.retention.check-interval": "100ms", "kv.snapshot.interval": "1h"}
	tn := startNode(t, dir, set)
	d := metadata.TableDescriptor{
		Schema: metadata.Schema{Columns: []metadata.Column{{Name: "id", Type: intType}, {Name: "v", Type: stringType}},
			PrimaryKey: []string{"id"}},
		BucketCount: 1, Properties: map[string]string{"table.kv.format": "COMPACTED", "table.log.ttl": "1ms"}, CustomProperties: map[string]string{},
	}
	id := createTable(t, tn.coord, "trimmed", d)
	types := []metadata.DataType{intType, stringType}
	pad := strings.Repeat("x", 300)
	for i := 0; i < 30; i++ {
		kvPut(t, tn.tablet, id, 1, types, []row.Datum{{I: int64(i)}, {B: []byte(pad)}})
	}
	time.Sleep(500 * time.Millisecond) // several retention passes
	if start := listOffset(t, tn.tablet, id, 0); start != 0 {
		t.Fatalf("log start offset %d with no snapshot of the table", start)
	}

	tn.close()
	set["kv.snapshot.interval"] = "100ms"
	tn = startNode(t, dir, set)
	end := listOffset(t, tn.tablet, id, 1)
	latestSnapshot(t, tn.coord, "trimmed", end)
	deadline := time.Now().Add(15 * time.Second)
	for listOffset(t, tn.tablet, id, 0) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("retention trimmed nothing though a snapshot covers the changelog")
		}
		time.Sleep(50 * time.Millisecond)
	}
	start := listOffset(t, tn.tablet, id, 0)
	s := latestSnapshot(t, tn.coord, "trimmed", 0)
	if start > s.GetLogOffset() {
		t.Fatalf("log start offset %d is past the latest snapshot's log offset %d", start, s.GetLogOffset())
	}
}
