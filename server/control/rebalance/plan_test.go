package rebalance

import (
	"slices"
	"testing"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/server/cluster"
)

func planStates(replicas ...[]int32) map[cluster.Bucket]cluster.BucketState {
	out := map[cluster.Bucket]cluster.BucketState{}
	for i, rs := range replicas {
		out[cluster.Bucket{TableID: 1, PartitionID: cluster.NoPartition, Bucket: int32(i)}] =
			cluster.BucketState{Replicas: rs, Leader: rs[0], ISR: slices.Clone(rs)}
	}
	return out
}

// applyPlan returns the replica sets and leaders after the moves.
func applyPlan(states map[cluster.Bucket]cluster.BucketState, moves []Move) (replicas map[int32]int, leaders map[int32]int) {
	replicas, leaders = map[int32]int{}, map[int32]int{}
	final := map[cluster.Bucket]cluster.BucketState{}
	for b, st := range states {
		final[b] = st
	}
	for _, m := range moves {
		final[m.Bucket] = cluster.BucketState{Replicas: m.NewReplicas, Leader: m.NewLeader}
	}
	for _, st := range final {
		for _, r := range st.Replicas {
			replicas[r]++
		}
		leaders[st.Leader]++
	}
	return replicas, leaders
}

func TestPlan(t *testing.T) {
	t.Run("a tagged dead server's replicas go to the new server", func(t *testing.T) {
		// Server 3 is dead and tagged; 4 is new and empty.
		states := planStates([]int32{1, 2, 3}, []int32{2, 3, 1}, []int32{3, 1, 2}, []int32{1, 2, 3})
		for b, st := range states {
			if st.Leader == 3 { // failover already moved the dead server's leaderships
				st.Leader = 1
				states[b] = st
			}
		}
		moves, err := Plan(states, []int32{1, 2, 4}, nil, map[int32]ServerTag{3: TagPermanentOffline}, []Goal{GoalReplicaDistribution})
		if err != nil {
			t.Fatal(err)
		}
		if len(moves) != 4 {
			t.Fatalf("%d moves, want 4: %+v", len(moves), moves)
		}
		for _, m := range moves {
			if slices.Contains(m.NewReplicas, 3) || !slices.Contains(m.NewReplicas, 4) || m.NewReplicas[0] != m.NewLeader || m.Status != StatusNotStarted {
				t.Fatalf("move %+v", m)
			}
		}
	})
	t.Run("a dead server without a tag keeps its replicas", func(t *testing.T) {
		states := planStates([]int32{1, 3}, []int32{1, 3})
		moves, err := Plan(states, []int32{1, 2}, nil, nil, []Goal{GoalReplicaDistribution})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range moves {
			if !slices.Contains(m.NewReplicas, 3) {
				t.Fatalf("moved a replica off an untagged dead server: %+v", m)
			}
		}
	})
	t.Run("nowhere to go", func(t *testing.T) {
		states := planStates([]int32{1, 2}, []int32{2, 1})
		_, err := Plan(states, []int32{1, 2}, nil, map[int32]ServerTag{2: TagTemporaryOffline}, []Goal{GoalLeaderDistribution})
		if ferr.CodeOf(err) != ferr.RebalanceFailureException {
			t.Fatalf("err = %v, want REBALANCE_FAILURE", err)
		}
	})
	t.Run("no goal, no plan", func(t *testing.T) {
		moves, err := Plan(planStates([]int32{1, 2}), []int32{1, 2, 3}, nil, map[int32]ServerTag{2: TagPermanentOffline}, nil)
		if err != nil || len(moves) != 0 {
			t.Fatalf("%+v, %v", moves, err)
		}
	})
	t.Run("replicas and leaders spread onto a new server", func(t *testing.T) {
		var rs [][]int32
		for i := range 6 {
			rs = append(rs, []int32{int32(1 + i%2), int32(1 + (i+1)%2)})
		}
		states := planStates(rs...)
		moves, err := Plan(states, []int32{1, 2, 3}, nil, nil, []Goal{GoalReplicaDistribution, GoalLeaderDistribution})
		if err != nil {
			t.Fatal(err)
		}
		replicas, leaders := applyPlan(states, moves)
		if replicas[1] != 4 || replicas[2] != 4 || replicas[3] != 4 {
			t.Fatalf("replicas per server %v, want 4 each", replicas)
		}
		if leaders[1] != 2 || leaders[2] != 2 || leaders[3] != 2 {
			t.Fatalf("leaders per server %v, want 2 each", leaders)
		}
		// A balanced cluster needs no moves.
		after := map[cluster.Bucket]cluster.BucketState{}
		for b, st := range states {
			after[b] = st
		}
		for _, m := range moves {
			after[m.Bucket] = cluster.BucketState{Replicas: m.NewReplicas, Leader: m.NewLeader, ISR: m.NewReplicas}
		}
		again, err := Plan(after, []int32{1, 2, 3}, nil, nil, []Goal{GoalReplicaDistribution, GoalLeaderDistribution})
		if err != nil || len(again) != 0 {
			t.Fatalf("a balanced cluster planned %+v, %v", again, err)
		}
	})
}
