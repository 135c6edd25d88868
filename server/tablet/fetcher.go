package tablet

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/record"
	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
	"github.com/stromdb/strom/server/cluster"
	"github.com/stromdb/strom/server/internalconn"
)

// Follower fetchers: one goroutine per leader server, sending one FETCH_LOG (with this
// server's id as follower_server_id) for every bucket followed from that leader, to the
// leader's internal listener (ReplicationControl.ReplicationAddr, resolved again after every
// connection failure). Each answer is appended as it is (AppendAsFollower: byte-identical,
// fsynced before the next fetch reports the new end), the HW is adopted (min of the leader's
// and the local end), the leader's lineage entries are copied into the epoch cache as the
// data passes their start offsets, and a PK bucket's state catches up with the new HW.

// Fetch parameters of followers.
const (
	followerMaxWait    = 500 * time.Millisecond
	followerFetchBytes = 8 << 20 // per bucket
	followerMaxBytes   = 32 << 20
	fetcherMinBackoff  = 20 * time.Millisecond
	fetcherMaxBackoff  = time.Second
	// fetcherKickInterval is the least time between two fetches cut short for buckets that
	// joined the fetcher: every such fetch is rebuilt over all the fetcher's buckets, so
	// cutting one per joining bucket made a node that follows n buckets do O(n²) work while
	// they were created (docs/cluster.md, "Scale"). A joining bucket waits at most this long.
	fetcherKickInterval = 100 * time.Millisecond
	// An idle fetch naming many buckets waits longer: followerWaitBuckets more buckets add
	// followerMaxWait to its long poll, up to followerMaxWaitCap and half the ISR lag time
	// (see followerWait).
	followerWaitBuckets = 2000
	followerMaxWaitCap  = 5 * time.Second
)

// followerWait is the long-poll wait of a fetch naming n buckets. An idle fetch costs both
// ends work per bucket named (building, encoding and decoding it, reading every bucket twice,
// answering each with its high watermark), so at tens of thousands of buckets per leader the
// idle 500 ms poll alone kept a core busy (docs/cluster.md, "Scale"). A longer wait costs no
// latency: the leader answers a parked fetch as soon as any of its buckets gets data or moves
// its high watermark (serveFollowerFetch). It stays within half of maxLag, so an idle
// follower's fetches arrive well inside the leader's ISR lag bound (inSyncByLag).
func followerWait(n int, maxLag time.Duration) time.Duration {
	w := followerMaxWait * time.Duration(1+n/followerWaitBuckets)
	w = min(w, followerMaxWaitCap, maxLag/2)
	return max(w, followerMaxWait)
}

// followed is one bucket a fetcher copies: its replica and the lineage of the leader epoch
// it follows.
type followed struct {
	rep     *Replica
	epoch   int32
	lineage []cluster.EpochStart
}

// fetcher copies the buckets this server follows from one leader.
type fetcher struct {
	s      *following
	leader int32

	// procMu is held while a response is applied; unfollow takes it after removing a bucket,
	// so that once unfollow returns no append to that bucket is in progress.
	procMu sync.Mutex

	mu         sync.Mutex
	buckets    map[cluster.Bucket]*followed
	callCancel context.CancelFunc // cancels the fetch in flight, so a new bucket joins at once
	callStart  time.Time          // when the fetch in flight was sent
	kickArmed  bool               // the fetch in flight is already due to be cut short
	kick       chan struct{}

	cancel context.CancelFunc
	done   chan struct{}
}

// follow hands rep to the fetcher of st.Leader, starting it if needed.
func (s *following) follow(rep *Replica, st cluster.BucketState, lineage []cluster.EpochStart) {
	s.fetchMu.Lock()
	f := s.fetchers[st.Leader]
	if f == nil {
		ctx, cancel := context.WithCancel(context.Background())
		f = &fetcher{s: s, leader: st.Leader, buckets: map[cluster.Bucket]*followed{}, kick: make(chan struct{}, 1),
			cancel: cancel, done: make(chan struct{})}
		s.fetchers[st.Leader] = f
		go func() {
			defer close(f.done)
			f.run(ctx)
		}()
	}
	f.mu.Lock()
	f.buckets[rep.Bucket] = &followed{rep: rep, epoch: st.LeaderEpoch, lineage: lineage}
	if f.callCancel != nil && !f.kickArmed {
		// Cut the fetch in flight short, at most once per fetcherKickInterval: the buckets
		// joining meanwhile ride along in the next request.
		f.kickArmed = true
		if wait := fetcherKickInterval - time.Since(f.callStart); wait > 0 {
			time.AfterFunc(wait, f.callCancel) // cancels that fetch only, harmless once it ended
		} else {
			f.callCancel()
		}
	}
	f.mu.Unlock()
	s.fetchMu.Unlock()
	select {
	case f.kick <- struct{}{}:
	default:
	}
	s.log.Info("following bucket", "bucket", rep.Bucket, "leader", st.Leader, "leader_epoch", st.LeaderEpoch,
		"log_end", rep.Log.LogEndOffset())
}

