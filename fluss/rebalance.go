package fluss

import (
	"context"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
)

// ServerTag marks a tablet server for rebalancing (Fluss's ServerTag).
type ServerTag int32

const (
	// PermanentOffline: the server is leaving for good. It gets no replica of a new table,
	// and a rebalance moves all its replicas to other servers. Tag a dead server this way to
	// replace it.
	PermanentOffline ServerTag = 0
	// TemporaryOffline: the server is going away for a while (an upgrade). A rebalance moves
	// its replicas away and gives it none.
	TemporaryOffline ServerTag = 1
)

func (t ServerTag) String() string {
	switch t {
	case PermanentOffline:
		return "PERMANENT_OFFLINE"
	case TemporaryOffline:
		return "TEMPORARY_OFFLINE"
	}
	return "UNKNOWN"
}

// RebalanceGoal is what a rebalance optimises (Fluss's GoalType), in the priority order given.
type RebalanceGoal int32

const (
	// ReplicaDistribution evens out the number of replicas per tablet server.
	ReplicaDistribution RebalanceGoal = 0
	// LeaderDistribution evens out the number of bucket leaderships per tablet server.
	LeaderDistribution RebalanceGoal = 1
	// RackAware spreads each bucket's replicas over racks (Strom servers carry no rack: it
	// plans what ReplicaDistribution plans).
	RackAware RebalanceGoal = 2
)

func (g RebalanceGoal) String() string {
	switch g {
	case ReplicaDistribution:
		return "REPLICA_DISTRIBUTION"
	case LeaderDistribution:
		return "LEADER_DISTRIBUTION"
	case RackAware:
		return "RACK_AWARE"
	}
	return "UNKNOWN"
}

// RebalanceStatus is the status of a rebalance or of one bucket's move (Fluss's
// RebalanceStatus).
type RebalanceStatus int32

const (
	RebalanceNotStarted RebalanceStatus = 0
	RebalanceRunning    RebalanceStatus = 1 // Fluss's REBALANCING
	RebalanceFailed     RebalanceStatus = 2
	RebalanceCompleted  RebalanceStatus = 3
	RebalanceCanceled   RebalanceStatus = 4
	RebalanceTimedOut   RebalanceStatus = 5 // Fluss's TIMEOUT
)

// Final reports whether the status no longer changes.
func (s RebalanceStatus) Final() bool {
	return s == RebalanceFailed || s == RebalanceCompleted || s == RebalanceCanceled || s == RebalanceTimedOut
}

func (s RebalanceStatus) String() string {
	switch s {
	case RebalanceNotStarted:
		return "NOT_STARTED"
	case RebalanceRunning:
		return "REBALANCING"
	case RebalanceFailed:
		return "FAILED"
	case RebalanceCompleted:
		return "COMPLETED"
	case RebalanceCanceled:
		return "CANCELED"
	case RebalanceTimedOut:
		return "TIMEOUT"
	}
	return "UNKNOWN"
}

// BucketMove is one bucket's part of a rebalance plan and its status.
type BucketMove struct {
	Bucket           TableBucket // PartitionID is NoPartition for a non-partitioned table
	OriginalLeader   int32
	NewLeader        int32
	OriginalReplicas []int32
	NewReplicas      []int32
	Status           RebalanceStatus
}

// RebalanceProgress is the state of the current (or last) rebalance.
type RebalanceProgress struct {
	ID     string
	Status RebalanceStatus
	Moves  []BucketMove
}

// Done returns the fraction of moves in a final status (1 for a plan without moves).
func (p *RebalanceProgress) Done() float64 {
	if len(p.Moves) == 0 {
		return 1
	}
	n := 0
	for _, m := range p.Moves {
		if m.Status.Final() {
			n++
		}
	}
	return float64(n) / float64(len(p.Moves))
}

