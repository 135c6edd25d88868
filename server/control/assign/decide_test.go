package assign

import (
	"slices"
	"testing"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/server/cluster"
)

func TestElect(t *testing.T) {
	alive := func(ids ...int32) func(int32) bool { return func(id int32) bool { return slices.Contains(ids, id) } }
	base := cluster.BucketState{Replicas: []int32{1, 2, 3}, Leader: 1, ISR: []int32{1, 2, 3}, LeaderEpoch: 4, BucketEpoch: 7}
	for _, tc := range []struct {
		name    string
		in      cluster.BucketState
		live    func(int32) bool
		changed bool
		want    cluster.BucketState
	}{
		{"leader alive", base, alive(1, 2, 3), false, base},
		{"leader dead: next ISR member in replica order", base, alive(2, 3), true,
			cluster.BucketState{Replicas: []int32{1, 2, 3}, Leader: 2, ISR: []int32{2, 3}, LeaderEpoch: 5, BucketEpoch: 8, CoordinatorEpoch: 9}},
		{"skips a dead ISR member, which leaves the ISR too", base, alive(3), true,
			cluster.BucketState{Replicas: []int32{1, 2, 3}, Leader: 3, ISR: []int32{3}, LeaderEpoch: 5, BucketEpoch: 8, CoordinatorEpoch: 9}},
		{"leader alive, dead followers leave the ISR", base, alive(1, 3), true,
			cluster.BucketState{Replicas: []int32{1, 2, 3}, Leader: 1, ISR: []int32{1, 3}, LeaderEpoch: 4, BucketEpoch: 8, CoordinatorEpoch: 9}},
		{"leader alive, dead replica already out of the ISR", cluster.BucketState{Replicas: []int32{1, 2, 3}, Leader: 1, ISR: []int32{1, 3}}, alive(1, 3), false,
			cluster.BucketState{Replicas: []int32{1, 2, 3}, Leader: 1, ISR: []int32{1, 3}}},
		{"skips a live replica out of the ISR", cluster.BucketState{Replicas: []int32{1, 2, 3}, Leader: 1, ISR: []int32{1, 3}}, alive(2, 3), true,
			cluster.BucketState{Replicas: []int32{1, 2, 3}, Leader: 3, ISR: []int32{3}, LeaderEpoch: 1, BucketEpoch: 1, CoordinatorEpoch: 9}},
		{"no live ISR member: no leader, ISR kept", cluster.BucketState{Replicas: []int32{1, 2}, Leader: 1, ISR: []int32{1}}, alive(2), true,
			cluster.BucketState{Replicas: []int32{1, 2}, Leader: cluster.NoLeader, ISR: []int32{1}, LeaderEpoch: 1, BucketEpoch: 1, CoordinatorEpoch: 9}},
		{"leaderless, ISR member returns", cluster.BucketState{Replicas: []int32{1, 2}, Leader: cluster.NoLeader, ISR: []int32{1}, LeaderEpoch: 1, BucketEpoch: 1}, alive(1, 2), true,
			cluster.BucketState{Replicas: []int32{1, 2}, Leader: 1, ISR: []int32{1}, LeaderEpoch: 2, BucketEpoch: 2, CoordinatorEpoch: 9}},
		{"leaderless, only a non-ISR replica alive", cluster.BucketState{Replicas: []int32{1, 2}, Leader: cluster.NoLeader, ISR: []int32{1}, LeaderEpoch: 1}, alive(2), false,
			cluster.BucketState{Replicas: []int32{1, 2}, Leader: cluster.NoLeader, ISR: []int32{1}, LeaderEpoch: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, changed := Elect(tc.in, tc.live, 9)
			if changed != tc.changed {
				t.Fatalf("changed = %v", changed)
			}
			if !changed {
				return
			}
			if !slices.Equal(got.Replicas, tc.want.Replicas) || !slices.Equal(got.ISR, tc.want.ISR) || got.Leader != tc.want.Leader ||
				got.LeaderEpoch != tc.want.LeaderEpoch || got.BucketEpoch != tc.want.BucketEpoch || got.CoordinatorEpoch != tc.want.CoordinatorEpoch {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
			if got.Leader != cluster.NoLeader && !got.InISR(got.Leader) {
				t.Fatalf("leader %d outside ISR %v", got.Leader, got.ISR)
			}
		})
	}
}

func TestPlaceSpreadsReplicasAndLeaders(t *testing.T) {
	servers := []int32{4, 7, 9, 12}
	leaders, replicas := map[int32]int{}, map[int32]int{}
	for id := int64(0); id < 3; id++ {
		states, err := Place(servers, nil, id, cluster.NoPartition, 4, 3, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, st := range states {
			if len(st.Replicas) != 3 || st.Leader != st.Replicas[0] || !slices.Equal(st.ISR, st.Replicas) || st.LeaderEpoch != 0 {
				t.Fatalf("state %+v", st)
			}
			seen := map[int32]bool{}
			for _, r := range st.Replicas {
				if seen[r] {
					t.Fatalf("replica %d twice in %v", r, st.Replicas)
				}
				seen[r] = true
				replicas[r]++
			}
			leaders[st.Leader]++
		}
	}
	for _, id := range servers {
		if leaders[id] != 3 || replicas[id] != 9 {
			t.Fatalf("leaders %v replicas %v: want 3 and 9 each", leaders, replicas)
		}
	}
	if _, err := Place(servers, nil, 5, cluster.NoPartition, 1, 5, 0); ferr.CodeOf(err) != ferr.InvalidReplicationFactor {
		t.Fatalf("RF 5 on 4 servers: %v", err)
	}
}
