package tablet

import (
	"sync/atomic"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/server/cluster"
)

// handover is the fence a stopping tablet server closes before its controlled shutdown asks
// the coordinator to move its leaderships (docs/cluster.md, "Controlled shutdown").
//
// The coordinator moves a leadership by a compare-and-swap of the bucket's state in etcd and
// then notifies the replicas; the new leader serves from its notification on, the old one
// until it handles its own. Without the fence that is a window in which both answer: the new
// leader acknowledges an upsert, and a lookup the old leader answers from its own state
// returns the value before it — a stale read (found by TestRollingRestartUnderLoad's history
// check). Closed before the request, the fence makes every read and write the old leader
// answers precede the compare-and-swap, so none can miss a write of its successor.
//
// Invariant: once closed it stays closed for the life of the server.
type handover struct {
	closed atomic.Bool
}

// refuse returns NOT_LEADER_OR_FOLLOWER (retriable: clients refresh their metadata and find
// the new leader) once the fence is closed.
func (h *handover) refuse(server int32, b cluster.Bucket) error {
	if h == nil || !h.closed.Load() {
		return nil
	}
	return ferr.New(ferr.NotLeaderOrFollower, "tablet server %d is shutting down and hands its leadership of %s to another replica", server, b)
}

// HandOverLeaderships closes the hand-over fence: from now on the replicated buckets this
// server leads answer client reads and writes with NOT_LEADER_OR_FOLLOWER. Call it just
// before asking the coordinator to move them (a controlled shutdown); it cannot be undone,
// so only on the way out. Replication to followers goes on, so writes already appended
// still commit.
func (s *Server) HandOverLeaderships() {
	s.handover.closed.Store(true)
	s.leaders.log.Info("refusing client requests to the buckets this server leads: handing them over")
}
