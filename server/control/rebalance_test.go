package control

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/server/cluster"
	"github.com/stromdb/strom/server/control/membership"
	"github.com/stromdb/strom/server/control/rebalance"
	"github.com/stromdb/strom/server/meta"
)

func testLog() *slog.Logger {
	if os.Getenv("STROM_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

func putJSON(t *testing.T, store *meta.EtcdStore, key string, v any) {
	t.Helper()
	val, _ := json.Marshal(v)
	if _, err := store.Client().Put(context.Background(), meta.KeyPrefix+key, string(val)); err != nil {
		t.Fatal(err)
	}
}

func getState(t *testing.T, store *meta.EtcdStore, b cluster.Bucket) cluster.BucketState {
	t.Helper()
	resp, err := store.Client().Get(context.Background(), meta.KeyPrefix+BucketKey(b))
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("state of %s: %v", b, err)
	}
	var st cluster.BucketState
	if err := json.Unmarshal(resp.Kvs[0].Value, &st); err != nil {
		t.Fatal(err)
	}
	return st
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func startCoordinator(t *testing.T, store *meta.EtcdStore, moveTimeout time.Duration) *Control {
	t.Helper()
	c := New(Options{Store: store, Log: testLog(), Coordinator: &CoordinatorInfo{}, CoordinatorTTL: time.Second,
		NotifyTimeout: 100 * time.Millisecond, MoveTimeout: moveTimeout})
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// TestRebalanceStateMachine runs a rebalance against etcd with stand-in tablet servers (the
// test plays the leaders: it adds a new replica to the ISR when it "caught up"): tag errors,
// one rebalance at a time, the two steps of a move, a coordinator failover mid-rebalance
// (the successor continues the same rebalance, the deposed one's writes are fenced), cancel
// (moves not started are CANCELED, started ones finish), and the timeout of a move that never
// catches up (rolled back).
func TestRebalanceStateMachine(t *testing.T) {
	ctx := context.Background()
	store, err := meta.OpenEmbedded(ctx, t.TempDir(), testLog())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	for _, id := range []int32{1, 2, 3} {
		putJSON(t, store, membership.Key(id), Registration{ID: id})
	}
	// Six buckets on servers 1 and 2; server 3 holds nothing.
	var buckets []cluster.Bucket
	for i := range int32(6) {
		b := cluster.Bucket{TableID: 7, PartitionID: cluster.NoPartition, Bucket: i}
		buckets = append(buckets, b)
		rs := []int32{1, 2}
		if i%2 == 1 {
			rs = []int32{2, 1}
		}
		putJSON(t, store, BucketKey(b), cluster.BucketState{Replicas: rs, Leader: rs[0], ISR: slices.Clone(rs)})
	}
	c1 := startCoordinator(t, store, time.Hour)
	waitUntil(t, "the first coordinator active", c1.Active)
	c2 := startCoordinator(t, store, 2*time.Second)

	if err := c2.AddServerTag(ctx, []int32{2}, TagPermanentOffline); ferr.CodeOf(err) != ferr.NotCoordinatorLeaderException {
		t.Fatalf("tag on a standby: %v", err)
	}
	if err := c1.AddServerTag(ctx, []int32{2, 9}, TagPermanentOffline); ferr.CodeOf(err) != ferr.ServerNotExistException {
		t.Fatalf("tag of an unknown server: %v", err)
	}
	if len(c1.ServerTags()) != 0 {
		t.Fatalf("a failed tag request tagged %v", c1.ServerTags())
	}
	if err := c1.AddServerTag(ctx, []int32{2}, TagPermanentOffline); err != nil {
		t.Fatal(err)
	}
	if err := c1.AddServerTag(ctx, []int32{2}, TagTemporaryOffline); ferr.CodeOf(err) != ferr.SeverTagAlreadyExistException {
		t.Fatalf("a second tag: %v", err)
	}
	if err := c1.RemoveServerTag(ctx, []int32{2}, TagTemporaryOffline); ferr.CodeOf(err) != ferr.SeverTagNotExistException {
		t.Fatalf("removing another tag: %v", err)
	}
	if err := c1.CancelRebalance(ctx, ""); ferr.CodeOf(err) != ferr.NoRebalanceInProgressException {
		t.Fatalf("cancel without a rebalance: %v", err)
	}

	id, err := c1.StartRebalance(ctx, []Goal{GoalReplicaDistribution})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c1.StartRebalance(ctx, []Goal{GoalReplicaDistribution}); ferr.CodeOf(err) != ferr.RebalanceFailureException {
		t.Fatalf("a second rebalance: %v", err)
	}
	moveStatus := func(c *Control, b cluster.Bucket) RebalanceStatus {
		r, err := c.RebalanceProgress(id)
		if err != nil {
			return -1
		}
		for _, m := range r.Moves {
			if m.Bucket == b {
				return m.Status
			}
		}
		return -1
	}
	// Step 1 for the first four moves: server 3 added, not in the ISR.
	waitUntil(t, "four moves adding server 3", func() bool {
		n := 0
		for _, b := range buckets {
			if getState(t, store, b).IsReplica(3) {
				n++
			}
		}
		return n == 4 // the moves run at once
	})
	st := getState(t, store, buckets[0])
	if !slices.Equal(st.Replicas, []int32{1, 2, 3}) || st.InISR(3) || st.LeaderEpoch != 0 {
		t.Fatalf("bucket 0 after step 1: %+v", st)
	}
	if got := moveStatus(c1, buckets[5]); got != StatusNotStarted {
		t.Fatalf("the sixth move is %s, want NOT_STARTED", got)
	}

	// Server 3 catches up on bucket 0: step 2 drops server 2.
	joinISR := func(b cluster.Bucket, id int32) {
		st := getState(t, store, b)
		st.ISR = append(st.ISR, id)
		st.BucketEpoch++
		putJSON(t, store, BucketKey(b), st)
	}
	joinISR(buckets[0], 3)
	waitUntil(t, "bucket 0 moved", func() bool { return moveStatus(c1, buckets[0]) == StatusCompleted })
	st = getState(t, store, buckets[0])
	if !slices.Equal(st.Replicas, []int32{1, 3}) || !rebalance.SameMembers(st.ISR, []int32{1, 3}) || st.Leader != 1 || st.LeaderEpoch != 0 {
		t.Fatalf("bucket 0 after its move: %+v", st)
	}

	// Failover: the first coordinator's fence is kept to act as a deposed coordinator that
	// has not noticed yet.
	oldFence, _ := c1.Fence()
	c1.Close()
	waitUntil(t, "the second coordinator active", c2.Active)
	c1.elector.SetActive(oldFence, true)
	if err := c1.CancelRebalance(ctx, id); ferr.CodeOf(err) != ferr.NotCoordinatorLeaderException {
		t.Fatalf("cancel by the deposed coordinator: %v", err)
	}
	if err := c1.AddServerTag(ctx, []int32{1}, TagTemporaryOffline); ferr.CodeOf(err) != ferr.NotCoordinatorLeaderException {
		t.Fatalf("tag by the deposed coordinator: %v", err)
	}
	c1.elector.SetActive(meta.Fence{}, false)
	if tags := c2.ServerTags(); len(tags) != 1 || tags[2] != TagPermanentOffline {
		t.Fatalf("tags after the failover: %v", tags)
	}
	r, err := c2.RebalanceProgress("")
	if err != nil || r.ID != id || r.Status != StatusRebalancing || moveStatus(c2, buckets[0]) != StatusCompleted {
		t.Fatalf("the successor's view of the rebalance: %+v, %v", r, err)
	}
	// The successor continues: bucket 1 (led by the tagged server) moves its leadership.
	waitUntil(t, "the successor starts the fifth move", func() bool { return moveStatus(c2, buckets[4]) == StatusRebalancing })
	if err := c2.CancelRebalance(ctx, "other"); ferr.CodeOf(err) != ferr.NoRebalanceInProgressException {
		t.Fatalf("cancel of another id: %v", err)
	}
	if err := c2.CancelRebalance(ctx, id); err != nil {
		t.Fatal(err)
	}
	if got := moveStatus(c2, buckets[5]); got != StatusCanceled {
		t.Fatalf("the move not started is %s after cancel, want CANCELED", got)
	}
	joinISR(buckets[1], 3)
	waitUntil(t, "bucket 1 moved", func() bool { return moveStatus(c2, buckets[1]) == StatusCompleted })
	st = getState(t, store, buckets[1])
	if !rebalance.SameMembers(st.Replicas, []int32{1, 3}) || st.Leader != 1 || st.LeaderEpoch != 1 || st.InISR(2) {
		t.Fatalf("bucket 1 after its move: %+v", st)
	}
	// Buckets 2, 3 and 4 never catch up: rolled back after the move timeout.
	waitUntil(t, "the rebalance ends", func() bool {
		r, err := c2.RebalanceProgress(id)
		return err == nil && r.Status.Final()
	})
	r, _ = c2.RebalanceProgress(id)
	if r.Status != StatusCanceled {
		t.Fatalf("rebalance ended %s, want CANCELED", r.Status)
	}
	for _, i := range []int{2, 3, 4} {
		if got := moveStatus(c2, buckets[i]); got != StatusTimeout {
			t.Fatalf("move of bucket %d: %s, want TIMEOUT", i, got)
		}
		if st := getState(t, store, buckets[i]); st.IsReplica(3) || !rebalance.SameMembers(st.Replicas, []int32{1, 2}) {
			t.Fatalf("bucket %d not rolled back: %+v", i, st)
		}
	}
	if st := getState(t, store, buckets[5]); !rebalance.SameMembers(st.Replicas, []int32{1, 2}) {
		t.Fatalf("the canceled move changed bucket 5: %+v", st)
	}
	// Canceling a finished rebalance changes nothing; a new one may start.
	if err := c2.CancelRebalance(ctx, id); err != nil {
		t.Fatal(err)
	}
	if _, err := c2.StartRebalance(ctx, nil); err != nil {
		t.Fatalf("a rebalance after the last ended: %v", err)
	}
}
