package tablet

import (
	"context"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/server/cluster"
)

// A promoted primary-key leader holds every write its predecessors acknowledged: an
// acknowledged write was in the log of every ISR member, and leaders are chosen from the ISR.
// But the writes above the high watermark it learned as a follower are only staged (the
// pre-write buffer), not in Pebble, and lookups read Pebble. So until its applied offset
// reaches the start of its leader epoch (its log end at promotion), a lookup could miss an
// acknowledged upsert. Reads of such a bucket wait for that — one fetch round trip of the
// other ISR members, which advances the HW — up to readBarrierWait, then answer
// LEADER_NOT_AVAILABLE (retriable).
const readBarrierWait = 5 * time.Second

// readLag returns the start of rep's leader epoch and whether rep leads a primary-key bucket
// whose applied state has not reached it yet.
func (rep *Replica) readLag() (int64, bool) {
	if rep.repl == nil || rep.KV == nil {
		return 0, false
	}
	rep.repl.mu.Lock()
	start := rep.repl.epochStart
	rep.repl.mu.Unlock()
	return start, rep.KV.AppliedOffset() < start
}

// awaitReadable waits until rep's reads see every acknowledged write (see readBarrierWait).
func (s *kvService) awaitReadable(ctx context.Context, rep *Replica) error {
	deadline := time.Now().Add(readBarrierWait)
	for {
		start, lagging := rep.readLag()
		if !lagging {
			return nil
		}
		if !rep.repl.leading.Load() {
			return ferr.New(ferr.NotLeaderOrFollower, "Leader not local for bucket %s on tablet server %d", rep.Bucket, s.opts.ServerID)
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return ferr.New(ferr.LeaderNotAvailableException, "the new leader of %s has not yet applied the writes of earlier leaders (up to offset %d)", rep.Bucket, start)
		}
		wctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
		rep.Log.Wait(wctx, start-1)
		cancel()
		if err := rep.KV.ApplyCommitted(); err != nil {
			return err
		}
	}
}

// readAfterBarrier answers a read of the given buckets of a primary-key table: it resolves
// each bucket's replica once (errs[i] when that fails) and calls answer with them, at once when
// every bucket's reads are current, else off the connection's loop once they are or the wait
// ended. answer checks each replica with readable, so a bucket still behind then answers
// LEADER_NOT_AVAILABLE.
func (s *kvService) readAfterBarrier(ctx context.Context, req *wire.Request, buckets []cluster.Bucket, answer func(reps []*Replica, errs []error) proto.Message) (proto.Message, error) {
	reps, errs := make([]*Replica, len(buckets)), make([]error, len(buckets))
	var lagging []*Replica
	for i, b := range buckets {
		reps[i], errs[i] = s.kvReplica(b)
		if errs[i] == nil {
			if _, lag := reps[i].readLag(); lag {
				lagging = append(lagging, reps[i])
			}
		}
	}
	if len(lagging) == 0 {
		return answer(reps, errs), nil
	}
	return req.Defer(func() (proto.Message, error) {
		for _, rep := range lagging {
			s.awaitReadable(ctx, rep) // a failure shows in answer, per bucket
		}
		return answer(reps, errs), nil
	})
}

// readable reports whether a read of rep may be answered now: NOT_LEADER_OR_FOLLOWER once it
// stopped leading or while its membership is not certainly current (membershipCurrent), LEADER_NOT_AVAILABLE while its reads could miss an acknowledged write (see
// readBarrierWait).
func (s *kvService) readable(rep *Replica) error {
	if rep.repl != nil && !rep.repl.leading.Load() {
		return ferr.New(ferr.NotLeaderOrFollower, "Leader not local for bucket %s on tablet server %d", rep.Bucket, s.opts.ServerID)
	}
	if rep.repl != nil {
		if err := s.membershipCurrent(rep.Bucket); err != nil {
			return err
		}
	}
	if start, lagging := rep.readLag(); lagging {
		return ferr.New(ferr.LeaderNotAvailableException, "the new leader of %s has not yet applied the writes of earlier leaders (up to offset %d)", rep.Bucket, start)
	}
	return nil
}

// membership answers whether this server's leaderships are certainly current
// (Options.MembershipValid).
type membership struct {
	opts     membershipOptions
	lapse    *membershipLapse // ends waiting acks=all writes when the membership lapses
	handover *handover        // closed by a controlled shutdown before its leaderships move
}

// membershipOptions are the parts of Options membership reads.
type membershipOptions struct {
	ServerID        int32
	MembershipValid func() bool
}

// membershipCurrent is NOT_LEADER_OR_FOLLOWER while this server cannot be sure it still holds
// its leaderships (Options.MembershipValid): cut off from the etcd majority for most of its
// lease, it may have been replaced by a leader it cannot hear of, whose writes its reads would
// miss. Clients refresh their metadata and retry.
//
// It is NOT_LEADER_OR_FOLLOWER too once a controlled shutdown closed the hand-over fence
// (handover.go): the coordinator may be moving the leaderships right now.
func (s membership) membershipCurrent(b cluster.Bucket) error {
	if err := s.handover.refuse(s.opts.ServerID, b); err != nil {
		return err
	}
	if s.opts.MembershipValid == nil || s.opts.MembershipValid() {
		return nil
	}
	return ferr.New(ferr.NotLeaderOrFollower, "tablet server %d could not renew its membership lease in time and may no longer lead %s", s.opts.ServerID, b)
}
