// Package rebalance is membership changes (docs/cluster.md, "Membership changes"): server
// tags, the rebalance plan, and the moves that carry it out, with Fluss's vocabulary and
// numbers. Plan and the functions of decide.go are the decisions, pure; Rebalancer keeps the
// tags and the rebalance record as etcd has them and drives the moves on the active
// coordinator.
//
// Both records live in etcd and are written only by the active coordinator, through its
// fence:
//
//	servertags   {"<server id>": tag, ...}
//	rebalance    Record: the current (or last) rebalance, its plan and each move's status
//
// Every node reads both from its watch, so a coordinator that takes over knows the tags and
// continues a rebalance in progress: each move's next step is derived from the bucket's
// state in etcd (Step), so it does not matter at which step its predecessor stopped.
//
// A move of bucket b from replicas O to N (Kafka's reassignment, as Fluss does it):
//
//  1. Replicas := O ∪ N (BucketEpoch+1). The added replicas start as followers of the
//     current leader, with an empty log, and fetch from the leader's log start; a
//     primary-key follower applies the changelog to its own state as it fetches, after
//     loading the bucket's latest KV snapshot if the changelog no longer starts at 0.
//  2. Once every member of N is in the ISR (the leader adds a follower when it has caught
//     up): Replicas := N, leader := the planned leader (LeaderEpoch+1 if it changes),
//     ISR := ISR ∩ N (BucketEpoch+1). Replicas no longer listed stop and delete their copy.
//     When the leader changes and the old (live) leader is not in N, the leadership moves
//     first with Replicas and ISR unchanged, and the old leader leaves in the next step: kept
//     in the ISR it holds the new leader's high watermark until it has stopped leading, so no
//     read it answers misses a write its successor acknowledged (docs/cluster.md, "Moves").
//
// A move that does not finish within the move timeout is rolled back (the added replicas
// that are not in the ISR are removed again) and reported TIMEOUT, as Fluss times out a task.
package rebalance

import (
	"fmt"
	"slices"

	"github.com/stromdb/strom/server/cluster"
)

// ServerTag marks a tablet server for the rebalancer (Fluss's ServerTag, same numbers).
type ServerTag int32

const (
	// TagPermanentOffline: the server is leaving for good. It gets no replica of a new table
	// or partition, and a rebalance moves every replica it holds to other servers.
	TagPermanentOffline ServerTag = 0
	// TagTemporaryOffline: the server is about to go away for a while (an upgrade). A
	// rebalance moves its replicas away and gives it none, as Fluss's planner does; new
	// tables may still place replicas on it (Fluss excludes only PERMANENT_OFFLINE servers
	// from assignment).
	TagTemporaryOffline ServerTag = 1
)

func (t ServerTag) String() string {
	switch t {
	case TagPermanentOffline:
		return "PERMANENT_OFFLINE"
	case TagTemporaryOffline:
		return "TEMPORARY_OFFLINE"
	}
	return fmt.Sprintf("ServerTag(%d)", int32(t))
}

// ValidServerTag reports whether v is a tag Fluss defines.
func ValidServerTag(v int32) bool {
	return v == int32(TagPermanentOffline) || v == int32(TagTemporaryOffline)
}

// Goal is a rebalance goal (Fluss's GoalType, same numbers), in the order of priority given.
type Goal int32

const (
	// GoalReplicaDistribution evens out the number of replicas per eligible server.
	GoalReplicaDistribution Goal = 0
	// GoalLeaderDistribution evens out the number of leaderships per eligible server.
	GoalLeaderDistribution Goal = 1
	// GoalRackAware spreads a bucket's replicas over racks. Strom servers carry no rack, so
	// all are in one rack and this goal plans what GoalReplicaDistribution plans.
	GoalRackAware Goal = 2
)

// ValidGoal reports whether v is a goal Fluss defines.
func ValidGoal(v int32) bool { return v >= 0 && v <= int32(GoalRackAware) }

// Status is the status of a rebalance and of each of its bucket moves (Fluss's
// RebalanceStatus, same numbers).
type Status int32

const (
	StatusNotStarted  Status = 0
	StatusRebalancing Status = 1
	StatusFailed      Status = 2
	StatusCompleted   Status = 3
	StatusCanceled    Status = 4
	StatusTimeout     Status = 5
)

// Final reports whether the status no longer changes.
func (s Status) Final() bool {
	return s == StatusFailed || s == StatusCompleted || s == StatusCanceled || s == StatusTimeout
}

func (s Status) String() string {
	switch s {
	case StatusNotStarted:
		return "NOT_STARTED"
	case StatusRebalancing:
		return "REBALANCING"
	case StatusFailed:
		return "FAILED"
	case StatusCompleted:
		return "COMPLETED"
	case StatusCanceled:
		return "CANCELED"
	case StatusTimeout:
		return "TIMEOUT"
	}
	return fmt.Sprintf("RebalanceStatus(%d)", int32(s))
}

// Move is one bucket's part of a rebalance plan (Fluss's RebalancePlanForBucket) and its
// progress.
type Move struct {
	Bucket           cluster.Bucket `json:"bucket"`
	OriginalLeader   int32          `json:"original_leader"`
	NewLeader        int32          `json:"new_leader"`
	OriginalReplicas []int32        `json:"original_replicas"`
	NewReplicas      []int32        `json:"new_replicas"` // the new leader first
	Status           Status         `json:"status"`
	// Reason says why a move failed or is held (logged, and kept in etcd for operators).
	Reason string `json:"reason,omitempty"`
}

// Record is a rebalance's record in etcd.
type Record struct {
	ID        string `json:"id"`
	Status    Status `json:"status"`
	Goals     []Goal `json:"goals"`
	Moves     []Move `json:"moves"`
	CreatedMs int64  `json:"created_ms"`
}

func (r *Record) clone() *Record {
	if r == nil {
		return nil
	}
	c := *r
	c.Goals = slices.Clone(r.Goals)
	c.Moves = slices.Clone(r.Moves)
	return &c
}
