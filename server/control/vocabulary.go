package control

import (
	"github.com/stromdb/strom/server/cluster"
	"github.com/stromdb/strom/server/control/bucketstate"
	"github.com/stromdb/strom/server/control/election"
	"github.com/stromdb/strom/server/control/membership"
	"github.com/stromdb/strom/server/control/rebalance"
)

// The vocabulary of the control plane that its callers (the server's wiring, the
// coordinator's membership APIs) use, named here so that they import this package only. Each
// is defined by the concern that owns it.

// Registration is what a tablet server publishes under servers/<id> while it lives.
type Registration = membership.Registration

// CoordinatorInfo is the value of a coordinator's election key.
type CoordinatorInfo = election.CoordinatorInfo

// BucketKey is the key of a bucket's state.
func BucketKey(b cluster.Bucket) string { return bucketstate.Key(b) }

// Membership changes (package rebalance).
type (
	ServerTag       = rebalance.ServerTag
	Goal            = rebalance.Goal
	RebalanceStatus = rebalance.Status
	BucketMove      = rebalance.Move
	Rebalance       = rebalance.Record
)

const (
	TagPermanentOffline = rebalance.TagPermanentOffline
	TagTemporaryOffline = rebalance.TagTemporaryOffline

	GoalReplicaDistribution = rebalance.GoalReplicaDistribution
	GoalLeaderDistribution  = rebalance.GoalLeaderDistribution
	GoalRackAware           = rebalance.GoalRackAware

	StatusNotStarted  = rebalance.StatusNotStarted
	StatusRebalancing = rebalance.StatusRebalancing
	StatusFailed      = rebalance.StatusFailed
	StatusCompleted   = rebalance.StatusCompleted
	StatusCanceled    = rebalance.StatusCanceled
	StatusTimeout     = rebalance.StatusTimeout
)

// ValidServerTag reports whether v is a tag Fluss defines.
func ValidServerTag(v int32) bool { return rebalance.ValidServerTag(v) }

// ValidGoal reports whether v is a goal Fluss defines.
func ValidGoal(v int32) bool { return rebalance.ValidGoal(v) }

// PlanRebalance computes the moves that satisfy goals (rebalance.Plan), over the servers'
// racks when they have them (racks: tablet-server.rack by id; nil for none).
func PlanRebalance(states map[cluster.Bucket]cluster.BucketState, live []int32, racks map[int32]string, tags map[int32]ServerTag, goals []Goal) ([]BucketMove, error) {
	return rebalance.Plan(states, live, racks, tags, goals)
}
