package coordinator

import (
	"context"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/proto/flusspb"
	"github.com/stromdb/strom/server/cluster"
	"github.com/stromdb/strom/server/control"
)

// The single node's membership: its one server can be tagged, and a rebalance over it has
// nothing to move, so it completes at once.
func TestLocalMembership(t *testing.T) {
	ctx := context.Background()
	topo := cluster.NewTopology()
	topo.SetTabletServer(0, cluster.Endpoint{Listener: "FLUSS", Host: "127.0.0.1", Port: 9124})
	c := newTestCatalog(t, newMemStore())
	if err := c.CreateTable(ctx, cluster.TablePath{Database: DefaultDatabase, Table: "t"}, tableJSON(3, nil), false); err != nil {
		t.Fatal(err)
	}
	l := &localMembership{topo: topo, catalog: c.cache}

	wantCode(t, l.AddServerTag(ctx, []int32{5}, control.ServerTag(0)), ferr.ServerNotExistException, "tagging an unknown server")
	if err := l.AddServerTag(ctx, []int32{0}, control.ServerTag(1)); err != nil {
		t.Fatal(err)
	}
	wantCode(t, l.AddServerTag(ctx, []int32{0}, control.ServerTag(0)), ferr.SeverTagAlreadyExistException, "a second, different tag")
	wantCode(t, l.RemoveServerTag(ctx, []int32{0}, control.ServerTag(0)), ferr.SeverTagNotExistException, "removing a tag the server does not have")
	if err := l.RemoveServerTag(ctx, []int32{0}, control.ServerTag(1)); err != nil {
		t.Fatal(err)
	}

	if r, err := l.RebalanceProgress(""); err != nil || r != nil {
		t.Fatalf("progress before any rebalance: %v, %v", r, err)
	}
	wantCode(t, l.CancelRebalance(ctx, ""), ferr.NoRebalanceInProgressException, "cancel before any rebalance")
	id, err := l.StartRebalance(ctx, []control.Goal{control.Goal(0)})
	if err != nil {
		t.Fatal(err)
	}
	r, err := l.RebalanceProgress(id)
	if err != nil || r.Status != control.StatusCompleted {
		t.Fatalf("progress of %s: %+v, %v; want COMPLETED", id, r, err)
	}
	_, err = l.RebalanceProgress("other")
	wantCode(t, err, ferr.NoRebalanceInProgressException, "progress of another rebalance")
}

// recordingMembership is a control plane that records the calls the service makes.
type recordingMembership struct {
	tagged []int32
	goals  []control.Goal
}

func (m *recordingMembership) AddServerTag(ctx context.Context, ids []int32, tag control.ServerTag) error {
	m.tagged = append(m.tagged, ids...)
	return nil
}
func (m *recordingMembership) RemoveServerTag(ctx context.Context, ids []int32, tag control.ServerTag) error {
	return errFenced
}
func (m *recordingMembership) StartRebalance(ctx context.Context, goals []control.Goal) (string, error) {
	m.goals = goals
	return "r1", nil
}
func (m *recordingMembership) RebalanceProgress(id string) (*control.Rebalance, error) {
	return &control.Rebalance{ID: "r1", Status: control.StatusCompleted, Moves: []control.BucketMove{
		{Bucket: cluster.Bucket{TableID: 3, PartitionID: cluster.NoPartition, Bucket: 1}, OriginalLeader: 1, NewLeader: 2},
		{Bucket: cluster.Bucket{TableID: 3, PartitionID: 8, Bucket: 0}, OriginalLeader: 2, NewLeader: 1},
	}}, nil
}
func (m *recordingMembership) CancelRebalance(ctx context.Context, id string) error { return nil }

func TestMembershipServiceValidatesAndDelegates(t *testing.T) {
	ctx := context.Background()
	ctl := &recordingMembership{}
	s := &membershipService{members: ctl}
	if _, err := s.handleAddServerTag(ctx, request(t, &flusspb.AddServerTagRequest{ServerIds: []int32{1, 2}, ServerTag: proto.Int32(0)})); err != nil {
		t.Fatal(err)
	}
	if len(ctl.tagged) != 2 {
		t.Fatalf("control plane tagged %v, want servers 1 and 2", ctl.tagged)
	}
	_, err := s.handleAddServerTag(ctx, request(t, &flusspb.AddServerTagRequest{ServerIds: []int32{1}, ServerTag: proto.Int32(7)}))
	wantCode(t, err, ferr.UnknownServerError, "tag 7")
	_, err = s.handleRemoveServerTag(ctx, request(t, &flusspb.RemoveServerTagRequest{ServerIds: []int32{1}, ServerTag: proto.Int32(0)}))
	wantCode(t, err, ferr.NotCoordinatorLeaderException, "the control plane's error")
	_, err = s.handleRebalance(ctx, request(t, &flusspb.RebalanceRequest{Goals: []int32{0, 9}}))
	wantCode(t, err, ferr.UnknownServerError, "goal 9")
	if ctl.goals != nil {
		t.Fatal("a rebalance with an invalid goal reached the control plane")
	}
	resp, err := s.handleListRebalanceProgress(ctx, request(t, &flusspb.ListRebalanceProgressRequest{}))
	if err != nil {
		t.Fatal(err)
	}
	p := resp.(*flusspb.ListRebalanceProgressResponse)
	if p.GetRebalanceId() != "r1" || len(p.GetTableProgress()) != 1 || len(p.GetTableProgress()[0].GetBucketsProgress()) != 2 {
		t.Fatalf("progress %v, want r1 with both moves under table 3", p)
	}
	if pid := p.GetTableProgress()[0].GetBucketsProgress()[1].GetRebalancePlan().PartitionId; pid == nil || *pid != 8 {
		t.Fatalf("partition of the second move: %v, want 8", pid)
	}
	if got := newMembershipService(access{}, nil, &localMembership{}).members; got == nil {
		t.Fatal("the single node has no membership")
	}
}
