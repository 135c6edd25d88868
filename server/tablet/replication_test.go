package tablet_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/internal/record"
	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
	"github.com/stromdb/strom/server/cluster"
)

// Appends to the leader reach both followers byte for byte (offsets, commit timestamps and
// all), the HW follows, and acks=-1 answers only once the followers have the batch.
func TestReplicationCopiesTheLeadersLog(t *testing.T) {
	c := newRCluster(t, 3, 1, 10*time.Second)
	c.table(1, false)
	c.elect(1, []int32{1, 2, 3}, 1, []int32{1, 2, 3})
	for i := range 20 {
		r := produceTo(t, c.nodes[1].client, 1, -1, 10000, rowBatch(int32(i%5+1)))
		if r.GetErrorCode() != 0 {
			t.Fatalf("produce %d: %d %s", i, r.GetErrorCode(), r.GetErrorMessage())
		}
		// acks=-1: the batch is committed, so the HW (min LEO of the ISR) passed it.
		if hw := c.replica(1, 1).Log.HighWatermark(); hw <= r.GetBaseOffset() {
			t.Fatalf("acks=-1 answered with the leader's HW %d at or below the batch at %d", hw, r.GetBaseOffset())
		}
	}
	c.waitInSync(1, 1, 2, 3)
	if _, _, leo := c.logBytes(2, 1); leo != 60 {
		t.Fatalf("follower log ends at %d, want 60", leo)
	}
	// A client reading from the leader sees everything committed.
	if got := latest(t, c.nodes[1].client, 1); got != 60 {
		t.Fatalf("LIST_OFFSETS latest on the leader = %d, want 60", got)
	}
}

// Followers, and servers without a replica of an existing bucket, refuse client data
// requests with NOT_LEADER_OR_FOLLOWER; a client may not pose as a follower outside the
// internal listener.
func TestFollowersRefuseClientsAndClientsCannotFetchAsFollowers(t *testing.T) {
	c := newRCluster(t, 3, 1, 10*time.Second)
	c.table(1, false)
	c.table(2, true)
	c.elect(1, []int32{1, 2}, 1, []int32{1, 2})
	c.elect(2, []int32{1, 2}, 1, []int32{1, 2})

	// Server 3 holds no replica: an existing bucket is NOT_LEADER_OR_FOLLOWER there (its
	// leader is elsewhere), a bucket the catalog does not have is UNKNOWN_TABLE_OR_BUCKET.
	if _, code := lookupNames(t, c.nodes[3].client, 2, 1); code != ferr.NotLeaderOrFollower {
		t.Fatalf("lookup on a server without a replica: code %d", code)
	}
	if r := produceTo(t, c.nodes[3].client, 1, -1, 1000, rowBatch(1)); ferr.Code(r.GetErrorCode()) != ferr.NotLeaderOrFollower {
		t.Fatalf("produce on a server without a replica: code %d", r.GetErrorCode())
	}
	if r := produceTo(t, c.nodes[3].client, 99, -1, 1000, rowBatch(1)); ferr.Code(r.GetErrorCode()) != ferr.UnknownTableOrBucketException {
		t.Fatalf("produce to an unknown table: code %d", r.GetErrorCode())
	}

	follower := c.nodes[2].client
	if r := produceTo(t, follower, 1, -1, 1000, rowBatch(1)); ferr.Code(r.GetErrorCode()) != ferr.NotLeaderOrFollower {
		t.Fatalf("produce on a follower: code %d, want NOT_LEADER_OR_FOLLOWER", r.GetErrorCode())
	}
	var lo flusspb.ListOffsetsResponse
	if err := follower.Call(context.Background(), wire.ListOffsets, &flusspb.ListOffsetsRequest{FollowerServerId: proto.Int32(-1),
		OffsetType: proto.Int32(1), TableId: proto.Int64(1), BucketId: []int32{0}}, &lo); err != nil {
		t.Fatal(err)
	}
	if ferr.Code(lo.BucketsResp[0].GetErrorCode()) != ferr.NotLeaderOrFollower {
		t.Fatalf("list offsets on a follower: code %d", lo.BucketsResp[0].GetErrorCode())
	}
	fetch := func(conn *wire.ClientConn, followerID int32) (*flusspb.FetchLogResponse, error) {
		var resp flusspb.FetchLogResponse
		err := conn.Call(context.Background(), wire.FetchLog, &flusspb.FetchLogRequest{FollowerServerId: proto.Int32(followerID), MaxBytes: proto.Int32(1 << 20),
			TablesReq: []*flusspb.PbFetchLogReqForTable{{TableId: proto.Int64(1), ProjectionPushdownEnabled: proto.Bool(false),
				BucketsReq: []*flusspb.PbFetchLogReqForBucket{{BucketId: proto.Int32(0), FetchOffset: proto.Int64(0), MaxFetchBytes: proto.Int32(1 << 20)}}}}}, &resp)
		return &resp, err
	}
	resp, err := fetch(follower, -1)
	if err != nil {
		t.Fatal(err)
	}
	if code := ferr.Code(resp.TablesResp[0].BucketsResp[0].GetErrorCode()); code != ferr.NotLeaderOrFollower {
		t.Fatalf("client fetch on a follower: code %d", code)
	}
	if _, code := lookupNames(t, follower, 2, 1); code != ferr.NotLeaderOrFollower {
		t.Fatalf("lookup on a follower: code %d", code)
	}
	if r := upsert(t, follower, 2, -1, -1, -1, map[int64]string{1: "a"}); ferr.Code(r.GetErrorCode()) != ferr.NotLeaderOrFollower {
		t.Fatalf("put on a follower: code %d", r.GetErrorCode())
	}
	// A follower fetch on the client listener of the leader.
	if _, err := fetch(c.nodes[1].client, 2); ferr.CodeOf(err) != ferr.AuthorizationException {
		t.Fatalf("follower fetch on the client listener: %v, want AUTHORIZATION_EXCEPTION", err)
	}
}

