package rebalance

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"testing"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/server/cluster"
	"github.com/stromdb/strom/server/control/bucketstate"
	"github.com/stromdb/strom/server/meta"
)

// fakeCoordinator records fenced writes; a standby's fail as a fenced write does.
type fakeCoordinator struct {
	active bool
	puts   map[string][]byte
}

func (f *fakeCoordinator) Active() bool { return f.active }
func (f *fakeCoordinator) Epoch() int64 {
	if f.active {
		return 3
	}
	return 0
}

func (f *fakeCoordinator) FencedPut(ctx context.Context, key string, val []byte, del bool) error {
	if !f.active {
		return meta.ErrNotLeader()
	}
	if del {
		delete(f.puts, key)
	} else {
		f.puts[key] = val
	}
	return nil
}

func discard() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func record(t *testing.T, id string, status Status) []byte {
	t.Helper()
	v, err := json.Marshal(Record{ID: id, Status: status})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestViewFollowsItsKeys checks how the watched records fold into the view: tags replace
// tags (a corrupt value is ignored), a standby takes every rebalance record, the active
// coordinator keeps its own (newer) one, and a fresh load keeps the active one's record.
func TestViewFollowsItsKeys(t *testing.T) {
	coord := &fakeCoordinator{puts: map[string][]byte{}}
	r := &Rebalancer{Coordinator: coord, Log: discard()}
	if !Owns(TagsKey) || !Owns(RecordKey) || Owns("servers/1") {
		t.Fatal("Owns")
	}
	r.Apply(TagsKey, []byte(`{"3":0,"4":1,"x":1}`), false)
	if tags := r.ServerTags(); len(tags) != 2 || tags[3] != TagPermanentOffline || tags[4] != TagTemporaryOffline {
		t.Fatalf("tags %v", tags)
	}
	r.Apply(TagsKey, []byte(`{`), false)
	if len(r.ServerTags()) != 2 {
		t.Fatal("a corrupt tags value replaced the tags")
	}
	r.Apply(RecordKey, record(t, "a", StatusRebalancing), false)
	if cur := r.current(); cur == nil || cur.ID != "a" {
		t.Fatalf("a standby's record: %+v", cur)
	}
	coord.active = true
	r.Apply(RecordKey, record(t, "a", StatusNotStarted), false) // the watch bringing back an older write
	if cur := r.current(); cur.Status != StatusRebalancing {
		t.Fatalf("the active coordinator's record was replaced by the watch: %+v", cur)
	}
	r.Replace(map[string][]byte{})
	if cur := r.current(); len(r.ServerTags()) != 0 || cur == nil || cur.ID != "a" {
		t.Fatalf("after a load on the active coordinator: tags %v, record %+v", r.ServerTags(), cur)
	}
	coord.active = false
	r.Replace(map[string][]byte{RecordKey: record(t, "b", StatusCompleted), TagsKey: []byte(`{"1":1}`)})
	if cur := r.current(); cur.ID != "b" || r.ServerTags()[1] != TagTemporaryOffline {
		t.Fatalf("after a load on a standby: %+v %v", cur, r.ServerTags())
	}
	r.Apply(RecordKey, nil, true)
	r.Apply(TagsKey, nil, true)
	if r.current() != nil || len(r.ServerTags()) != 0 {
		t.Fatal("deleted records are still in the view")
	}
}

func TestChangesOnTheActiveCoordinator(t *testing.T) {
	ctx := context.Background()
	coord := &fakeCoordinator{puts: map[string][]byte{}}
	states := bucketstate.NewCache()
	b := cluster.Bucket{TableID: 1, PartitionID: cluster.NoPartition, Bucket: 0}
	states.Put(b, cluster.BucketState{Replicas: []int32{1, 2}, Leader: 1, ISR: []int32{1, 2}}, 5)
	live := func(id int32) bool { return id == 1 || id == 2 }
	r := &Rebalancer{Coordinator: coord, States: states, Live: live, LiveIDs: func() []int32 { return []int32{1, 2} }, Log: discard()}

	if err := r.AddServerTag(ctx, []int32{1}, TagPermanentOffline); ferr.CodeOf(err) != ferr.NotCoordinatorLeaderException {
		t.Fatalf("a tag on a standby: %v", err)
	}
	if _, err := r.Progress(""); ferr.CodeOf(err) != ferr.NotCoordinatorLeaderException {
		t.Fatalf("progress on a standby: %v", err)
	}
	coord.active = true
	if p, err := r.Progress(""); p != nil || err != nil {
		t.Fatalf("progress with no rebalance: %+v %v", p, err)
	}
	if _, err := r.Progress("x"); ferr.CodeOf(err) != ferr.NoRebalanceInProgressException {
		t.Fatalf("progress of an unknown id: %v", err)
	}
	if err := r.AddServerTag(ctx, []int32{3}, TagPermanentOffline); ferr.CodeOf(err) != ferr.ServerNotExistException {
		t.Fatalf("a tag of an unknown server: %v", err)
	}
	if err := r.AddServerTag(ctx, []int32{2}, TagTemporaryOffline); err != nil {
		t.Fatal(err)
	}
	if string(coord.puts[TagsKey]) != `{"2":1}` || r.ServerTags()[2] != TagTemporaryOffline {
		t.Fatalf("stored tags %s, view %v", coord.puts[TagsKey], r.ServerTags())
	}
	// Server 2 is tagged: its replica has nowhere to go.
	if _, err := r.StartRebalance(ctx, []Goal{GoalReplicaDistribution}); ferr.CodeOf(err) != ferr.RebalanceFailureException {
		t.Fatalf("a plan with nowhere to move: %v", err)
	}
	if err := r.RemoveServerTag(ctx, []int32{2}, TagTemporaryOffline); err != nil {
		t.Fatal(err)
	}
	if _, stored := coord.puts[TagsKey]; stored {
		t.Fatal("no tags left, yet the tags key was kept")
	}
	id, err := r.StartRebalance(ctx, []Goal{GoalReplicaDistribution})
	if err != nil {
		t.Fatal(err)
	}
	p, err := r.Progress(id)
	if err != nil || p.Status != StatusCompleted || len(p.Moves) != 0 {
		t.Fatalf("a balanced cluster's rebalance: %+v %v", p, err)
	}
	if err := r.CancelRebalance(ctx, "other"); ferr.CodeOf(err) != ferr.NoRebalanceInProgressException {
		t.Fatalf("cancel of another id: %v", err)
	}
	if err := r.CancelRebalance(ctx, id); err != nil {
		t.Fatalf("cancel of a final rebalance: %v", err)
	}
	var stored Record
	if err := json.Unmarshal(coord.puts[RecordKey], &stored); err != nil || stored.ID != id || stored.Status != StatusCompleted {
		t.Fatalf("stored record %+v %v", stored, err)
	}
}
