package assign

import (
	"slices"

	"github.com/stromdb/strom/internal/ferr"
)

// rackOrder checks the racks of servers (tablet-server.rack of each, "" for none) and returns
// the order Place walks them in. With no rack at all it returns servers unchanged and
// aware false. When some servers have a rack and others not it fails with
// INVALID_SERVER_RACK_INFO_EXCEPTION, as Fluss's assignment does. Otherwise it returns the
// servers alternated by rack — racks sorted by name, the servers of each rack sorted by id,
// then one server of each rack in turn (rack a: 1,2; rack b: 3 gives 1,3,2) — so that any rf
// consecutive servers of the result cover min(rf, racks) racks where the racks are even.
func rackOrder(servers []int32, racks map[int32]string) (order []int32, aware bool, err error) {
	byRack := map[string][]int32{}
	withRack := 0
	for _, id := range servers {
		if r := racks[id]; r != "" {
			byRack[r] = append(byRack[r], id)
			withRack++
		}
	}
	if withRack == 0 {
		return servers, false, nil
	}
	if withRack != len(servers) {
		return nil, false, ferr.New(ferr.InvalidServerRackInfoException, "Not all tabletServers have rack information for replica rack aware assignment.")
	}
	names := make([]string, 0, len(byRack))
	for r, ids := range byRack {
		names = append(names, r)
		slices.Sort(ids)
	}
	slices.Sort(names)
	order = make([]int32, 0, len(servers))
	for i := 0; len(order) < len(servers); i++ {
		for _, r := range names {
			if i < len(byRack[r]) {
				order = append(order, byRack[r][i])
			}
		}
	}
	return order, true, nil
}

// rackAwareReplicas picks the rf replicas of a bucket whose leader is order[first]: the
// followers are taken walking order onwards from the leader, skipping a server whose rack
// already holds a replica while some rack holds none, and a server already holding one.
// Every rack thus gets a replica before any rack gets a second (each rack at most one when
// rf <= racks). shift rotates where the walk starts (Place raises it each time the buckets
// have gone once round the servers), so bucket n does not repeat bucket 0's followers.
func rackAwareReplicas(order []int32, racks map[int32]string, numRacks, first, shift, rf int) []int32 {
	n := len(order)
	replicas := []int32{order[first]}
	usedRacks := map[string]bool{racks[order[first]]: true}
	used := map[int32]bool{order[first]: true}
	for k := 0; len(replicas) < rf; k++ {
		// Never the leader's own position: steps 1..n-1 from it, rotated by shift.
		id := order[(first+1+(shift*numRacks+k)%(n-1))%n]
		rackOK := !usedRacks[racks[id]] || len(usedRacks) == numRacks
		serverOK := !used[id] || len(used) == n
		if rackOK && serverOK {
			replicas = append(replicas, id)
			usedRacks[racks[id]] = true
			used[id] = true
		}
	}
	return replicas
}