// acks=-1 waits for the ISR: with a follower down and a lag time longer than the request
// timeout it times out (REQUEST_TIME_OUT) while acks=1 answers at once; once the follower is
// back the write is committed.
func TestAcksAllWaitsForTheFollower(t *testing.T) {
	c := newRCluster(t, 2, 1, time.Minute)
	c.table(1, false)
	c.elect(1, []int32{1, 2}, 1, []int32{1, 2})
	if r := produceTo(t, c.nodes[1].client, 1, -1, 10000, rowBatch(2)); r.GetErrorCode() != 0 {
		t.Fatalf("produce: %d %s", r.GetErrorCode(), r.GetErrorMessage())
	}
	c.stop(2)
	if r := produceTo(t, c.nodes[1].client, 1, 1, 10000, rowBatch(3)); r.GetErrorCode() != 0 || r.GetBaseOffset() != 2 {
		t.Fatalf("acks=1 with the follower down: code %d base %d", r.GetErrorCode(), r.GetBaseOffset())
	}
	start := time.Now()
	if r := produceTo(t, c.nodes[1].client, 1, -1, 200, rowBatch(1)); ferr.Code(r.GetErrorCode()) != ferr.RequestTimeOut {
		t.Fatalf("acks=-1 with an ISR member down: code %d, want REQUEST_TIME_OUT", r.GetErrorCode())
	}
	if d := time.Since(start); d < 200*time.Millisecond {
		t.Fatalf("REQUEST_TIME_OUT after %v, before the request's timeout", d)
	}
	if hw := c.replica(1, 1).Log.HighWatermark(); hw != 2 {
		t.Fatalf("HW moved to %d without the follower", hw)
	}
	c.start(2)
	if r := produceTo(t, c.nodes[1].client, 1, -1, 10000, rowBatch(1)); r.GetErrorCode() != 0 {
		t.Fatalf("acks=-1 after the follower is back: %d %s", r.GetErrorCode(), r.GetErrorMessage())
	}
	c.waitInSync(1, 1, 2)
}

