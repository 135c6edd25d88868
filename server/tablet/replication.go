package tablet

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/server/cluster"
	"github.com/stromdb/strom/server/config"
	"github.com/stromdb/strom/server/internalconn"
	"github.com/stromdb/strom/server/kvstore"
	"github.com/stromdb/strom/server/logstore"
)

// Replication inside the tablet server (docs/cluster.md, "Replication"). The control plane
// tells the server the state of each bucket it holds (ApplyBucketStates); the server then
// leads the bucket (leader.go: follower tracking, high watermark, ISR changes, acks=-1
// waits) or follows it (this file: truncation by the leader's epoch lineage; fetcher.go:
// copying the leader's log).

// Fluss option keys and defaults read here.
const (
	optMinISR = "log.replica.min-in-sync-replicas-number"
	optMaxLag = "log.replica.max-lag-time"

	defaultMinISR = 1
	defaultMaxLag = 30 * time.Second
)

// replicaOptions resolves the two log.replica.* options: Options fields first, then the
// configuration's raw keys, then Fluss's defaults.
func replicaOptions(o Options) (minISR int, maxLag time.Duration, err error) {
	minISR, maxLag = o.MinInSyncReplicas, o.ReplicaMaxLag
	if minISR == 0 {
		minISR = defaultMinISR
		if v, ok := o.Config.Raw[optMinISR]; ok && v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				return 0, 0, fmt.Errorf("option %s: %q is not a positive integer", optMinISR, v)
			}
			minISR = n
		}
	}
	if maxLag == 0 {
		maxLag = defaultMaxLag
		if v, ok := o.Config.Raw[optMaxLag]; ok && v != "" {
			d, err := config.ParseDuration(v)
			if err != nil || d <= 0 {
				return 0, 0, fmt.Errorf("option %s: %q is not a positive duration", optMaxLag, v)
			}
			maxLag = d
		}
	}
	return minISR, maxLag, nil
}

// replState is the replication side of a bucket whose replicas are not just this server.
//
// Invariants: leading is true exactly while this server is the leader of state.LeaderEpoch
// and has published its lineage; fence is closed when a leadership ends (waiters of acks=-1
// writes then fail with NOT_LEADER_OR_FOLLOWER); followers holds one entry per other replica
// while leading.
type replState struct {
	leading atomic.Bool
	// roleMu is held for reading from a write's admission through its append, and for
	// writing while a leadership ends, so no client write lands in the log after the replica
	// stopped leading (it would sit in a follower's log where the leader has other batches).
	roleMu sync.RWMutex

	mu         sync.Mutex
	state      cluster.BucketState
	known      bool                        // state was set by an update
	epochStart int64                       // log end offset when this leadership's epoch began
	followers  map[int32]*followerProgress // leader only
	fence      chan struct{}
	isrBusy    bool // an AdjustISR call is in flight
	// isrRefused is the state an AdjustISR last failed from, and isrRefusedAt when; while
	// state is still that one, no new ISR change is asked for before isrRetryAfter has passed
	// (a refused change, e.g. FENCED_LEADER_EPOCH from a stale view, would fail the same way
	// on every follower fetch until the newer state arrives).
	isrRefused   cluster.BucketState
	isrRefusedAt time.Time
	stopHW       context.CancelFunc
	hwDone       chan struct{}

	// Follower setup (lineage wait and truncation), run off ApplyBucketStates.
	stopFollow context.CancelFunc
	followDone chan struct{}
	restarting atomic.Bool // restartFollowerAt is pending
	// resignRefused: the corrupt leader's "no other in-sync replica" ERROR was logged (corrupt_repair.go).
	resignRefused atomic.Bool
}

func newReplState() *replState {
	return &replState{fence: make(chan struct{})}
}

// followerProgress is what a leader knows of one follower (Kafka's Replica state).
type followerProgress struct {
	leo          int64 // the follower's log end offset; -1 until it fetched in this leadership
	lastCaughtUp time.Time
	// The previous fetch: when, and the leader's log end then (Kafka's lastFetchLeaderLogEndOffset).
	lastFetch    time.Time
	lastFetchLEO int64
	lastGap      time.Duration // between the arrivals of the last two fetches (isr_lag.go)
}

