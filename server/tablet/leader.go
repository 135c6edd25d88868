package tablet

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
	"github.com/stromdb/strom/server/cluster"
	"github.com/stromdb/strom/server/logstore"
)

// The leader side of a replicated bucket (docs/cluster.md, "Replication"):
//
//   - Followers fetch with FETCH_LOG carrying follower_server_id, on the internal listener
//     only. The fetch offset is the follower's log end (it fsyncs what it appended before it
//     asks for more), recorded as its LEO.
//   - HW = min(the leader's durable log end, the LEO of every other ISR member); it is
//     recomputed on every follower fetch and, by a goroutine per led bucket, on every change
//     of the local log (an append made durable).
//   - ISR expand: a follower outside the ISR whose LEO reaches the HW and the current epoch's
//     start is added with AdjustISR. ISR shrink: a periodic check removes members that have
//     not caught up with the leader's log end for log.replica.max-lag-time (Kafka's rule: a
//     member at the log end is in sync however long ago it fetched).
//   - acks=-1 writes wait until the HW passes them; log.replica.min-in-sync-replicas-number
//     refuses them with NOT_ENOUGH_REPLICAS before anything is appended.

// defaultRequestTimeout is the wait of an acks=-1 write whose request carries no timeout.
const defaultRequestTimeout = 30 * time.Second

// leadership is the leader side of replicated buckets: it starts and ends leaderships,
// serves followers' fetches, keeps the high watermark and the ISR, and admits client
// writes (writeAdmission). Its state per bucket is the bucket's replState; it owns the
// AdjustISR calls in flight.
type leadership struct {
	opts   leadershipOptions
	log    *slog.Logger
	minISR int
	maxLag time.Duration
	isrWG  sync.WaitGroup // AdjustISR calls in flight
	membership
	responseLimit

	replicaHolder
	followingControl
}

// leadershipOptions are the parts of Options leadership reads.
type leadershipOptions struct {
	ServerID         int32
	Now              func() time.Time
	Replication      cluster.ReplicationControl
	InternalListener string
}

// awaitISRChanges returns once no AdjustISR call is in flight (close).
func (s *leadership) awaitISRChanges() { s.isrWG.Wait() }

// becomeLeader makes rep the leader of st.LeaderEpoch: it stops following, starts the epoch
// in the log at its end, promotes the PK state (which stages the uncommitted tail), publishes
// the lineage and then accepts client requests. A newer state of the same leadership (an ISR
// change) only updates the ISR.
func (s *leadership) becomeLeader(ctx context.Context, rep *Replica, st cluster.BucketState) error {
	rs := rep.repl
	now := s.opts.Now()
	rs.mu.Lock()
	if rs.leading.Load() && rs.state.LeaderEpoch == st.LeaderEpoch {
		rs.state = st
		syncFollowersLocked(rs, st, s.opts.ServerID, now)
		rs.mu.Unlock()
		s.advanceHW(rep)
		return nil
	}
	rs.mu.Unlock()
	s.stopFollowing(rep)
	s.stopLeading(rep)
	leo := rep.Log.LogEndOffset()
	if err := rep.Log.Replica().AssignEpoch(st.LeaderEpoch, leo); err != nil {
		return fmt.Errorf("start leader epoch %d: %w", st.LeaderEpoch, err)
	}
	if rep.KV != nil {
		if err := rep.KV.BecomeLeader(ctx); err != nil {
			return fmt.Errorf("promote the primary-key state: %w", err)
		}
	}
	lin := cluster.Lineage{LeaderEpoch: st.LeaderEpoch, Entries: epochEntries(rep.Log.Replica().EpochEntries())}
	if err := s.opts.Replication.PublishLineage(ctx, rep.Bucket, lin); err != nil {
		if rep.KV != nil {
			rep.KV.BecomeFollower() // not leading after all: staged writes must not linger
		}
		return fmt.Errorf("publish the lineage of leader epoch %d: %w", st.LeaderEpoch, err)
	}
	hctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	rs.mu.Lock()
	rs.state, rs.known = st, true
	rs.epochStart = leo
	rs.followers = map[int32]*followerProgress{}
	syncFollowersLocked(rs, st, s.opts.ServerID, now)
	rs.stopHW, rs.hwDone = cancel, done
	rs.leading.Store(true)
	rs.mu.Unlock()
	go func() {
		defer close(done)
		s.hwLoop(hctx, rep)
	}()
	s.log.Info("leading bucket", "bucket", rep.Bucket, "leader_epoch", st.LeaderEpoch, "isr", st.ISR, "epoch_start", leo)
	return nil
}