// An ISR below log.replica.min-in-sync-replicas-number refuses acks=-1 writes before
// appending anything (NOT_ENOUGH_REPLICAS) and still takes acks=1 writes.
func TestNotEnoughReplicas(t *testing.T) {
	c := newRCluster(t, 2, 2, 10*time.Second)
	c.table(1, false)
	c.table(2, true)
	// The follower is down, so it cannot rejoin the ISR during the checks.
	c.stop(2)
	c.elect(1, []int32{1, 2}, 1, []int32{1})
	c.elect(2, []int32{1, 2}, 1, []int32{1})
	r := produceTo(t, c.nodes[1].client, 1, -1, 1000, rowBatch(1))
	if ferr.Code(r.GetErrorCode()) != ferr.NotEnoughReplicasException {
		t.Fatalf("acks=-1 with ISR [1] and min ISR 2: code %d, want NOT_ENOUGH_REPLICAS", r.GetErrorCode())
	}
	if leo := c.replica(1, 1).Log.LogEndOffset(); leo != 0 {
		t.Fatalf("a refused write was appended: log end %d", leo)
	}
	if r := upsert(t, c.nodes[1].client, 2, -1, -1, -1, map[int64]string{1: "a"}); ferr.Code(r.GetErrorCode()) != ferr.NotEnoughReplicasException {
		t.Fatalf("PUT_KV acks=-1 with ISR [1] and min ISR 2: code %d", r.GetErrorCode())
	}
	if r := produceTo(t, c.nodes[1].client, 1, 1, 1000, rowBatch(1)); r.GetErrorCode() != 0 {
		t.Fatalf("acks=1: %d %s", r.GetErrorCode(), r.GetErrorMessage())
	}
}

// A follower that stops fetching leaves the ISR after log.replica.max-lag-time, which lets
// acks=-1 writes complete again; when it is back and has caught up it rejoins.
func TestISRShrinksAfterTheLagTimeAndExpandsAfterCatchUp(t *testing.T) {
	const lag = 300 * time.Millisecond
	c := newRCluster(t, 3, 1, lag)
	c.table(1, false)
	c.elect(1, []int32{1, 2, 3}, 1, []int32{1, 2, 3})
	if r := produceTo(t, c.nodes[1].client, 1, -1, 10000, rowBatch(2)); r.GetErrorCode() != 0 {
		t.Fatalf("produce: %d", r.GetErrorCode())
	}
	c.stop(3)
	start := time.Now()
	if r := produceTo(t, c.nodes[1].client, 1, -1, 10000, rowBatch(2)); r.GetErrorCode() != 0 {
		t.Fatalf("acks=-1 with a follower gone: %d %s", r.GetErrorCode(), r.GetErrorMessage())
	}
	if d := time.Since(start); d < lag/2 {
		t.Fatalf("acks=-1 answered after %v although ISR member 3 was gone and the lag time is %v", d, lag)
	}
	if isr := c.ctl.state(bucket0(1)).ISR; !slices.Equal(isr, []int32{1, 2}) {
		t.Fatalf("ISR after the lag time = %v, want [1 2]", isr)
	}
	for range 5 {
		if r := produceTo(t, c.nodes[1].client, 1, 1, 10000, rowBatch(3)); r.GetErrorCode() != 0 {
			t.Fatalf("produce: %d", r.GetErrorCode())
		}
	}
	c.start(3)
	waitFor(t, "server 3 back in the ISR", func() bool { return slices.Equal(c.ctl.state(bucket0(1)).ISR, []int32{1, 2, 3}) })
	c.waitInSync(1, 1, 2, 3)
}