// AddServerTag tags tablet servers, all or none. A server that is neither live nor holds a
// replica fails with ErrServerNotExist; a server that has another tag with
// ErrSeverTagAlreadyExist (remove it first). Needs ALTER on the cluster.
func (a *Admin) AddServerTag(ctx context.Context, serverIDs []int32, tag ServerTag) error {
	req := &flusspb.AddServerTagRequest{ServerIds: serverIDs, ServerTag: proto.Int32(int32(tag))}
	return a.conn.callCoordinator(ctx, wire.AddServerTag, req, &flusspb.AddServerTagResponse{})
}

// RemoveServerTag removes a tag from tablet servers, all or none; a server that has another
// tag fails with ErrSeverTagNotExist. Needs ALTER on the cluster.
func (a *Admin) RemoveServerTag(ctx context.Context, serverIDs []int32, tag ServerTag) error {
	req := &flusspb.RemoveServerTagRequest{ServerIds: serverIDs, ServerTag: proto.Int32(int32(tag))}
	return a.conn.callCoordinator(ctx, wire.RemoveServerTag, req, &flusspb.RemoveServerTagResponse{})
}

// Rebalance plans and starts a rebalance for goals (highest priority first) and returns its
// id: replicas move off tagged servers and, by the goals, between the others. One rebalance
// runs at a time: ErrRebalanceFailure while another is running, or when the plan is
// impossible (no server left to take a tagged server's replicas). Follow it with
// ListRebalanceProgress. Needs WRITE on the cluster.
func (a *Admin) Rebalance(ctx context.Context, goals ...RebalanceGoal) (string, error) {
	req := &flusspb.RebalanceRequest{}
	for _, g := range goals {
		req.Goals = append(req.Goals, int32(g))
	}
	var resp flusspb.RebalanceResponse
	if err := a.conn.callCoordinator(ctx, wire.Rebalance, req, &resp); err != nil {
		return "", err
	}
	return resp.GetRebalanceId(), nil
}

// ListRebalanceProgress returns the current or last rebalance (id "": whichever it is), or
// nil if there has been none. An id that is not the current one fails with
// ErrNoRebalanceInProgress. Needs DESCRIBE on the cluster.
func (a *Admin) ListRebalanceProgress(ctx context.Context, id string) (*RebalanceProgress, error) {
	req := &flusspb.ListRebalanceProgressRequest{}
	if id != "" {
		req.RebalanceId = proto.String(id)
	}
	var resp flusspb.ListRebalanceProgressResponse
	if err := a.conn.callCoordinator(ctx, wire.ListRebalanceProgress, req, &resp); err != nil {
		return nil, err
	}
	if resp.RebalanceId == nil {
		return nil, nil
	}
	p := &RebalanceProgress{ID: resp.GetRebalanceId(), Status: RebalanceStatus(resp.GetRebalanceStatus())}
	for _, t := range resp.GetTableProgress() {
		for _, b := range t.GetBucketsProgress() {
			pl := b.GetRebalancePlan()
			pid := NoPartition
			if pl.PartitionId != nil {
				pid = pl.GetPartitionId()
			}
			p.Moves = append(p.Moves, BucketMove{
				Bucket:         TableBucket{TableID: t.GetTableId(), PartitionID: pid, Bucket: pl.GetBucketId()},
				OriginalLeader: pl.GetOriginalLeader(), NewLeader: pl.GetNewLeader(),
				OriginalReplicas: pl.GetOriginalReplicas(), NewReplicas: pl.GetNewReplicas(),
				Status: RebalanceStatus(b.GetRebalanceStatus()),
			})
		}
	}
	return p, nil
}

// CancelRebalance cancels the current rebalance (id "": whichever it is): moves not yet
// started are canceled, a move already copying runs to its end. A finished rebalance is
// left as it is; no rebalance, or another id, fails with ErrNoRebalanceInProgress. Needs
// WRITE on the cluster.
func (a *Admin) CancelRebalance(ctx context.Context, id string) error {
	req := &flusspb.CancelRebalanceRequest{}
	if id != "" {
		req.RebalanceId = proto.String(id)
	}
	return a.conn.callCoordinator(ctx, wire.CancelRebalance, req, &flusspb.CancelRebalanceResponse{})
}
