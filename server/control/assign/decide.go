// Package assign is assignment and ISR (docs/cluster.md, "Assignment", "Failover"): where a
// new bucket's replicas go, which leader a bucket gets when its leader dies, which ISR
// members a dead server leaves, and which ISR change a leader may make. The decisions are the
// pure functions of this file; Writer, Reconciler and Replication apply them to etcd.
package assign

import (
	"slices"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/server/cluster"
)

// Place assigns the buckets of a new table (partitionID NoPartition) or partition: each of
// numBuckets gets rf replicas over servers (the live servers that may receive replicas,
// sorted by id), spread evenly — bucket b starts at server (b + tableID) mod n, or
// (b + tableID + partitionID) mod n for a partition, and takes the next rf servers — so
// leaders (the first replica) rotate over the servers within and across tables. Each state
// is leader = first replica, ISR = replicas, epochs 0. rf <= 0 means 1; rf larger than the
// servers: INVALID_REPLICATION_FACTOR, as Fluss.
//
// racks maps a server to its tablet-server.rack (absent or "" for none). When every server
// has a rack the walk is over the servers alternated by rack (rackOrder) and each bucket's
// followers go to racks that have no replica of it yet (rackAwareReplicas), as Fluss's
// rack-aware assignment; some servers with a rack and others without:
// INVALID_SERVER_RACK_INFO_EXCEPTION, as Fluss. No rack at all: the placement above.
func Place(servers []int32, racks map[int32]string, tableID, partitionID int64, numBuckets, rf int32, coordinatorEpoch int64) (map[cluster.Bucket]cluster.BucketState, error) {
	if rf <= 0 {
		rf = 1
	}
	if int(rf) > len(servers) {
		return nil, ferr.New(ferr.InvalidReplicationFactor, "Replication factor: %d larger than available tablet servers: %d.", rf, len(servers))
	}
	order, aware, err := rackOrder(servers, racks)
	if err != nil {
		return nil, err
	}
	numRacks := 0
	if aware {
		seen := map[string]bool{}
		for _, id := range order {
			seen[racks[id]] = true
		}
		numRacks = len(seen)
	}
	n := len(order)
	offset := int(tableID % int64(n))
	if partitionID != cluster.NoPartition {
		offset = int((tableID + partitionID) % int64(n))
	}
	states := make(map[cluster.Bucket]cluster.BucketState, numBuckets)
	for b := int32(0); b < numBuckets; b++ {
		first := (int(b) + offset) % n
		var replicas []int32
		if aware {
			replicas = rackAwareReplicas(order, racks, numRacks, first, int(b)/n, int(rf))
		} else {
			replicas = make([]int32, rf)
			for i := range replicas {
				replicas[i] = order[(first+i)%n]
			}
		}
		states[cluster.Bucket{TableID: tableID, PartitionID: partitionID, Bucket: b}] =
			cluster.BucketState{Replicas: replicas, Leader: replicas[0], ISR: slices.Clone(replicas), CoordinatorEpoch: coordinatorEpoch}
	}
	return states, nil
}

// Elect is the state of a bucket after the leader election rules of docs/cluster.md
// ("Failover"), given which servers are live; changed is false when nothing is to be done.
//
//   - The leader is dead: the new leader is the first live ISR member in replica order, and
//     the dead leader leaves the ISR; with no live ISR member the bucket has no leader and
//     keeps its ISR (no unclean election).
//
//   - No leader: the first live ISR member in replica order becomes leader.
//
//   - The leader lives but ISR followers are dead: they leave the ISR (Kafka's and Fluss's
//     coordinators do the same when a server dies), so acks=all writes stop waiting for them
//     at once instead of after log.replica.max-lag-time; they rejoin through the leader's ISR
//     expansion once they are back and caught up.
//
// A new leader also drops every other dead member from the ISR. A leader change increments
// LeaderEpoch and BucketEpoch; an ISR-only change BucketEpoch. A changed state carries
// coordinatorEpoch.
func Elect(st cluster.BucketState, live func(int32) bool, coordinatorEpoch int64) (cluster.BucketState, bool) {
	if st.Leader != cluster.NoLeader && live(st.Leader) {
		leader := st.Leader
		isr := slices.DeleteFunc(slices.Clone(st.ISR), func(id int32) bool { return id != leader && !live(id) })
		if len(isr) == len(st.ISR) {
			return st, false
		}
		next := st
		next.Replicas = slices.Clone(st.Replicas)
		next.ISR = isr
		next.BucketEpoch++
		next.CoordinatorEpoch = coordinatorEpoch
		return next, true
	}
	candidate := cluster.NoLeader
	for _, r := range st.Replicas {
		if r != st.Leader && st.InISR(r) && live(r) {
			candidate = r
			break
		}
	}
	if st.Leader == cluster.NoLeader && candidate == cluster.NoLeader {
		return st, false
	}
	next := st
	next.Replicas = slices.Clone(st.Replicas)
	next.ISR = slices.Clone(st.ISR)
	if candidate != cluster.NoLeader {
		next.ISR = slices.DeleteFunc(next.ISR, func(id int32) bool { return !live(id) })
	}
	next.Leader = candidate
	next.LeaderEpoch++
	next.BucketEpoch++
	next.CoordinatorEpoch = coordinatorEpoch
	return next, true
}

// ChangeISR is the state after the ISR change a bucket's leader asks for (ADJUST_ISR, made
// without a coordinator round trip): the stored state cur must still be expect (same
// LeaderEpoch and BucketEpoch, same leader) — else FENCED_LEADER_EPOCH — and the new ISR must
// contain the leader and be a set of the replicas — else INVALID_UPDATE_VERSION. The change
// increments BucketEpoch.
func ChangeISR(b cluster.Bucket, cur, expect cluster.BucketState, isr []int32) (cluster.BucketState, error) {
	if cur.LeaderEpoch != expect.LeaderEpoch || cur.BucketEpoch != expect.BucketEpoch {
		return cluster.BucketState{}, ferr.New(ferr.FencedLeaderEpochException, "bucket %s is at leader epoch %d, bucket epoch %d; the ISR change expected %d, %d", b, cur.LeaderEpoch, cur.BucketEpoch, expect.LeaderEpoch, expect.BucketEpoch)
	}
	if cur.Leader == cluster.NoLeader || cur.Leader != expect.Leader {
		return cluster.BucketState{}, ferr.New(ferr.FencedLeaderEpochException, "bucket %s is led by %d, not %d", b, cur.Leader, expect.Leader)
	}
	if !slices.Contains(isr, cur.Leader) {
		return cluster.BucketState{}, ferr.New(ferr.InvalidUpdateVersionException, "the new ISR %v of %s does not contain its leader %d", isr, b, cur.Leader)
	}
	seen := map[int32]bool{}
	for _, id := range isr {
		if !cur.IsReplica(id) || seen[id] {
			return cluster.BucketState{}, ferr.New(ferr.InvalidUpdateVersionException, "the new ISR %v of %s is not a set of its replicas %v", isr, b, cur.Replicas)
		}
		seen[id] = true
	}
	next := cur
	next.ISR = slices.Clone(isr)
	next.BucketEpoch++
	return next, nil
}

// LeadsAt reports whether cur names self the leader at leaderEpoch: the condition under
// which a leader may commit metadata fenced by its leadership (a KV snapshot,
// docs/kv-snapshots.md).
func LeadsAt(cur cluster.BucketState, self int32, leaderEpoch int32) bool {
	return cur.Leader == self && cur.LeaderEpoch == leaderEpoch
}
