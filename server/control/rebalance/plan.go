package rebalance

import (
	"cmp"
	"slices"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/server/cluster"
)

// Plan computes the bucket moves that satisfy goals (in priority order) over the
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
func Plan(states map[cluster.Bucket]cluster.BucketState, live []int32, tags map[int32]ServerTag, goals []Goal) ([]Move, error) {
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
	var moves []Move
	for _, b := range buckets {
		st := states[b]
		if SameMembers(repl[b], st.Replicas) && leader[b] == st.Leader {
			continue
		}
		newReplicas := append([]int32{leader[b]}, slices.DeleteFunc(slices.Clone(repl[b]), func(id int32) bool { return id == leader[b] })...)
		moves = append(moves, Move{Bucket: b, OriginalLeader: st.Leader, NewLeader: leader[b],
			OriginalReplicas: slices.Clone(st.Replicas), NewReplicas: newReplicas, Status: StatusNotStarted})
	}
	return moves, nil
}

func compareBuckets(a, b cluster.Bucket) int {
	return cmp.Or(cmp.Compare(a.TableID, b.TableID), cmp.Compare(a.PartitionID, b.PartitionID), cmp.Compare(a.Bucket, b.Bucket))
}

// SameMembers reports whether a and b hold the same server ids (in any order).
func SameMembers(a, b []int32) bool {
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
