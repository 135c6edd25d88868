package cluster

import (
	"testing"

	"github.com/stromdb/strom/internal/metadata"
)

func TestBucketStateMembership(t *testing.T) {
	st := BucketState{Replicas: []int32{1, 2, 3}, Leader: 1, ISR: []int32{1, 3}}
	for _, tc := range []struct {
		id             int32
		replica, inISR bool
	}{{1, true, true}, {2, true, false}, {3, true, true}, {4, false, false}, {NoLeader, false, false}} {
		if st.IsReplica(tc.id) != tc.replica || st.InISR(tc.id) != tc.inISR {
			t.Errorf("server %d: replica %v, in ISR %v", tc.id, st.IsReplica(tc.id), st.InISR(tc.id))
		}
	}
}

func TestBucketStateNewer(t *testing.T) {
	at := func(le, be int32) BucketState { return BucketState{LeaderEpoch: le, BucketEpoch: be} }
	for _, tc := range []struct {
		s, o BucketState
		want bool
	}{
		{at(2, 0), at(1, 9), true},  // a leader epoch outranks any bucket epoch
		{at(1, 9), at(2, 0), false}, // an older leadership, however many ISR changes
		{at(1, 4), at(1, 3), true},  // the same leadership, a later ISR change
		{at(1, 3), at(1, 3), false}, // the same state again: not newer (a repeated notification)
		{at(1, 2), at(1, 3), false},
	} {
		if got := tc.s.Newer(tc.o); got != tc.want {
			t.Errorf("%+v.Newer(%+v) = %v", tc.s, tc.o, got)
		}
	}
	// The coordinator epoch does not order states (it is sent truncated to 32 bits).
	if (BucketState{CoordinatorEpoch: 9}).Newer(BucketState{CoordinatorEpoch: 1}) {
		t.Fatal("the coordinator epoch ordered two states")
	}
}

func TestBucketString(t *testing.T) {
	if s := (Bucket{TableID: 3, PartitionID: NoPartition, Bucket: 1}).String(); s != "table 3 bucket 1" {
		t.Errorf("%q", s)
	}
	if s := (Bucket{TableID: 3, PartitionID: 8, Bucket: 1}).String(); s != "table 3 partition 8 bucket 1" {
		t.Errorf("%q", s)
	}
	if s := (TablePath{Database: "db", Table: "t"}).String(); s != "db.t" {
		t.Errorf("%q", s)
	}
}

func TestTableInfo(t *testing.T) {
	plain := &TableInfo{Descriptor: metadata.TableDescriptor{BucketCount: 4}}
	if plain.NumBuckets() != 4 || plain.Partitioned() || plain.HasPrimaryKey() {
		t.Fatalf("a plain log table: %d %v %v", plain.NumBuckets(), plain.Partitioned(), plain.HasPrimaryKey())
	}
	pk := &TableInfo{Descriptor: metadata.TableDescriptor{BucketCount: 2, PartitionKeys: []string{"dt"},
		Schema: metadata.Schema{PrimaryKey: []string{"id", "dt"}}}}
	if !pk.Partitioned() || !pk.HasPrimaryKey() {
		t.Fatal("a partitioned primary-key table")
	}
}
