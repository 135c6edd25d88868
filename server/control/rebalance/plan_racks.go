package rebalance

import (
	"slices"

	"github.com/stromdb/strom/server/cluster"
)

// The rack rules of a plan (docs/cluster.md, "Plan"). They apply only when every eligible
// server has a rack (tablet-server.rack); otherwise the planner ignores racks, as placement
// does without them.
//
// Invariant: with racks, no move of the plan lowers the number of racks a bucket's replicas
// cover; GoalRackAware raises it to min(replicas, racks) where an eligible server allows.

// setRacks records the servers' racks and whether the plan is rack-aware.
func (p *planner) setRacks(racks map[int32]string) {
	p.racks = racks
	names := map[string]bool{}
	for _, id := range p.eligible {
		r := racks[id]
		if r == "" {
			p.numRacks = 0
			return
		}
		names[r] = true
	}
	p.numRacks = len(names)
}

// racksOf returns the racks b's planned replicas cover, leaving out replica index skip
// (-1: none).
func (p *planner) racksOf(b cluster.Bucket, skip int) map[string]bool {
	out := map[string]bool{}
	for i, id := range p.repl[b] {
		if i != skip {
			out[p.racks[id]] = true
		}
	}
	return out
}

// keepsRacks reports whether replacing b's replica at index i by server to keeps the racks b
// covers from shrinking (always true when the plan ignores racks).
func (p *planner) keepsRacks(b cluster.Bucket, i int, to int32) bool {
	if p.numRacks == 0 {
		return true
	}
	before := len(p.racksOf(b, -1))
	after := p.racksOf(b, i)
	after[p.racks[to]] = true
	return len(after) >= before
}

// newRack reports whether server id's rack holds none of b's replicas other than index i.
func (p *planner) newRack(b cluster.Bucket, i int, id int32) bool {
	return p.numRacks == 0 || !p.racksOf(b, i)[p.racks[id]]
}

// spreadRacks (GoalRackAware) moves, for each bucket covering fewer than min(replicas, racks)
// racks, a replica from a rack holding two of them (a follower first) to the least loaded
// eligible server of a rack holding none, until the bucket covers enough or no server fits.
func (p *planner) spreadRacks() {
	if p.numRacks == 0 {
		return
	}
	for _, b := range p.buckets {
		want := min(len(p.repl[b]), p.numRacks)
		for len(p.racksOf(b, -1)) < want {
			i := p.doubledReplica(b)
			if i < 0 {
				break
			}
			to, ok := p.leastLoaded(p.count, func(id int32) bool {
				return !slices.Contains(p.repl[b], id) && p.newRack(b, i, id)
			})
			if !ok {
				break
			}
			from := p.repl[b][i]
			p.repl[b][i] = to
			if _, ok := p.count[from]; ok {
				p.count[from]--
			}
			p.count[to]++
		}
	}
}

// doubledReplica returns the index of a replica of b whose rack holds another of b's
// replicas, a follower before the leader; -1 when every replica is alone in its rack.
func (p *planner) doubledReplica(b cluster.Bucket) int {
	perRack := map[string]int{}
	for _, id := range p.repl[b] {
		perRack[p.racks[id]]++
	}
	found := -1
	for i, id := range p.repl[b] {
		if perRack[p.racks[id]] < 2 {
			continue
		}
		if id != p.states[b].Leader {
			return i
		}
		found = i
	}
	return found
}