// syncFollowersLocked keeps one progress entry per other replica of st; a new entry starts
// unknown (LEO -1) and caught up now, as Kafka resets a replica's state on election.
func syncFollowersLocked(rs *replState, st cluster.BucketState, self int32, now time.Time) {
	for _, id := range st.Replicas {
		if id != self && rs.followers[id] == nil {
			rs.followers[id] = &followerProgress{leo: -1, lastCaughtUp: now, lastFetch: now, lastFetchLEO: -1}
		}
	}
	for id := range rs.followers {
		if !st.IsReplica(id) {
			delete(rs.followers, id)
		}
	}
}

// stopLeading ends a leadership: client requests are refused from now on, waiters of
// acks=-1 writes fail with NOT_LEADER_OR_FOLLOWER, and the HW loop stops.
func (s *leadership) stopLeading(rep *Replica) {
	rs := rep.repl
	rs.roleMu.Lock() // waits for writes admitted but not yet appended
	rs.mu.Lock()
	if rs.leading.Load() {
		rs.leading.Store(false)
		close(rs.fence)
		rs.fence = make(chan struct{})
	}
	rs.roleMu.Unlock()
	stop, done := rs.stopHW, rs.hwDone
	rs.stopHW, rs.hwDone = nil, nil
	rs.followers = nil
	rs.mu.Unlock()
	if stop != nil {
		stop()
		<-done
	}
}

// hwLoop recomputes the HW at every change of the led log (its durable end moves after each
// fsync), so the HW follows the leader's own appends when the followers are ahead of it.
func (s *leadership) hwLoop(ctx context.Context, rep *Replica) {
	for {
		ch := rep.Log.Changed()
		s.advanceHW(rep)
		select {
		case <-ch:
		case <-ctx.Done():
			return
		}
	}
}

// advanceHW sets the HW to min(durable log end, LEO of every other ISR member) under rs.mu,
// so that no ISR change interleaves with it, and applies newly committed PK batches.
func (s *leadership) advanceHW(rep *Replica) {
	rs := rep.repl
	rs.mu.Lock()
	if !rs.leading.Load() {
		rs.mu.Unlock()
		return
	}
	cur := rep.Log.HighWatermark()
	hw := rep.Log.Replica().DurableLogEndOffset()
	for _, id := range rs.state.ISR {
		if id == s.opts.ServerID {
			continue
		}
		if p := rs.followers[id]; p == nil || p.leo < 0 {
			hw = min(hw, cur) // an ISR member not heard from in this leadership holds the HW
		} else {
			hw = min(hw, p.leo)
		}
	}
	moved := false
	if hw > cur {
		n, err := rep.Log.Replica().SetHighWatermark(hw)
		if err != nil {
			s.log.Warn("advance high watermark", "bucket", rep.Bucket, "err", err)
		}
		moved = n > cur
	}
	rs.mu.Unlock()
	if moved && rep.KV != nil {
		if err := rep.KV.ApplyCommitted(); err != nil {
			s.log.Warn("apply committed primary-key batches", "bucket", rep.Bucket, "err", err)
		}
	}
}