// ApplyBucketStates implements the replica side of the cluster contract (docs/cluster.md):
// each update makes this server leader or follower of the bucket, or stops and deletes its
// replica when the state no longer lists this server. An update not newer than the state
// held for the bucket is ignored. It returns once every bucket this server leads accepts
// reads and writes; followers are set up (lineage, truncation, fetching) in the background.
func (s *replicaManager) ApplyBucketStates(ctx context.Context, updates []cluster.BucketUpdate) error {
	s.leadMu.Lock()
	defer s.leadMu.Unlock()
	if s.closed {
		return errors.New("tablet server closed")
	}
	// Distinct buckets are applied in parallel, each bucket's updates in order
	// (apply_parallel.go); leadMu stays held, so calls do not interleave.
	return applyPerBucket(updates, applyParallelism, func(u cluster.BucketUpdate) error {
		return s.applyBucketState(ctx, u)
	})
}

// applyBucketState applies one update. Caller holds leadMu; other buckets' updates may be
// applied concurrently (the standalone map is then guarded by standaloneMu).
func (s *replicaManager) applyBucketState(ctx context.Context, u cluster.BucketUpdate) error {
	b, st, self := u.Bucket, u.State, s.opts.ServerID
	rep := s.hosted(b)
	if held, ok := s.heldState(b, rep); ok && !st.Newer(held) {
		return nil
	}
	if !st.IsReplica(self) {
		s.standaloneMu.Lock()
		delete(s.standalone, b)
		s.standaloneMu.Unlock()
		s.standaloneEpochs.Delete(b)
		if rep == nil {
			return nil
		}
		return s.dropReplica(rep)
	}
	standalone := len(st.Replicas) == 1
	if !standalone && s.opts.Replication == nil {
		return fmt.Errorf("bucket state names replicas %v but this tablet server has no replication control", st.Replicas)
	}
	if rep != nil && (rep.repl == nil) != standalone {
		// The replica set grew from or shrank to this server alone: the log changes between
		// standalone and replicated mode, which is chosen when it is opened.
		if err := s.closeReplica(rep); err != nil {
			return err
		}
		rep = nil
	}
	if rep == nil {
		if u.Table == nil {
			return errors.New("bucket update without its table")
		}
		var err error
		if rep, err = s.openReplica(ctx, b, u.Table, u.Partition, !standalone, 0); err != nil {
			return err
		}
	}
	if standalone {
		if st.Leader != self {
			return ferr.New(ferr.FencedLeaderEpochException, "the only replica %d of %s must lead it, not %d", self, b, st.Leader)
		}
		s.standaloneMu.Lock()
		s.standalone[b] = st
		s.standaloneMu.Unlock()
		s.standaloneEpochs.Store(b, st.LeaderEpoch)
		return nil
	}
	s.standaloneMu.Lock()
	delete(s.standalone, b)
	s.standaloneMu.Unlock()
	s.standaloneEpochs.Delete(b)
	if rep.Log.Offline() != nil {
		s.repairs.kick() // corrupt: a leader resigns, a follower is rebuilt (corrupt_repair.go)
		if st.Leader == self && !rep.repl.leading.Load() {
			// A corrupt log cannot start a leader epoch: hold the state unled, so that the
			// repair loop resigns it.
			s.stopReplication(rep)
			rep.repl.mu.Lock()
			rep.repl.state, rep.repl.known = st, true
			rep.repl.mu.Unlock()
			return nil
		}
	}
	if st.Leader == self {
		return s.becomeLeader(ctx, rep, st)
	}
	return s.becomeFollower(rep, st)
}

// heldState returns the state this server last applied to b.
func (s *replicaManager) heldState(b cluster.Bucket, rep *Replica) (cluster.BucketState, bool) {
	if rep != nil && rep.repl != nil {
		rs := rep.repl
		rs.mu.Lock()
		defer rs.mu.Unlock()
		return rs.state, rs.known
	}
	s.standaloneMu.Lock()
	defer s.standaloneMu.Unlock()
	st, ok := s.standalone[b]
	return st, ok
}

// stopReplication ends whatever replication work runs for rep: follower setup, fetching and
// the leader's high-watermark loop. Afterwards nothing but client requests touches its log.
func (s *replicaManager) stopReplication(rep *Replica) {
	if rep.repl == nil {
		return
	}
	s.stopFollowing(rep)
	s.stopLeading(rep)
}

// closeReplica stops and closes rep, keeping its data. Caller holds leadMu.
func (s *replicaManager) closeReplica(rep *Replica) error {
	s.stopReplication(rep)
	s.mu.Lock()
	if s.replicas[rep.Bucket] == rep {
		delete(s.replicas, rep.Bucket)
	}
	s.mu.Unlock()
	if rep.KV != nil {
		rep.KV.Close()
	}
	return rep.Log.Close()
}