// A leader change with divergent uncommitted tails: the old leader appended batches nobody
// copied, the new leader appended others at the same offsets; when the old leader comes back
// as a follower it truncates its tail by the new leader's lineage and the replicas agree.
func TestOldLeaderTruncatesItsDivergentTail(t *testing.T) {
	c := newRCluster(t, 3, 1, time.Minute)
	c.table(1, false)
	c.elect(1, []int32{1, 2, 3}, 1, []int32{1, 2, 3})
	for range 3 {
		if r := produceTo(t, c.nodes[1].client, 1, -1, 10000, rowBatch(2)); r.GetErrorCode() != 0 {
			t.Fatalf("produce: %d", r.GetErrorCode())
		}
	}
	c.waitInSync(1, 1, 2, 3)
	c.stop(2)
	c.stop(3)
	// Uncommitted on server 1 only: offsets 6..10.
	for range 2 {
		if r := produceTo(t, c.nodes[1].client, 1, 1, 10000, rowBatch(2)); r.GetErrorCode() != 0 {
			t.Fatalf("acks=1 produce: %d", r.GetErrorCode())
		}
	}
	if r := produceTo(t, c.nodes[1].client, 1, 1, 10000, rowBatch(1)); r.GetErrorCode() != 0 {
		t.Fatalf("acks=1 produce: %d", r.GetErrorCode())
	}
	old, _, oldLEO := c.logBytes(1, 1)
	if oldLEO != 11 {
		t.Fatalf("old leader's log end %d, want 11", oldLEO)
	}
	c.stop(1)
	c.start(2)
	c.start(3)
	c.elect(1, []int32{1, 2, 3}, 2, []int32{2, 3})
	for _, n := range []int32{3, 4} { // different batch boundaries from the old tail
		if r := produceTo(t, c.nodes[2].client, 1, -1, 10000, rowBatch(n)); r.GetErrorCode() != 0 {
			t.Fatalf("produce to the new leader: %d %s", r.GetErrorCode(), r.GetErrorMessage())
		}
	}
	c.waitInSync(1, 2, 3)
	c.start(1)
	c.waitInSync(1, 2, 3, 1)
	now, _, leo := c.logBytes(1, 1)
	if leo != 13 {
		t.Fatalf("old leader's log end after rejoining %d, want 13", leo)
	}
	if slices.Equal(now, old) {
		t.Fatal("the old leader's log did not change")
	}
	waitFor(t, "server 1 back in the ISR", func() bool { return slices.Contains(c.ctl.state(bucket0(1)).ISR, 1) })
	// The new leader's lineage reached the followers' epoch caches.
	for _, id := range []int32{1, 3} {
		got, want := c.replica(id, 1).Log.Replica().EpochEntries(), c.replica(2, 1).Log.Replica().EpochEntries()
		if !slices.Equal(got, want) {
			t.Fatalf("server %d epoch cache %v, leader's %v", id, got, want)
		}
	}
}

// Idempotent writers keep working across a failover: followers rebuilt the writer state from
// the batches they copied, so a retry of an acknowledged batch at the new leader is answered
// as a duplicate with its original offset, and the next sequence is appended.
func TestWriterDedupSurvivesFailover(t *testing.T) {
	c := newRCluster(t, 2, 1, time.Minute)
	c.table(1, false)
	c.elect(1, []int32{1, 2}, 1, []int32{1, 2})
	const writer = 42
	for seq := int32(0); seq < 3; seq++ {
		if r := produceTo(t, c.nodes[1].client, 1, -1, 10000, writerBatch(2, writer, seq)); r.GetErrorCode() != 0 || r.GetBaseOffset() != int64(2*seq) {
			t.Fatalf("seq %d: code %d base %d", seq, r.GetErrorCode(), r.GetBaseOffset())
		}
	}
	c.waitInSync(1, 1, 2)
	c.stop(1)
	c.elect(1, []int32{1, 2}, 2, []int32{2})
	r := produceTo(t, c.nodes[2].client, 1, -1, 10000, writerBatch(2, writer, 2))
	if r.GetErrorCode() != 0 || r.GetBaseOffset() != 4 {
		t.Fatalf("retry of seq 2 at the new leader: code %d base %d, want the original offset 4", r.GetErrorCode(), r.GetBaseOffset())
	}
	if leo := c.replica(2, 1).Log.LogEndOffset(); leo != 6 {
		t.Fatalf("the retried batch was appended again: log end %d", leo)
	}
	if r := produceTo(t, c.nodes[2].client, 1, -1, 10000, writerBatch(2, writer, 3)); r.GetErrorCode() != 0 || r.GetBaseOffset() != 6 {
		t.Fatalf("seq 3 at the new leader: code %d base %d", r.GetErrorCode(), r.GetBaseOffset())
	}
	if r := produceTo(t, c.nodes[2].client, 1, -1, 10000, writerBatch(2, writer, 5)); ferr.Code(r.GetErrorCode()) != ferr.OutOfOrderSequenceException {
		t.Fatalf("a gap in the sequence at the new leader: code %d", r.GetErrorCode())
	}
}

