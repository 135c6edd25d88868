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
//   - GoalRackAware first moves replicas so each bucket covers min(replicas, racks) racks
//     (plan_racks.go), when every eligible server has a rack (racks: tablet-server.rack by
//     server id); with racks, no move of any goal lowers the racks a bucket covers.
//   - GoalReplicaDistribution (and GoalRackAware) then moves replicas from the most to the
//     least loaded eligible server until they differ by at most one; GoalLeaderDistribution
//     moves leaderships between a bucket's replicas the same way.
//
// With no goal the plan is empty, as in Fluss. The result is sorted by bucket.
func Plan(states map[cluster.Bucket]cluster.BucketState, live []int32, racks map[int32]string, tags map[int32]ServerTag, goals []Goal) ([]Move, error) {
	if len(goals) == 0 {
		return nil, nil
	}
	p := newPlanner(states, live, tags)
	p.setRacks(racks)
	if err := p.evacuate(); err != nil {
		return nil, err
	}
	if slices.Contains(goals, GoalRackAware) {
		p.spreadRacks()
	}
	if slices.Contains(goals, GoalReplicaDistribution) || slices.Contains(goals, GoalRackAware) {
		p.spreadReplicas()
	}
	p.chooseLeaders()
	if slices.Contains(goals, GoalLeaderDistribution) {
		p.spreadLeaders()
	}
	return p.moves(), nil
}

// planner holds a plan being made: each planned bucket's new replica set and leader, and
// the replicas per eligible server.
type planner struct {
	states   map[cluster.Bucket]cluster.BucketState
	tags     map[int32]ServerTag
	isLive   func(int32) bool
	eligible []int32          // live and untagged, sorted
	buckets  []cluster.Bucket // those with a live leader, sorted
	repl     map[cluster.Bucket][]int32
	count    map[int32]int // replicas per eligible server
	leader   map[cluster.Bucket]int32
	racks    map[int32]string // tablet-server.rack by server id
	numRacks int              // racks of the eligible servers; 0: the plan ignores racks
}

func newPlanner(states map[cluster.Bucket]cluster.BucketState, live []int32, tags map[int32]ServerTag) *planner {
	p := &planner{states: states, tags: tags, isLive: func(id int32) bool { return slices.Contains(live, id) },
		repl: map[cluster.Bucket][]int32{}, count: map[int32]int{}, leader: map[cluster.Bucket]int32{}}
	for _, id := range live {
		if _, tagged := tags[id]; !tagged {
			p.eligible = append(p.eligible, id)
		}
	}
	slices.Sort(p.eligible)
	for b, st := range states {
		if st.Leader != cluster.NoLeader && p.isLive(st.Leader) {
			p.buckets = append(p.buckets, b)
		}
	}
	slices.SortFunc(p.buckets, compareBuckets)
	for _, id := range p.eligible {
		p.count[id] = 0
	}
	for _, b := range p.buckets {
		p.repl[b] = slices.Clone(states[b].Replicas)
		for _, r := range p.repl[b] {
			if _, ok := p.count[r]; ok {
				p.count[r]++
			}
		}
	}
	return p
}

// leastLoaded returns the eligible server with the lowest load among those ok accepts (the
// lowest id on a tie).
func (p *planner) leastLoaded(load map[int32]int, ok func(int32) bool) (int32, bool) {
	best, found := int32(0), false
	for _, id := range p.eligible {
		if ok(id) && (!found || load[id] < load[best]) {
			best, found = id, true
		}
	}
	return best, found
}

// evacuate moves every replica on a tagged server to the least loaded eligible server that
// holds none of the bucket; REBALANCE_FAILURE when there is none.
func (p *planner) evacuate() error {
	for _, b := range p.buckets {
		for i, r := range p.repl[b] {
			if _, tagged := p.tags[r]; !tagged {
				continue
			}
			to, ok := p.leastLoaded(p.count, func(id int32) bool { return !slices.Contains(p.repl[b], id) && p.newRack(b, i, id) })
			if !ok {
				to, ok = p.leastLoaded(p.count, func(id int32) bool { return !slices.Contains(p.repl[b], id) })
			}
			if !ok {
				return ferr.New(ferr.RebalanceFailureException, "cannot move the replica of %s off tablet server %d (tagged %s): no live untagged tablet server without a replica of the bucket is left", b, r, p.tags[r])
			}
			p.repl[b][i] = to
			p.count[to]++
		}
	}
	return nil
}

