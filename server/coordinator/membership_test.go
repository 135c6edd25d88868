package coordinator_test

import (
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
	"github.com/stromdb/strom/server/auth"
)

// The membership APIs are authorised as Fluss's CoordinatorService does: ALTER on the
// cluster for server tags, WRITE for REBALANCE and CANCEL_REBALANCE, DESCRIBE for
// LIST_REBALANCE_PROGRESS; and they validate tags and goals.
func TestMembershipAPIsAuthorization(t *testing.T) {
	n := secureNode(t, t.TempDir())
	admin, bob := login(t, n, "admin"), login(t, n, "bob")
	addTag := func(c *wire.ClientConn, tag int32) error {
		return call(t, c, wire.AddServerTag, &flusspb.AddServerTagRequest{ServerIds: []int32{0}, ServerTag: proto.Int32(tag)}, &flusspb.AddServerTagResponse{})
	}
	removeTag := func(c *wire.ClientConn) error {
		return call(t, c, wire.RemoveServerTag, &flusspb.RemoveServerTagRequest{ServerIds: []int32{0}, ServerTag: proto.Int32(0)}, &flusspb.RemoveServerTagResponse{})
	}
	rebalance := func(c *wire.ClientConn, goals ...int32) error {
		return call(t, c, wire.Rebalance, &flusspb.RebalanceRequest{Goals: goals}, &flusspb.RebalanceResponse{})
	}
	list := func(c *wire.ClientConn) error {
		return call(t, c, wire.ListRebalanceProgress, &flusspb.ListRebalanceProgressRequest{}, &flusspb.ListRebalanceProgressResponse{})
	}
	cancel := func(c *wire.ClientConn) error {
		return call(t, c, wire.CancelRebalance, &flusspb.CancelRebalanceRequest{}, &flusspb.CancelRebalanceResponse{})
	}
	for what, err := range map[string]error{"ADD_SERVER_TAG": addTag(bob.coord, 0), "REMOVE_SERVER_TAG": removeTag(bob.coord),
		"REBALANCE": rebalance(bob.coord, 0), "LIST_REBALANCE_PROGRESS": list(bob.coord), "CANCEL_REBALANCE": cancel(bob.coord)} {
		wantCode(t, err, ferr.AuthorizationException, what)
	}
	grant := func(op auth.Operation) {
		mustCall(t, admin.coord, wire.CreateAcls, &flusspb.CreateAclsRequest{Acl: []*flusspb.PbAclInfo{aclInfo(auth.ResourceCluster, auth.ClusterName, "bob", op)}}, &flusspb.CreateAclsResponse{})
	}
	grant(auth.OpDescribe)
	if err := list(bob.coord); err != nil {
		t.Fatalf("LIST_REBALANCE_PROGRESS with DESCRIBE: %v", err)
	}
	wantCode(t, rebalance(bob.coord, 0), ferr.AuthorizationException, "REBALANCE with DESCRIBE")
	grant(auth.OpWrite)
	if err := rebalance(bob.coord, 0, 1); err != nil {
		t.Fatalf("REBALANCE with WRITE: %v", err)
	}
	if err := cancel(bob.coord); err != nil {
		t.Fatalf("CANCEL_REBALANCE with WRITE: %v", err)
	}
	wantCode(t, addTag(bob.coord, 0), ferr.AuthorizationException, "ADD_SERVER_TAG with WRITE")
	grant(auth.OpAlter)
	if err := addTag(bob.coord, 0); err != nil {
		t.Fatalf("ADD_SERVER_TAG with ALTER: %v", err)
	}
	if err := removeTag(bob.coord); err != nil {
		t.Fatalf("REMOVE_SERVER_TAG with ALTER: %v", err)
	}
	wantCode(t, addTag(admin.coord, 7), ferr.UnknownServerError, "ADD_SERVER_TAG of tag 7")
	wantCode(t, rebalance(admin.coord, 9), ferr.UnknownServerError, "REBALANCE of goal 9")
}
