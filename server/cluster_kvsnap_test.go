package server

import (
	"context"
	"fmt"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/fluss"
	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
)

// TestClusterKvSnapshotsOnEveryCoordinator: the leaders of a PK table's buckets, spread over
// three nodes, snapshot them; every coordinator — standbys included — answers
// GET_LATEST_KV_SNAPSHOTS with every bucket's snapshot (each node used to know only its own);
// a lease acquired through a standby is forwarded to the active coordinator and stored in
// etcd; after the active coordinator stops, its successor holds the lease and answers.
func TestClusterKvSnapshotsOnEveryCoordinator(t *testing.T) {
	tc := startTestCluster(t, 3, [2]string{"kv.snapshot.interval", "200ms"})
	ctx := context.Background()
	addrs := ""
	for i, n := range tc.nodes {
		if i > 0 {
			addrs += ","
		}
		addrs += n.Addr("coordinator")
	}
	conn, err := fluss.Connect(ctx, fluss.Config{BootstrapServers: addrs, WriterBatchTimeout: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	path := fluss.TablePath{Database: "fluss", Table: "snap"}
	desc := fluss.TableDescriptor{Schema: fluss.NewSchema([]fluss.Column{
		fluss.NewColumn("id", fluss.BigInt()), fluss.NewColumn("v", fluss.BigInt()),
	}, "id"), BucketCount: 3, Properties: map[string]string{"table.replication.factor": "3"}}
	if err := conn.Admin().CreateTable(ctx, path, desc, false); err != nil {
		t.Fatal(err)
	}
	table, err := conn.Table(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := table.NewUpsert().CreateWriter()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	var rs []*fluss.WriteResult
	for i := range int64(300) {
		r, err := w.Upsert(ctx, fluss.Row{i, i})
		if err != nil {
			t.Fatal(err)
		}
		rs = append(rs, r)
	}
	for _, r := range rs {
		if err := r.Wait(ctx); err != nil {
			t.Fatal(err)
		}
	}
	latest := func(i int) *flusspb.GetLatestKvSnapshotsResponse {
		var resp flusspb.GetLatestKvSnapshotsResponse
		req := &flusspb.GetLatestKvSnapshotsRequest{TablePath: &flusspb.PbTablePath{DatabaseName: proto.String("fluss"), TableName: proto.String("snap")}}
		if err := tc.dial(i, "coordinator").Call(ctx, wire.GetLatestKvSnapshots, req, &resp); err != nil {
			t.Fatalf("GET_LATEST_KV_SNAPSHOTS on node %d: %v", i+1, err)
		}
		return &resp
	}
	complete := func(i int) bool {
		resp := latest(i)
		for _, s := range resp.LatestSnapshots {
			if s.SnapshotId == nil || s.GetLogOffset() == 0 {
				return false
			}
		}
		return len(resp.LatestSnapshots) == 3
	}
	for i := range tc.nodes {
		tc.waitFor(fmt.Sprintf("node %d to list a snapshot of every bucket", i+1), func() bool { return complete(i) })
	}

	active := tc.active()
	standby := (active + 1) % 3
	tableID := latest(standby).GetTableId()
	var leases []*flusspb.PbKvSnapshotLeaseForBucket
	for _, s := range latest(standby).LatestSnapshots {
		leases = append(leases, &flusspb.PbKvSnapshotLeaseForBucket{BucketId: proto.Int32(s.GetBucketId()), SnapshotId: proto.Int64(s.GetSnapshotId())})
	}
	var acq flusspb.AcquireKvSnapshotLeaseResponse
	if err := tc.dial(standby, "coordinator").Call(ctx, wire.AcquireKvSnapshotLease, &flusspb.AcquireKvSnapshotLeaseRequest{
		LeaseId: proto.String("reader"), LeaseDurationMs: proto.Int64(60_000),
		SnapshotsToLease: []*flusspb.PbKvSnapshotLeaseForTable{{TableId: proto.Int64(tableID), BucketSnapshots: leases}},
	}, &acq); err != nil {
		t.Fatalf("acquire through a standby: %v", err)
	}
	if len(acq.UnavailableSnapshots) != 0 {
		t.Fatalf("unavailable: %v", acq.UnavailableSnapshots)
	}
	tc.waitFor("the lease on the active coordinator", func() bool { return len(tc.nodes[active].kvSnapshots.LeaseTables("reader")) == 1 })

	tc.stop(active)
	tc.waitFor("a new active coordinator", func() bool { return tc.active() >= 0 })
	next := tc.active()
	if got := tc.nodes[next].kvSnapshots.LeaseTables("reader"); len(got) != 1 || got[0] != tableID {
		t.Fatalf("the new active coordinator's leases: %v", got)
	}
	tc.waitFor("the new coordinator to list every bucket's snapshot", func() bool { return complete(next) })
	var drop flusspb.DropKvSnapshotLeaseResponse
	if err := tc.dial(next, "coordinator").Call(ctx, wire.DropKvSnapshotLease, &flusspb.DropKvSnapshotLeaseRequest{LeaseId: proto.String("reader")}, &drop); err != nil {
		t.Fatal(err)
	}
}
