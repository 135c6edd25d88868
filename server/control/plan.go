package control

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/stromdb/strom/internal/ferr"
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

// RebalanceStatus is the status of a rebalance and of each of its bucket moves (Fluss's
// RebalanceStatus, same numbers).
type RebalanceStatus int32

const (
	StatusNotStarted  RebalanceStatus = 0
	StatusRebalancing RebalanceStatus = 1
	StatusFailed      RebalanceStatus = 2
	StatusCompleted   RebalanceStatus = 3
	StatusCanceled    RebalanceStatus = 4
	StatusTimeout     RebalanceStatus = 5
)

// Final reports whether the status no longer changes.
func (s RebalanceStatus) Final() bool {
	return s == StatusFailed || s == StatusCompleted || s == StatusCanceled || s == StatusTimeout
}

func (s RebalanceStatus) String() string {
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

// BucketMove is one bucket's part of a rebalance plan (Fluss's RebalancePlanForBucket) and
// its progress.
type BucketMove struct {
	Bucket           cluster.Bucket  `json:"bucket"`
	OriginalLeader   int32           `json:"original_leader"`
	NewLeader        int32           `json:"new_leader"`
	OriginalReplicas []int32         `json:"original_replicas"`
	NewReplicas      []int32         `json:"new_replicas"` // the new leader first
	Status           RebalanceStatus `json:"status"`
	// Reason says why a move failed or is held (logged, and kept in etcd for operators).
	Reason string `json:"reason,omitempty"`
}

// PlanRebalance computes the bucket moves that satisfy goals (in priority order) over the
// current bucket states. Rules (docs/cluster.md, "Membership changes"):
//
//   - Eligible servers are the live ones without a tag; only they receive replicas or
//     leaderships.
//   - Every goal first moves every replica off a tagged server (live or not) to the
//     eligible server with the fewest replicas that holds none of the bucket; when no such
//     server exists the whole rebalance fails with REBALANCE_FAILURE, and nothing is moved.
//   - A dead server without a tag keeps its replicas (it may restart) and gets no new ones.
//   - A bucket without a live leader cannot copy its data to a new replica: it is left out.
//   - GoalReplicaDistribution (and GoalRackAware) then moves replicas from the most to the
//     least loaded eligible server until they differ by at most one; GoalLeaderDistribution
//     moves leaderships between a bucket's replicas the same way.
//
// With no goal the plan is empty, as in Fluss. The result is sorted by bucket.
func PlanRebalance(states map[cluster.Bucket]cluster.BucketState, live []int32, tags map[int32]ServerTag, goals []Goal) ([]BucketMove, error) {
	if len(goals) == 0 {
		return nil, nil
	}
	isLive := func(id int32) bool { return slices.Contains(live, id) }
	var eligible []int32
	for _, id := range live {
		if _, tagged := tags[id]; !tagged {
			eligible = append(eligible, id)
		}
	}
	slices.Sort(eligible)
	buckets := make([]cluster.Bucket, 0, len(states))
	for b, st := range states {
		if st.Leader != cluster.NoLeader && isLive(st.Leader) {
			buckets = append(buckets, b)
		}
	}
	slices.SortFunc(buckets, compareBuckets)

	repl := make(map[cluster.Bucket][]int32, len(buckets))
	count := map[int32]int{}
	for _, id := range eligible {
		count[id] = 0
	}
	for _, b := range buckets {
		repl[b] = slices.Clone(states[b].Replicas)
		for _, r := range repl[b] {
			if _, ok := count[r]; ok {
				count[r]++
			}
		}
	}
	leastLoaded := func(load map[int32]int, ok func(int32) bool) (int32, bool) {
		best, found := int32(0), false
		for _, id := range eligible {
			if ok(id) && (!found || load[id] < load[best]) {
				best, found = id, true
			}
		}
		return best, found
	}
	// Evacuate tagged servers.
	for _, b := range buckets {
		for i, r := range repl[b] {
			if _, tagged := tags[r]; !tagged {
				continue
			}
			to, ok := leastLoaded(count, func(id int32) bool { return !slices.Contains(repl[b], id) })
			if !ok {
				return nil, ferr.New(ferr.RebalanceFailureException, "cannot move the replica of %s off tablet server %d (tagged %s): no live untagged tablet server without a replica of the bucket is left", b, r, tags[r])
			}
			repl[b][i] = to
			count[to]++
		}
	}
	wantReplicas := slices.Contains(goals, GoalReplicaDistribution) || slices.Contains(goals, GoalRackAware)
	if wantReplicas && len(eligible) > 1 {
		for range len(buckets) * 4 {
			hi, lo := eligible[0], eligible[0]
			for _, id := range eligible {
				if count[id] > count[hi] {
					hi = id
				}
				if count[id] < count[lo] {
					lo = id
				}
			}
			if count[hi]-count[lo] <= 1 {
				break
			}
			moved := false
			// Prefer moving a follower: a leader's move also moves its leadership.
			for _, followersOnly := range []bool{true, false} {
				for _, b := range buckets {
					i := slices.Index(repl[b], hi)
					if i < 0 || slices.Contains(repl[b], lo) || (followersOnly && states[b].Leader == hi) {
						continue
					}
					repl[b][i] = lo
					count[hi]--
					count[lo]++
					moved = true
					break
				}
				if moved {
					break
				}
			}
			if !moved {
				break
			}
		}
	}
	// Leaders: the current one if it keeps a replica, else a replica that already holds the
	// data (in the ISR), else the first new one.
	leader := make(map[cluster.Bucket]int32, len(buckets))
	for _, b := range buckets {
		st := states[b]
		l := st.Leader
		if !slices.Contains(repl[b], l) {
			l = repl[b][0]
			for _, r := range repl[b] {
				if st.InISR(r) && isLive(r) {
					l = r
					break
				}
			}
		}
		leader[b] = l
	}
	if slices.Contains(goals, GoalLeaderDistribution) && len(eligible) > 1 {
		lcount := map[int32]int{}
		for _, id := range eligible {
			lcount[id] = 0
		}
		for _, b := range buckets {
			if _, ok := lcount[leader[b]]; ok {
				lcount[leader[b]]++
			}
		}
		for range len(buckets) * 2 {
			hi := eligible[0]
			for _, id := range eligible {
				if lcount[id] > lcount[hi] {
					hi = id
				}
			}
			moved := false
			for _, b := range buckets {
				if leader[b] != hi {
					continue
				}
				to, ok := leastLoaded(lcount, func(id int32) bool { return slices.Contains(repl[b], id) })
				if ok && lcount[hi]-lcount[to] > 1 {
					leader[b] = to
					lcount[hi]--
					lcount[to]++
					moved = true
					break
				}
			}
			if !moved {
				break
			}
		}
	}
	var moves []BucketMove
	for _, b := range buckets {
		st := states[b]
		if sameMembers(repl[b], st.Replicas) && leader[b] == st.Leader {
			continue
		}
		newReplicas := append([]int32{leader[b]}, slices.DeleteFunc(slices.Clone(repl[b]), func(id int32) bool { return id == leader[b] })...)
		moves = append(moves, BucketMove{Bucket: b, OriginalLeader: st.Leader, NewLeader: leader[b],
			OriginalReplicas: slices.Clone(st.Replicas), NewReplicas: newReplicas, Status: StatusNotStarted})
	}
	return moves, nil
}

func compareBuckets(a, b cluster.Bucket) int {
	return cmp.Or(cmp.Compare(a.TableID, b.TableID), cmp.Compare(a.PartitionID, b.PartitionID), cmp.Compare(a.Bucket, b.Bucket))
}

// sameMembers reports whether a and b hold the same server ids (in any order).
func sameMembers(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for _, id := range a {
		if !slices.Contains(b, id) {
			return false
		}
	}
	return true
}