// unfollow removes b from whichever fetcher copies it and returns once no append to it is in
// progress; a fetcher left without buckets stops.
func (s *following) unfollow(b cluster.Bucket) {
	s.fetchMu.Lock()
	var stopped []*fetcher
	var holders []*fetcher
	for id, f := range s.fetchers {
		f.mu.Lock()
		if _, ok := f.buckets[b]; ok {
			delete(f.buckets, b)
			holders = append(holders, f)
		}
		empty := len(f.buckets) == 0
		f.mu.Unlock()
		if empty {
			delete(s.fetchers, id)
			stopped = append(stopped, f)
		}
	}
	s.fetchMu.Unlock()
	for _, f := range holders {
		f.procMu.Lock()
		f.procMu.Unlock() //nolint:staticcheck // waits for an apply in progress
	}
	for _, f := range stopped {
		f.cancel()
		<-f.done
	}
}

// stopFetchers stops every fetcher (Close).
func (s *following) stopFetchers() {
	s.fetchMu.Lock()
	fs := s.fetchers
	s.fetchers = map[int32]*fetcher{}
	s.fetchMu.Unlock()
	for _, f := range fs {
		f.cancel()
		<-f.done
	}
}

// run fetches until ctx ends, backing off after errors.
func (f *fetcher) run(ctx context.Context) {
	var conn *wire.ClientConn
	defer func() {
		if conn != nil {
			conn.Close()
		}
	}()
	backoff := fetcherMinBackoff
	sleep := func() {
		select {
		case <-ctx.Done():
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, fetcherMaxBackoff)
	}
	for ctx.Err() == nil {
		if conn == nil {
			addr, ok := f.s.opts.Replication.ReplicationAddr(f.leader)
			if !ok {
				sleep()
				continue
			}
			dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			dial := f.s.opts.InternalDial
			if dial == nil {
				dial = (*internalconn.Dialer)(nil).Func()
			}
			c, err := dial(dctx, addr, "strom-follower")
			cancel()
			if err != nil {
				if ctx.Err() == nil {
					f.s.log.Debug("follower cannot reach leader", "leader", f.leader, "addr", addr, "err", err)
				}
				sleep()
				continue
			}
			conn = c
		}
		req, sent := f.request()
		if len(sent) == 0 {
			select {
			case <-ctx.Done():
			case <-f.kick:
			}
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, time.Duration(req.GetMaxWaitMs())*time.Millisecond+10*time.Second)
		f.mu.Lock()
		f.callCancel, f.callStart, f.kickArmed = cancel, time.Now(), false
		f.mu.Unlock()
		var resp flusspb.FetchLogResponse
		err := conn.Call(cctx, wire.FetchLog, req, &resp)
		kicked := errors.Is(cctx.Err(), context.Canceled) && ctx.Err() == nil
		f.mu.Lock()
		f.callCancel = nil
		f.mu.Unlock()
		cancel()
		switch {
		case kicked:
			continue // the bucket set changed: ask again at once
		case err != nil:
			if ctx.Err() == nil {
				f.s.log.Debug("follower fetch failed", "leader", f.leader, "err", err)
			}
			conn.Close()
			conn = nil
			sleep()
			continue
		}
		if f.apply(&resp, sent) {
			backoff = fetcherMinBackoff
		} else {
			sleep()
		}
	}
}

// request builds one FETCH_LOG for every followed bucket, from its log end.
func (f *fetcher) request() (*flusspb.FetchLogRequest, map[cluster.Bucket]*followed) {
	f.mu.Lock()
	defer f.mu.Unlock()
	sent := make(map[cluster.Bucket]*followed, len(f.buckets))
	tables := map[int64]*flusspb.PbFetchLogReqForTable{}
	req := &flusspb.FetchLogRequest{FollowerServerId: proto.Int32(f.s.opts.ServerID), MaxBytes: proto.Int32(followerMaxBytes),
		MaxWaitMs: proto.Int32(int32(followerWait(len(f.buckets), f.s.opts.MaxLag) / time.Millisecond)), MinBytes: proto.Int32(1)}
	for b, fw := range f.buckets {
		sent[b] = fw
		tr := tables[b.TableID]
		if tr == nil {
			tr = &flusspb.PbFetchLogReqForTable{TableId: proto.Int64(b.TableID), ProjectionPushdownEnabled: proto.Bool(false)}
			tables[b.TableID] = tr
			req.TablesReq = append(req.TablesReq, tr)
		}
		br := &flusspb.PbFetchLogReqForBucket{BucketId: proto.Int32(b.Bucket), FetchOffset: proto.Int64(fw.rep.Log.LogEndOffset()),
			MaxFetchBytes: proto.Int32(followerFetchBytes)}
		if b.PartitionID != cluster.NoPartition {
			br.PartitionId = proto.Int64(b.PartitionID)
		}
		tr.BucketsReq = append(tr.BucketsReq, br)
	}
	return req, sent
}

