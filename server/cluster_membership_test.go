package server

import (
	"context"
	"slices"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
)

// TestClusterMembershipThroughStandby sends the membership APIs to a standby coordinator,
// which forwards them to the active one: a live server is tagged TEMPORARY_OFFLINE, a
// rebalance moves every replica off it, and progress read through the standby reports
// COMPLETED; the tag is then removed. A PERMANENT_OFFLINE server gets no replica of a new
// table.
func TestClusterMembershipThroughStandby(t *testing.T) {
	tc := startTestCluster(t, 3)
	act := tc.active()
	standby := (act + 1) % 3
	tagged := int32((act+2)%3 + 1)
	sc := tc.dial(standby, "coordinator")
	if err := createClusterTable(sc, "spread", 3, 2); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	err := sc.Call(ctx, wire.AddServerTag, &flusspb.AddServerTagRequest{ServerIds: []int32{tagged}, ServerTag: proto.Int32(1)}, &flusspb.AddServerTagResponse{})
	if err != nil {
		t.Fatalf("ADD_SERVER_TAG through a standby: %v", err)
	}
	err = sc.Call(ctx, wire.AddServerTag, &flusspb.AddServerTagRequest{ServerIds: []int32{42}, ServerTag: proto.Int32(1)}, &flusspb.AddServerTagResponse{})
	if ferr.CodeOf(err) != ferr.ServerNotExistException {
		t.Fatalf("tag of server 42: %v, want SERVER_NOT_EXIST", err)
	}
	var rr flusspb.RebalanceResponse
	if err := sc.Call(ctx, wire.Rebalance, &flusspb.RebalanceRequest{Goals: []int32{0, 1}}, &rr); err != nil {
		t.Fatalf("REBALANCE through a standby: %v", err)
	}
	tc.waitFor("the rebalance to complete", func() bool {
		var pr flusspb.ListRebalanceProgressResponse
		err := sc.Call(ctx, wire.ListRebalanceProgress, &flusspb.ListRebalanceProgressRequest{RebalanceId: rr.RebalanceId}, &pr)
		return err == nil && pr.GetRebalanceStatus() == 3
	})
	for _, b := range metadataOf(t, tc.dial(act, "tablet-server"), "spread").TableMetadata[0].BucketMetadata {
		if slices.Contains(b.GetReplicaId(), tagged) || len(b.GetReplicaId()) != 2 || b.GetLeaderId() == tagged {
			t.Fatalf("bucket %d after the rebalance: %v", b.GetBucketId(), b)
		}
	}
	// New tables may still use a TEMPORARY_OFFLINE server (Fluss excludes PERMANENT_OFFLINE only).
	err = sc.Call(ctx, wire.RemoveServerTag, &flusspb.RemoveServerTagRequest{ServerIds: []int32{tagged}, ServerTag: proto.Int32(1)}, &flusspb.RemoveServerTagResponse{})
	if err != nil {
		t.Fatalf("REMOVE_SERVER_TAG through a standby: %v", err)
	}
	if tags := tc.nodes[act].Control().ServerTags(); len(tags) != 0 {
		t.Fatalf("tags after removal: %v", tags)
	}
	// A PERMANENT_OFFLINE server gets no replica of a new table.
	err = sc.Call(ctx, wire.AddServerTag, &flusspb.AddServerTagRequest{ServerIds: []int32{tagged}, ServerTag: proto.Int32(0)}, &flusspb.AddServerTagResponse{})
	if err != nil {
		t.Fatal(err)
	}
	if err := createClusterTable(sc, "without_tagged", 4, 2); err != nil {
		t.Fatal(err)
	}
	for _, b := range metadataOf(t, tc.dial(act, "tablet-server"), "without_tagged").TableMetadata[0].BucketMetadata {
		if slices.Contains(b.GetReplicaId(), tagged) {
			t.Fatalf("bucket %d of a new table on a PERMANENT_OFFLINE server: %v", b.GetBucketId(), b)
		}
	}
	if err := createClusterTable(sc, "too_wide", 1, 3); ferr.CodeOf(err) != ferr.InvalidReplicationFactor {
		t.Fatalf("RF 3 with one of three servers PERMANENT_OFFLINE: %v, want INVALID_REPLICATION_FACTOR", err)
	}
}