// spreadReplicas moves replicas from the most to the least loaded eligible server until
// they differ by at most one, preferring followers (a leader's move also moves its
// leadership).
func (p *planner) spreadReplicas() {
	if len(p.eligible) <= 1 {
		return
	}
	for range len(p.buckets) * 4 {
		hi, lo := p.eligible[0], p.eligible[0]
		for _, id := range p.eligible {
			if p.count[id] > p.count[hi] {
				hi = id
			}
			if p.count[id] < p.count[lo] {
				lo = id
			}
		}
		if p.count[hi]-p.count[lo] <= 1 {
			return
		}
		if !p.moveReplica(hi, lo, true) && !p.moveReplica(hi, lo, false) {
			return
		}
	}
}

// moveReplica moves one replica from server hi to lo, of the first bucket that has one on hi
// and none on lo (and, followersOnly, is not led by hi). It reports whether it found one.
func (p *planner) moveReplica(hi, lo int32, followersOnly bool) bool {
	for _, b := range p.buckets {
		i := slices.Index(p.repl[b], hi)
		if i < 0 || slices.Contains(p.repl[b], lo) || (followersOnly && p.states[b].Leader == hi) || !p.keepsRacks(b, i, lo) {
			continue
		}
		p.repl[b][i] = lo
		p.count[hi]--
		p.count[lo]++
		return true
	}
	return false
}

// chooseLeaders keeps each bucket's leader if it keeps its replica, else takes a new replica
// that already holds the data (in the ISR and live), else the first new replica.
func (p *planner) chooseLeaders() {
	for _, b := range p.buckets {
		st := p.states[b]
		l := st.Leader
		if !slices.Contains(p.repl[b], l) {
			l = p.repl[b][0]
			for _, r := range p.repl[b] {
				if st.InISR(r) && p.isLive(r) {
					l = r
					break
				}
			}
		}
		p.leader[b] = l
	}
}

// spreadLeaders moves leaderships from the eligible server with the most to the least loaded
// replica of the same bucket, while they differ by more than one.
func (p *planner) spreadLeaders() {
	if len(p.eligible) <= 1 {
		return
	}
	lcount := map[int32]int{}
	for _, id := range p.eligible {
		lcount[id] = 0
	}
	for _, b := range p.buckets {
		if _, ok := lcount[p.leader[b]]; ok {
			lcount[p.leader[b]]++
		}
	}
	for range len(p.buckets) * 2 {
		hi := p.eligible[0]
		for _, id := range p.eligible {
			if lcount[id] > lcount[hi] {
				hi = id
			}
		}
		moved := false
		for _, b := range p.buckets {
			if p.leader[b] != hi {
				continue
			}
			to, ok := p.leastLoaded(lcount, func(id int32) bool { return slices.Contains(p.repl[b], id) })
			if ok && lcount[hi]-lcount[to] > 1 {
				p.leader[b] = to
				lcount[hi]--
				lcount[to]++
				moved = true
				break
			}
		}
		if !moved {
			return
		}
	}
}

// moves lists the planned buckets whose replicas or leader change, the new leader first.
func (p *planner) moves() []Move {
	var moves []Move
	for _, b := range p.buckets {
		st := p.states[b]
		leader := p.leader[b]
		if SameMembers(p.repl[b], st.Replicas) && leader == st.Leader {
			continue
		}
		newReplicas := append([]int32{leader}, slices.DeleteFunc(slices.Clone(p.repl[b]), func(id int32) bool { return id == leader })...)
		moves = append(moves, Move{Bucket: b, OriginalLeader: st.Leader, NewLeader: leader,
			OriginalReplicas: slices.Clone(st.Replicas), NewReplicas: newReplicas, Status: StatusNotStarted})
	}
	return moves
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