// dropReplica stops rep and deletes its log and state. Caller holds leadMu.
func (s *replicaManager) dropReplica(rep *Replica) error {
	s.stopReplication(rep)
	s.mu.Lock()
	if s.replicas[rep.Bucket] == rep {
		delete(s.replicas, rep.Bucket)
	}
	s.mu.Unlock()
	errs := []error{rep.Log.Close()}
	if rep.KV != nil {
		errs = append(errs, rep.KV.Drop())
	}
	errs = append(errs, os.RemoveAll(bucketDir(s.opts.DataDir, rep.Bucket)))
	return errors.Join(errs...)
}

// following is the follower side of replicated buckets: it sets a follower up (the leader's
// lineage, truncation) and copies the leader's log with one fetcher per leader server
// (fetcher.go), which it owns.
type following struct {
	opts     followingOptions
	log      *slog.Logger
	kv       *kvstore.Store // the server's primary-key state store; nil without one
	fetchMu  sync.Mutex
	fetchers map[int32]*fetcher // follower fetchers by leader server id; guarded by fetchMu
	lineages *lineageWaiter     // reads the leaders' lineages for followers being set up

	leadingControl
	lagRecovery
}

// followingOptions are the parts of Options following reads.
type followingOptions struct {
	ServerID     int32
	Replication  cluster.ReplicationControl
	InternalDial internalconn.Func // a fetcher's connection to its leader; nil: plaintext
	MaxLag       time.Duration     // the ISR lag time (log.replica.max-lag-time); bounds an idle fetch's wait
}

// kvCannotWrite reports whether the server's Pebble store refuses writes (its flushes fail:
// a disk I/O error, a full disk), during which followers do not apply the changelog to it.
func (s *following) kvCannotWrite() bool {
	return s.kv != nil && s.kv.WriteError() != nil
}