// admitWrite checks that a write may be appended to a replicated bucket: this server leads
// it, and for acks=-1 the ISR has at least the configured minimum. It returns the fence of
// the current leadership. The caller holds rs.roleMu for reading until its append is done.
func (s *leadership) admitWrite(rep *Replica, acks int32) (<-chan struct{}, error) {
	rs := rep.repl
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if !rs.leading.Load() {
		return nil, ferr.New(ferr.NotLeaderOrFollower, "Leader not local for bucket %s on tablet server %d", rep.Bucket, s.opts.ServerID)
	}
	if err := s.membershipCurrent(rep.Bucket); err != nil {
		return nil, err // an acks=1 write here could be lost when a successor truncates us
	}
	if acks == -1 && len(rs.state.ISR) < s.minISR {
		return nil, ferr.New(ferr.NotEnoughReplicasException,
			"The size of the current ISR %v is insufficient to satisfy the min.isr requirement of %d for bucket %s", rs.state.ISR, s.minISR, rep.Bucket)
	}
	return rs.fence, nil
}

// awaitCommitted waits until the log's HW reaches end: nil then, NOT_LEADER_OR_FOLLOWER when
// the leadership ends first (the batch may still be committed by the next leader; the client
// retries and idempotence drops the duplicate), REQUEST_TIME_OUT after timeout, and ctx's
// error when the client's connection closes (or the server shuts down) first.
//
// lapsed (membership_lapse.go) ends it like the fence: the membership lapsed.
func awaitCommitted(ctx context.Context, l *logstore.Log, b cluster.Bucket, end int64, fence, lapsed <-chan struct{}, timeout time.Duration) error {
	if l.HighWatermark() >= end {
		return nil
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	for {
		ch := l.Changed()
		if l.HighWatermark() >= end {
			return nil
		}
		select {
		case <-ch:
		case <-fence:
			if l.HighWatermark() >= end {
				return nil
			}
			return ferr.New(ferr.NotLeaderOrFollower, "leadership of %s ended before the write was replicated", b)
		case <-lapsed:
			if l.HighWatermark() >= end {
				return nil
			}
			return errMembershipLapsed
		case <-t.C:
			return ferr.New(ferr.RequestTimeOut, "the write to %s was not replicated to the in-sync replicas within %v", b, timeout)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func requestTimeout(ms int32) time.Duration {
	if ms <= 0 {
		return defaultRequestTimeout
	}
	return time.Duration(ms) * time.Millisecond
}

// serveFollowerFetch serves a follower's FETCH_LOG: every bucket is read up to the log end
// (ReadReplica), the fetch offset is recorded as the follower's LEO, and the answer carries
// the HW computed after that. Like a client's, the fetch long-polls: an empty read parks until
// data arrives, a bucket's HW moves (so followers learn the HW promptly), or max_wait_ms.
func (s *leadership) serveFollowerFetch(req *wire.Request, r *flusspb.FetchLogRequest) (proto.Message, error) {
	if !req.IsInternal(s.opts.InternalListener) {
		return nil, ferr.New(ferr.AuthorizationException,
			"replication fetches (follower_server_id %d) are accepted only on the internal listener", r.GetFollowerServerId())
	}
	resp, got, hws := s.followerFetchOnce(r)
	if got > 0 || r.GetMaxWaitMs() <= 0 {
		return resp, nil
	}
	resp.Release()
	wait := time.Duration(r.GetMaxWaitMs()) * time.Millisecond
	cctx := req.Context()
	return req.Defer(func() (proto.Message, error) {
		deadline := time.Now().Add(wait)
		for {
			changed := s.replicaChangeChannels(r)
			resp, got, now := s.followerFetchOnce(r)
			if got > 0 || !slices.Equal(now, hws) || !time.Now().Before(deadline) || cctx.Err() != nil {
				return resp, nil
			}
			resp.Release()
			wctx, cancel := context.WithDeadline(cctx, deadline)
			waitAny(wctx, changed)
			cancel()
		}
	})
}

// replicaChangeChannels returns the change notification of every requested bucket held here.
func (s *leadership) replicaChangeChannels(r *flusspb.FetchLogRequest) []<-chan struct{} {
	var chans []<-chan struct{}
	for _, tr := range r.TablesReq {
		for _, br := range tr.BucketsReq {
			if rep := s.hosted(bucketOf(tr.GetTableId(), br.PartitionId, br.GetBucketId())); rep != nil {
				chans = append(chans, rep.Log.Changed())
			}
		}
	}
	return chans
}

// followerFetchOnce reads every requested bucket once for a follower. It returns the
// response, the record bytes it holds and the HW answered per bucket (-1 for errors).
func (s *leadership) followerFetchOnce(r *flusspb.FetchLogRequest) (*fetchResponse, int, []int64) {
	resp := &fetchResponse{FetchLogResponse: &flusspb.FetchLogResponse{}}
	budget := s.maxResponseBytes(r)
	total := 0
	var hws []int64
	follower := r.GetFollowerServerId()
	for _, tr := range r.TablesReq {
		out := &flusspb.PbFetchLogRespForTable{TableId: proto.Int64(tr.GetTableId())}
		for _, br := range tr.BucketsReq {
			bo := &flusspb.PbFetchLogRespForBucket{BucketId: proto.Int32(br.GetBucketId()), PartitionId: br.PartitionId}
			out.BucketsResp = append(out.BucketsResp, bo)
			b := bucketOf(tr.GetTableId(), br.PartitionId, br.GetBucketId())
			n, err := s.readForFollower(resp, bo, b, follower, br.GetFetchOffset(), min(budget, int(br.GetMaxFetchBytes())), total == 0)
			if err != nil {
				setBucketError(&bo.ErrorCode, &bo.ErrorMessage, err)
				hws = append(hws, -1)
				continue
			}
			hws = append(hws, bo.GetHighWatermark())
			total += n
			budget = max(budget-n, 0)
		}
		resp.TablesResp = append(resp.TablesResp, out)
	}
	return resp, total, hws
}

// readForFollower records the follower's fetch offset and reads from it up to the log end.
func (s *leadership) readForFollower(resp *fetchResponse, bo *flusspb.PbFetchLogRespForBucket, b cluster.Bucket, follower int32, offset int64, limit int, minOne bool) (int, error) {
	rep := s.hosted(b)
	if rep == nil {
		return 0, ferr.New(ferr.UnknownTableOrBucketException, "Unknown table or bucket: %s", b)
	}
	if rep.repl == nil || !rep.repl.leading.Load() {
		return 0, ferr.New(ferr.NotLeaderOrFollower, "Leader not local for bucket %s on tablet server %d", b, s.opts.ServerID)
	}
	if err := s.recordFetch(rep, follower, offset); err != nil {
		return 0, err
	}
	// Set before the read: an out-of-range answer tells a lagging follower where to restart.
	bo.LogStartOffset = proto.Int64(rep.Log.LogStartOffset())
	res, err := rep.Log.Replica().ReadReplica(offset, limit, minOne)
	if err != nil {
		return 0, err
	}
	bo.HighWatermark = proto.Int64(rep.Log.HighWatermark())
	bo.Records = []byte{}
	if res.Size > 0 {
		resp.addFileRecords(bo, res)
	}
	return int(res.Size), nil
}

// recordFetch notes a follower's fetch offset as its LEO, updates its caught-up time, adds
// it to the ISR when it qualifies, and advances the HW.
func (s *leadership) recordFetch(rep *Replica, follower int32, offset int64) error {
	rs := rep.repl
	rs.mu.Lock()
	if !rs.leading.Load() {
		rs.mu.Unlock()
		return ferr.New(ferr.NotLeaderOrFollower, "Leader not local for bucket %s on tablet server %d", rep.Bucket, s.opts.ServerID)
	}
	p := rs.followers[follower]
	if p == nil {
		rs.mu.Unlock()
		return ferr.New(ferr.NotLeaderOrFollower, "server %d is not a replica of %s (replicas %v)", follower, rep.Bucket, rs.state.Replicas)
	}
	leo, start := rep.Log.LogEndOffset(), rep.Log.LogStartOffset()
	if offset < start || offset > leo {
		rs.mu.Unlock()
		return nil // the read answers LOG_OFFSET_OUT_OF_RANGE
	}
	now := s.opts.Now()
	if offset >= leo {
		p.lastCaughtUp = now
	} else if p.lastFetchLEO >= 0 && offset >= p.lastFetchLEO && p.lastFetch.After(p.lastCaughtUp) {
		p.lastCaughtUp = p.lastFetch
	}
	p.lastGap = now.Sub(p.lastFetch)
	p.lastFetch, p.lastFetchLEO, p.leo = now, leo, offset
	if !rs.state.InISR(follower) && mayChangeISRLocked(rs, now) && offset >= rep.Log.HighWatermark() && offset >= rs.epochStart {
		rs.isrBusy = true
		s.changeISR(rep, rs.state, append(slices.Clone(rs.state.ISR), follower))
	}
	rs.mu.Unlock()
	s.advanceHW(rep)
	return nil
}

// changeISR asks the control plane for a new ISR in the background. Caller holds rs.mu and
// set rs.isrBusy.
func (s *leadership) changeISR(rep *Replica, expect cluster.BucketState, isr []int32) {
	s.isrWG.Add(1)
	go func() {
		defer s.isrWG.Done()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		ns, err := s.opts.Replication.AdjustISR(ctx, rep.Bucket, expect, isr)
		rs := rep.repl
		rs.mu.Lock()
		rs.isrBusy = false
		if err != nil {
			rs.isrRefused, rs.isrRefusedAt = expect, s.opts.Now()
		}
		if err == nil && rs.leading.Load() && ns.LeaderEpoch == rs.state.LeaderEpoch && ns.Newer(rs.state) {
			rs.state = ns
			syncFollowersLocked(rs, ns, s.opts.ServerID, s.opts.Now())
		}
		rs.mu.Unlock()
		if err != nil {
			s.log.Warn("adjust ISR", "bucket", rep.Bucket, "from", expect.ISR, "to", isr, "err", err)
			return
		}
		s.log.Info("ISR changed", "bucket", rep.Bucket, "from", expect.ISR, "to", ns.ISR)
		s.advanceHW(rep)
	}()
}

// isrRetryAfter is how long a leader waits before asking again for an ISR change that was
// refused, while its view of the bucket has not moved on.
const isrRetryAfter = time.Second

// mayChangeISRLocked reports whether the leader may ask for an ISR change now: none is in
// flight, and the last refused one was from an older state than today's or isrRetryAfter
// ago. Caller holds rs.mu.
func mayChangeISRLocked(rs *replState, now time.Time) bool {
	if rs.isrBusy {
		return false
	}
	if rs.isrRefusedAt.IsZero() || rs.state.Newer(rs.isrRefused) {
		return true
	}
	return now.Sub(rs.isrRefusedAt) >= isrRetryAfter
}

// shrinkISRs removes, from every bucket this server leads, the ISR members that have not
// caught up with the log end for maxLag.
func (s *leadership) shrinkISRs() {
	now := s.opts.Now()
	for _, rep := range s.Replicas() {
		rs := rep.repl
		if rs == nil || !rs.leading.Load() {
			continue
		}
		rs.mu.Lock()
		if rs.leading.Load() && mayChangeISRLocked(rs, now) {
			leo := rep.Log.LogEndOffset()
			keep := make([]int32, 0, len(rs.state.ISR))
			for _, id := range rs.state.ISR {
				p := rs.followers[id]
				if id == s.opts.ServerID || p != nil && inSyncByLag(p, leo, now, s.maxLag) {
					keep = append(keep, id)
				}
			}
			if len(keep) < len(rs.state.ISR) {
				rs.isrBusy = true
				s.changeISR(rep, rs.state, keep)
			}
		}
		rs.mu.Unlock()
	}
}