// Primary-key followers are hot: they apply the committed changelog to their own state as
// they fetch it, so a promoted follower answers lookups of every acknowledged upsert at once
// and takes upserts, which the old leader, back as a follower, copies into its state.
func TestPromotedPKFollowerServesAtOnce(t *testing.T) {
	c := newRCluster(t, 3, 1, time.Minute)
	c.table(7, true)
	c.elect(7, []int32{1, 2, 3}, 1, []int32{1, 2, 3})
	want := map[int64]string{}
	for i := range int64(30) {
		rows := map[int64]string{i: "v1", i / 2: "v2"}
		if r := upsert(t, c.nodes[1].client, 7, -1, 9, int32(i), rows); r.GetErrorCode() != 0 {
			t.Fatalf("upsert %d: %d %s", i, r.GetErrorCode(), r.GetErrorMessage())
		}
		for k, v := range rows {
			want[k] = v
		}
	}
	// The followers applied every acknowledged upsert to their own state (hot standby).
	leaderHW := c.replica(1, 7).Log.HighWatermark()
	for _, id := range []int32{2, 3} {
		waitFor(t, "follower state to catch up", func() bool { return c.replica(id, 7).KV.AppliedOffset() >= leaderHW })
	}
	c.stop(1)
	c.elect(7, []int32{1, 2, 3}, 2, []int32{2, 3})
	ids := make([]int64, 0, len(want))
	for k := range want {
		ids = append(ids, k)
	}
	got, code := lookupNames(t, c.nodes[2].client, 7, ids...)
	if code != ferr.None {
		t.Fatalf("lookup on the promoted follower: code %d", code)
	}
	for i, id := range ids {
		if got[i] != want[id] {
			t.Fatalf("promoted follower: key %d = %q, want %q", id, got[i], want[id])
		}
	}
	// A retry of the last acknowledged batch is a duplicate at the new leader.
	before := c.replica(2, 7).Log.LogEndOffset()
	if r := upsert(t, c.nodes[2].client, 7, -1, 9, 29, map[int64]string{29: "v1", 14: "v2"}); r.GetErrorCode() != 0 {
		t.Fatalf("retried upsert: %d %s", r.GetErrorCode(), r.GetErrorMessage())
	}
	if after := c.replica(2, 7).Log.LogEndOffset(); after != before {
		t.Fatalf("a retried upsert was written again: changelog end %d -> %d", before, after)
	}
	if r := upsert(t, c.nodes[2].client, 7, -1, 9, 30, map[int64]string{1000: "new"}); r.GetErrorCode() != 0 {
		t.Fatalf("upsert at the new leader: %d %s", r.GetErrorCode(), r.GetErrorMessage())
	}
	c.waitInSync(7, 2, 3)
	c.start(1)
	c.waitInSync(7, 2, 3, 1)
	// Server 1 follows again; promote it back and read the new leader's write there.
	c.elect(7, []int32{1, 2, 3}, 1, []int32{1, 2, 3})
	if got, code := lookupNames(t, c.nodes[1].client, 7, 1000, 29); code != ferr.None || got[0] != "new" || got[1] != "v1" {
		t.Fatalf("lookup after promoting server 1 back: %v code %d", got, code)
	}
}