// apply stores the answer for every bucket still followed as it was when the request was
// built. It reports whether any bucket was answered without error.
func (f *fetcher) apply(resp *flusspb.FetchLogResponse, sent map[cluster.Bucket]*followed) bool {
	f.procMu.Lock()
	defer f.procMu.Unlock()
	ok := false
	for _, tr := range resp.TablesResp {
		for _, br := range tr.BucketsResp {
			b := bucketOf(tr.GetTableId(), br.PartitionId, br.GetBucketId())
			fw := sent[b]
			f.mu.Lock()
			current := fw != nil && f.buckets[b] == fw
			f.mu.Unlock()
			if !current {
				continue
			}
			if code := ferr.Code(br.GetErrorCode()); code != ferr.None {
				// NOT_LEADER_OR_FOLLOWER and the like pass once the states settle. A fetch offset
				// below the leader's log start (its retention removed what this follower lacks)
				// restarts a log-table follower there, and bootstraps a PK follower from the
				// bucket's latest KV snapshot (snapshot_bootstrap.go).
				lvl := slog.LevelDebug
				if code == ferr.LogOffsetOutOfRangeException {
					lvl = slog.LevelWarn
					rep := fw.rep
					if start := br.GetLogStartOffset(); start > rep.Log.LogEndOffset() && rep.repl.restarting.CompareAndSwap(false, true) {
						if rep.KV == nil {
							go f.s.restartFollowerAt(rep, start)
						} else {
							go f.s.bootstrapFromSnapshot(rep, start)
						}
					}
				}
				f.s.log.Log(context.Background(), lvl, "leader refused follower fetch", "bucket", b, "leader", f.leader,
					"code", code, "msg", br.GetErrorMessage())
				continue
			}
			if err := f.s.appendFetched(fw, br); err != nil {
				f.s.log.Warn("follower append", "bucket", b, "leader", f.leader, "err", err)
				continue
			}
			ok = true
		}
	}
	return ok
}

// appendFetched appends one bucket's fetched batches, copies lineage entries the log now
// reaches into its epoch cache, adopts the leader's HW and catches the PK state up.
func (s *following) appendFetched(fw *followed, br *flusspb.PbFetchLogRespForBucket) error {
	rep := fw.rep
	if recs := br.GetRecords(); len(recs) > 0 {
		var batches []record.Batch
		rd := record.NewBatchReader(recs)
		for b, ok := rd.Next(); ok; b, ok = rd.Next() {
			batches = append(batches, b)
		}
		if err := rd.Err(); err != nil {
			return err
		}
		// Append in runs split where a lineage epoch starts, so every epoch enters the cache
		// at its own start offset, in order.
		for len(batches) > 0 {
			if err := assignLineage(rep, fw.lineage); err != nil {
				return err
			}
			n := runLength(batches, fw.lineage)
			if _, err := rep.Log.Replica().AppendAsFollower(batches[:n]); err != nil {
				return err
			}
			batches = batches[n:]
		}
	}
	if err := assignLineage(rep, fw.lineage); err != nil {
		return err
	}
	if hw := br.GetHighWatermark(); hw > rep.Log.HighWatermark() {
		if _, err := rep.Log.Replica().SetHighWatermark(min(hw, rep.Log.LogEndOffset())); err != nil {
			return err
		}
	}
	if rep.KV != nil && rep.KV.AppliedOffset() < rep.Log.HighWatermark() {
		if s.kvCannotWrite() {
			// Pebble's flushes fail: applying now would fill the memtables and stall this
			// fetcher inside Pebble. The changelog is appended (it is the write-ahead log);
			// the state catches up at a fetch after a flush succeeds (kv_media.go).
			return nil
		}
		return rep.KV.CatchUp(context.Background())
	}
	return nil
}

// assignLineage starts, in the log's epoch cache, every epoch of the leader's lineage that
// begins at or below the log end and is newer than the log's latest epoch (batches without
// an epoch field, V0, carry no epoch of their own).
func assignLineage(rep *Replica, lineage []cluster.EpochStart) error {
	leo, latest := rep.Log.LogEndOffset(), rep.Log.Replica().LatestEpoch()
	for _, e := range lineage {
		if e.StartOffset > leo || e.Epoch <= latest {
			continue
		}
		if err := rep.Log.Replica().AssignEpoch(e.Epoch, e.StartOffset); err != nil {
			return err
		}
		latest = e.Epoch
	}
	return nil
}

// runLength returns how many leading batches lie before the next lineage epoch that starts
// after the first batch (at least one).
func runLength(batches []record.Batch, lineage []cluster.EpochStart) int {
	first := batches[0].BaseOffset()
	for i := 1; i < len(batches); i++ {
		base := batches[i].BaseOffset()
		for _, e := range lineage {
			if e.StartOffset > first && e.StartOffset <= base {
				return i
			}
		}
	}
	return len(batches)
}