// becomeFollower makes rep a follower of st.Leader: it stops leading (failing waiting
// acks=-1 writes and staged PK writes), refuses client data requests, and in the background
// waits for the leader's lineage, truncates what diverged and starts fetching.
func (s *following) becomeFollower(rep *Replica, st cluster.BucketState) error {
	rs := rep.repl
	rs.mu.Lock()
	if rs.known && !rs.leading.Load() && rs.state.Leader == st.Leader && rs.state.LeaderEpoch == st.LeaderEpoch {
		// The same leadership with another ISR: nothing changes for a follower.
		rs.state = st
		rs.mu.Unlock()
		return nil
	}
	rs.mu.Unlock()
	s.stopFollowing(rep)
	s.stopLeading(rep)
	if rep.KV != nil {
		rep.KV.BecomeFollower()
	}
	rs.mu.Lock()
	rs.state, rs.known = st, true
	rs.mu.Unlock()
	if st.Leader == cluster.NoLeader {
		return nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	rs.mu.Lock()
	rs.stopFollow, rs.followDone = cancel, done
	rs.mu.Unlock()
	go func() {
		defer close(done)
		s.setUpFollower(ctx, rep, st)
	}()
	return nil
}

// setUpFollower waits for the lineage of st's leader epoch (the server's lineage waiter reads
// it for all waiting followers at once, lineage_wait.go), truncates the log to where it
// agrees with the leader's, and hands the bucket to the fetcher of st.Leader.
func (s *following) setUpFollower(ctx context.Context, rep *Replica, st cluster.BucketState) {
	lin, stale, err := s.lineages.wait(ctx, rep.Bucket, st.LeaderEpoch)
	if err != nil || stale {
		return // cancelled, or this state is stale and the newer one is on its way
	}
	backoff := 20 * time.Millisecond
	for {
		err := s.truncateByLineage(rep, lin.Entries)
		if err == nil {
			break
		}
		s.log.Warn("truncate follower by leader lineage", "bucket", rep.Bucket, "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, time.Second)
	}
	s.follow(rep, st, lin.Entries)
}

// truncateByLineage cuts the log back to the last offset where it agrees with the leader's
// (Kafka's epoch-based truncation, KIP-101/279): it asks the lineage what the leader would
// answer to EndOffsetForEpoch(its latest epoch), truncates to TruncationOffset, and repeats
// with the epoch it then holds until the answer is final.
func (s *following) truncateByLineage(rep *Replica, lineage []cluster.EpochStart) error {
	for range len(lineage) + len(rep.Log.Replica().EpochEntries()) + 2 {
		le, lend := lineageEndOffset(lineage, rep.Log.Replica().LatestEpoch())
		off, final := rep.Log.Replica().TruncationOffset(le, lend)
		if off < rep.Log.LogEndOffset() {
			s.log.Info("follower truncates its log to the leader's lineage", "bucket", rep.Bucket,
				"from", rep.Log.LogEndOffset(), "to", off)
			var err error
			if rep.KV != nil {
				err = rep.KV.TruncateLog(off)
			} else {
				err = rep.Log.Replica().TruncateTo(off)
			}
			if err != nil {
				return err
			}
		}
		if final {
			return nil
		}
	}
	return fmt.Errorf("truncation of %s by the leader's lineage did not settle", rep.Bucket)
}

// lineageEndOffset is the leader's answer to EndOffsetForEpoch(epoch) (logstore's
// endOffsetFor semantics) computed from its published lineage. For the leader's own epoch
// (the lineage's last) the end is unbounded: a follower holds data of that epoch only as
// copied from this leader.
func lineageEndOffset(lineage []cluster.EpochStart, epoch int32) (int32, int64) {
	n := len(lineage)
	if epoch == logstore.NoEpoch || n == 0 {
		return logstore.NoEpoch, logstore.NoEpochOffset
	}
	if lineage[n-1].Epoch == epoch {
		return epoch, 1<<63 - 1
	}
	h := 0
	for h < n && lineage[h].Epoch <= epoch {
		h++
	}
	switch {
	case h == n:
		return logstore.NoEpoch, logstore.NoEpochOffset
	case h == 0:
		return epoch, lineage[0].StartOffset
	default:
		return lineage[h-1].Epoch, lineage[h].StartOffset
	}
}

// stopFollowing cancels follower setup and removes the bucket from its fetcher, waiting
// until neither touches the log any more.
func (s *following) stopFollowing(rep *Replica) {
	rs := rep.repl
	rs.mu.Lock()
	cancel, done := rs.stopFollow, rs.followDone
	rs.stopFollow, rs.followDone = nil, nil
	rs.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
	s.unfollow(rep.Bucket)
}

// stillLagging reports, under leadMu, whether rep is still a follower of this server whose
// log ends below start (its leader's log start), and returns the current Replica of the
// bucket and its state: UpdateTable replaces a Replica by a copy sharing repl, so repl is what is compared.
func (s *replicaManager) stillLagging(rep *Replica, start int64) (*Replica, cluster.BucketState, bool) {
	rs := rep.repl
	rs.mu.Lock()
	st, leading := rs.state, rs.leading.Load()
	rs.mu.Unlock()
	cur := s.hosted(rep.Bucket)
	if s.closed || cur == nil || cur.repl != rs || leading || st.Leader == cluster.NoLeader || rep.Log.LogEndOffset() >= start {
		return nil, st, false
	}
	return cur, st, true
}

// restartFollowerAt replaces the log of a follower that lags behind the start of its leader's
// log (the leader's retention removed what it lacks) with an empty one starting at the
// leader's log start, then follows again (Kafka's truncateFullyAndStartAt). Writer state of
// the removed range is lost with it. A primary-key follower restarts from a KV snapshot
// instead (bootstrapFromSnapshot), since its state cannot be rebuilt from a trimmed changelog.
func (s *replicaManager) restartFollowerAt(rep *Replica, start int64) {
	defer rep.repl.restarting.Store(false)
	s.leadMu.Lock()
	defer s.leadMu.Unlock()
	rep, st, ok := s.stillLagging(rep, start)
	if !ok {
		return
	}
	s.log.Warn("follower is behind the start of the leader's log; restarting its log there",
		"bucket", rep.Bucket, "log_end", rep.Log.LogEndOffset(), "leader_log_start", start)
	if err := s.dropReplica(rep); err != nil {
		s.log.Error("drop lagging follower log", "bucket", rep.Bucket, "err", err)
		return
	}
	nr, err := s.openReplica(context.Background(), rep.Bucket, rep.Table, rep.Partition, true, start)
	if err != nil {
		s.log.Error("reopen lagging follower log", "bucket", rep.Bucket, "err", err)
		return
	}
	if err := s.becomeFollower(nr, st); err != nil {
		s.log.Error("follow again after restarting the log", "bucket", rep.Bucket, "err", err)
	}
}

// epochEntries converts the log's epoch cache to the lineage form.
func epochEntries(es []logstore.EpochEntry) []cluster.EpochStart {
	out := make([]cluster.EpochStart, len(es))
	for i, e := range es {
		out[i] = cluster.EpochStart{Epoch: e.Epoch, StartOffset: e.StartOffset}
	}
	return out
}

// without returns ids minus id, in order.
func without(ids []int32, id int32) []int32 {
	return slices.DeleteFunc(slices.Clone(ids), func(x int32) bool { return x == id })
}

var (
	_ cluster.ReplicaManager     = (*Server)(nil)
	_ cluster.BucketStateApplier = (*Server)(nil)
)