// A state that no longer lists a server deletes its replica; the remaining replica, now the
// only one, reopens its log standalone (HW = its durable end) and keeps every record.
func TestShrinkingToOneReplica(t *testing.T) {
	c := newRCluster(t, 2, 1, time.Minute)
	c.table(1, false)
	c.elect(1, []int32{1, 2}, 1, []int32{1, 2})
	if r := produceTo(t, c.nodes[1].client, 1, -1, 10000, rowBatch(4)); r.GetErrorCode() != 0 {
		t.Fatalf("produce: %d", r.GetErrorCode())
	}
	c.waitInSync(1, 1, 2)
	dir := c.replica(2, 1).Log.Dir()
	c.elect(1, []int32{1}, 1, []int32{1})
	c.ctl.mu.Lock()
	st := c.ctl.states[bucket0(1)]
	c.ctl.mu.Unlock()
	tbl, _ := c.cat.TableByID(1)
	if err := c.nodes[2].srv.ApplyBucketStates(context.Background(), []cluster.BucketUpdate{{Table: tbl, Bucket: bucket0(1), State: st}}); err != nil {
		t.Fatal(err)
	}
	if c.replica(2, 1) != nil {
		t.Fatal("server 2 still holds a replica it is no longer assigned")
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("the dropped replica's directory is still there: %v", err)
	}
	if r := produceTo(t, c.nodes[1].client, 1, -1, 10000, rowBatch(1)); r.GetErrorCode() != 0 || r.GetBaseOffset() != 4 {
		t.Fatalf("produce to the single replica: code %d base %d", r.GetErrorCode(), r.GetBaseOffset())
	}
	if c.replica(1, 1).Log.ExternalHighWatermark() {
		t.Fatal("a single-replica bucket still runs with an external high watermark")
	}
	if got := latest(t, c.nodes[1].client, 1); got != 5 {
		t.Fatalf("latest offset %d, want 5", got)
	}
	// A repeated (not newer) state changes nothing.
	if err := c.nodes[1].srv.ApplyBucketStates(context.Background(), []cluster.BucketUpdate{{Table: tbl, Bucket: bucket0(1), State: st}}); err != nil {
		t.Fatal(err)
	}
	if got := latest(t, c.nodes[1].client, 1); got != 5 {
		t.Fatalf("latest offset after a repeated state %d, want 5", got)
	}
}

