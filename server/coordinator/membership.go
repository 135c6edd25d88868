package coordinator

import (
	"context"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/server/auth"
	"github.com/stromdb/strom/server/control"
)

// Membership changes: ADD_SERVER_TAG (1047), REMOVE_SERVER_TAG (1048), REBALANCE (1049),
// LIST_REBALANCE_PROGRESS (1050), CANCEL_REBALANCE (1051). In a cluster server/control runs
// them (tags and the plan in etcd, moves as fenced bucket-state transactions); a standby
// forwards them to the active coordinator like every admin request. Authorization is
// Fluss's: ALTER on the cluster for tags, WRITE for REBALANCE and CANCEL_REBALANCE,
// DESCRIBE for LIST_REBALANCE_PROGRESS.

// Membership is what the coordinator needs from the control plane for these APIs
// (control.Control implements it). Every method fails with NOT_COORDINATOR_LEADER on a
// node that is not the active coordinator, which makes a standby forward the request.
type Membership interface {
	AddServerTag(ctx context.Context, ids []int32, tag control.ServerTag) error
	RemoveServerTag(ctx context.Context, ids []int32, tag control.ServerTag) error
	StartRebalance(ctx context.Context, goals []control.Goal) (string, error)
	RebalanceProgress(id string) (*control.Rebalance, error)
	CancelRebalance(ctx context.Context, id string) error
}

// membershipService serves the membership APIs: it holds no state of its own; members is
// the control plane in a cluster, or the single node's localMembership.
type membershipService struct {
	access  access
	members Membership
}

var membershipAPIs apiTable[*membershipService]

// newMembershipService runs the membership APIs on cl when it implements Membership, and on
// a localMembership of the single node otherwise.
func newMembershipService(a access, cl Cluster, local *localMembership) *membershipService {
	if m, ok := cl.(Membership); ok {
		return &membershipService{access: a, members: m}
	}
	return &membershipService{access: a, members: local}
}

func serverTagOf(v int32) (control.ServerTag, error) {
	if !control.ValidServerTag(v) {
		return 0, ferr.New(ferr.UnknownServerError, "Value %d must be one of [PERMANENT_OFFLINE(0), TEMPORARY_OFFLINE(1)]", v)
	}
	return control.ServerTag(v), nil
}

// serverTagRequest is ADD_SERVER_TAG's or REMOVE_SERVER_TAG's request: both name servers and
// one tag.
type serverTagRequest interface {
	proto.Message
	GetServerIds() []int32
	GetServerTag() int32
}

// decodeServerTag decodes r and checks ALTER on the cluster, as Fluss does for both tag APIs.
func (m *membershipService) decodeServerTag(req *wire.Request, r serverTagRequest) (control.ServerTag, error) {
	if err := req.Decode(r); err != nil {
		return 0, err
	}
	if err := m.access.authorize(req, auth.OpAlter, auth.ClusterResource()); err != nil {
		return 0, err
	}
	return serverTagOf(r.GetServerTag())
}