// The leader goes away in the middle of a stream of acks=-1 appends from an idempotent
// writer (while a request is in flight); the writer retries every unanswered batch at the
// new leader, as clients do after a metadata refresh. Every acknowledged batch is in the new
// leader's log exactly once, in sequence order, and all replicas agree afterwards.
func TestLeaderLossDuringAcksAllStream(t *testing.T) {
	c := newRCluster(t, 3, 2, time.Minute)
	c.table(1, false)
	c.elect(1, []int32{1, 2, 3}, 1, []int32{1, 2, 3})
	const writer, batches = 77, 80
	var leader atomic.Int32
	leader.Store(1)
	conns := map[int32]*wire.ClientConn{1: c.nodes[1].client, 2: c.nodes[2].client}
	halfway := make(chan struct{})
	failedOver := make(chan struct{})
	go func() {
		<-halfway
		c.stop(1)
		c.elect(1, []int32{1, 2, 3}, 2, []int32{2, 3})
		leader.Store(2)
		close(failedOver)
	}()
	for seq := int32(0); seq < batches; seq++ {
		if seq == batches/2 {
			close(halfway)
		}
		deadline := time.Now().Add(10 * time.Second)
		for {
			if time.Now().After(deadline) {
				t.Fatalf("seq %d never acknowledged", seq)
			}
			var resp flusspb.ProduceLogResponse
			err := conns[leader.Load()].Call(context.Background(), wire.ProduceLog, &flusspb.ProduceLogRequest{Acks: proto.Int32(-1),
				TableId: proto.Int64(1), TimeoutMs: proto.Int32(2000), BucketsReq: []*flusspb.PbProduceLogReqForBucket{
					{BucketId: proto.Int32(0), Records: writerBatch(1, writer, seq)}}}, &resp)
			if err == nil && resp.BucketsResp[0].GetErrorCode() == 0 {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	<-failedOver
	c.waitInSync(1, 2, 3)
	data, _, _ := c.logBytes(2, 1)
	var seqs []int32
	for b, err := range record.Iterate(data) {
		if err != nil {
			t.Fatal(err)
		}
		if b.WriterID() == writer {
			seqs = append(seqs, b.BatchSequence())
		}
	}
	if len(seqs) != batches {
		t.Fatalf("%d batches of the writer in the log, want %d: %v", len(seqs), batches, seqs)
	}
	for i, s := range seqs {
		if s != int32(i) {
			t.Fatalf("batch %d of the log has sequence %d", i, s)
		}
	}
	// The old leader comes back as a follower and agrees.
	c.start(1)
	c.waitInSync(1, 2, 3, 1)
}

// A follower whose log ends before the leader's log start (the leader's retention removed
// what it lacks) restarts its log at the leader's start and catches up from there.
func TestFollowerBehindTheLeadersLogStartRestartsThere(t *testing.T) {
	c := newRCluster(t, 2, 1, time.Minute)
	c.segmentBytes = 512
	c.stop(1)
	c.start(1) // small segments on the leader
	c.stop(2)
	c.tableWith(1, false, map[string]string{metadata.PropLogTTL: "1ms"})
	c.elect(1, []int32{1, 2}, 1, []int32{1})
	for range 30 {
		if r := produceTo(t, c.nodes[1].client, 1, -1, 10000, rowBatch(5)); r.GetErrorCode() != 0 {
			t.Fatalf("produce: %d %s", r.GetErrorCode(), r.GetErrorMessage())
		}
	}
	leader := c.replica(1, 1).Log
	if _, err := leader.Retention().DeleteExpiredSegments(time.Now().Add(time.Hour).UnixMilli()); err != nil {
		t.Fatal(err)
	}
	start := leader.LogStartOffset()
	if start == 0 {
		t.Fatal("retention removed nothing from the leader's log")
	}
	c.start(2)
	c.waitInSync(1, 1, 2)
	if got := c.replica(2, 1).Log.LogStartOffset(); got != start {
		t.Fatalf("follower log starts at %d, the leader's at %d", got, start)
	}
	waitFor(t, "server 2 in the ISR", func() bool { return slices.Contains(c.ctl.state(bucket0(1)).ISR, 2) })
	if r := produceTo(t, c.nodes[1].client, 1, -1, 10000, rowBatch(1)); r.GetErrorCode() != 0 {
		t.Fatalf("produce after the follower caught up: %d", r.GetErrorCode())
	}
	c.waitInSync(1, 1, 2)
}

// A promoted PK follower may hold the last acknowledged upserts only in its log: it learns
// the high watermark that covers them on its next fetch, which its leader's death prevented.
// Lookups on it must still see them (the read barrier, read_barrier.go): they wait until the
// other ISR member has fetched from the new leader and its HW passed its epoch start.
func TestPromotedPKFollowerReadsWaitForEarlierLeadersWrites(t *testing.T) {
	c := newRCluster(t, 3, 1, time.Minute)
	c.table(8, true)
	c.elect(8, []int32{1, 2, 3}, 1, []int32{1, 2, 3})
	want := map[int64]string{}
	for i := range int64(20) {
		if r := upsert(t, c.nodes[1].client, 8, -1, 9, int32(i), map[int64]string{i: fmt.Sprint("v", i)}); r.GetErrorCode() != 0 {
			t.Fatalf("upsert %d: %d %s", i, r.GetErrorCode(), r.GetErrorMessage())
		}
		want[i] = fmt.Sprint("v", i)
	}
	c.stop(1)
	c.stop(3)
	// Server 2 leads with ISR [2 3]; its HW cannot pass what it learned from server 1 until
	// server 3 fetches from it.
	c.elect(8, []int32{1, 2, 3}, 2, []int32{2, 3})
	rep := c.replica(2, 8)
	lagging := rep.KV.AppliedOffset() < rep.Log.LogEndOffset()
	t.Logf("promoted with applied offset %d, log end %d (barrier exercised: %v)", rep.KV.AppliedOffset(), rep.Log.LogEndOffset(), lagging)
	restarted := make(chan struct{})
	go func() {
		defer close(restarted)
		time.Sleep(300 * time.Millisecond)
		c.start(3)
	}()
	defer func() { <-restarted }()
	ids := make([]int64, 0, len(want))
	for k := range want {
		ids = append(ids, k)
	}
	got, code := lookupNames(t, c.nodes[2].client, 8, ids...)
	if code != ferr.None {
		t.Fatalf("lookup on the promoted follower: code %d", code)
	}
	for i, id := range ids {
		if got[i] != want[id] {
			t.Fatalf("promoted follower: key %d = %q, want %q (an acknowledged upsert is missing)", id, got[i], want[id])
		}
	}
}
