package shutdown

import (
	"context"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
	"github.com/stromdb/strom/server/cluster"
	"github.com/stromdb/strom/server/meta"
)

// A leader whose replica of one bucket cannot serve (a corrupt log segment,
// docs/durability.md, "The scrubber") resigns that one leadership: it asks the active
// coordinator, which elects another in-sync replica exactly as for a controlled shutdown of
// the leader's server (Plan: the first other live ISR member in replica order leads,
// LeaderEpoch+1, BucketEpoch+1, the resigning server leaves the ISR) but for that bucket only.
// Fluss has no such request; Strom sends it on the internal listener as RESIGN_LEADERSHIP
// (wire.ResignLeadership), in Fluss's ADJUST_ISR message: one bucket, its leader epoch and
// bucket epoch, the resigning leader as serverId and an empty new_isr.

// ResignLeadership moves the leadership of b away from server id, which must lead it at
// leaderEpoch (else FENCED_LEADER_EPOCH — unless b has already moved to another leader, which
// is what was asked). It returns the bucket's state afterwards; moved false (and no error)
// when b has no other live ISR member, so it keeps its leader.
func (s *Shutdown) ResignLeadership(ctx context.Context, id int32, b cluster.Bucket, leaderEpoch int32) (cluster.BucketState, bool, error) {
	s.Writer.Lock()
	defer s.Writer.Unlock()
	epoch := s.Writer.Fence.Epoch()
	if epoch == 0 {
		return cluster.BucketState{}, false, meta.ErrNotLeader()
	}
	e, ok := s.States.Get(b)
	if !ok {
		return cluster.BucketState{}, false, ferr.New(ferr.UnknownTableOrBucketException, "bucket %s has no state (dropped?)", b)
	}
	cur := e.State
	if cur.LeaderEpoch > leaderEpoch && cur.Leader != id {
		return cur, true, nil // moved meanwhile
	}
	if cur.Leader != id || cur.LeaderEpoch != leaderEpoch {
		return cur, false, ferr.New(ferr.FencedLeaderEpochException, "bucket %s is led by %d at leader epoch %d, not by %d at %d", b, cur.Leader, cur.LeaderEpoch, id, leaderEpoch)
	}
	moves, _ := Plan(map[cluster.Bucket]cluster.BucketState{b: cur}, id, s.Live, epoch)
	next, ok := moves[b]
	if !ok {
		return cur, false, nil
	}
	rev, err := s.Writer.Swap(ctx, b, e.Rev, next)
	if err != nil {
		return cur, false, err
	}
	if rev == 0 {
		return cur, false, ferr.New(ferr.FencedLeaderEpochException, "the state of bucket %s changed during the leader's resignation", b)
	}
	s.Notify.Notify(ctx, map[cluster.Bucket]cluster.BucketState{b: next}, nil, nil)
	s.Log.Warn("leader resigned one bucket: leadership moved to an in-sync replica", "bucket", b, "from", id, "to", next.Leader, "leader_epoch", next.LeaderEpoch)
	return next, true, nil
}

// registerResign installs RESIGN_LEADERSHIP, accepted only on the internal listener.
func (s *Shutdown) registerResign(svc *wire.Service, internalListener string) {
	svc.Handle(wire.ResignLeadership, wire.VersionRange{Min: 0, Max: 0}, func(ctx context.Context, req *wire.Request) (proto.Message, error) {
		if req.Listener != internalListener {
			return nil, ferr.New(ferr.AuthorizationException, "RESIGN_LEADERSHIP is accepted only on the internal listener %s", internalListener)
		}
		var r flusspb.AdjustIsrRequest
		if err := req.Decode(&r); err != nil {
			return nil, err
		}
		if len(r.GetTablesReq()) != 1 || len(r.GetTablesReq()[0].GetBucketsReq()) != 1 {
			return nil, ferr.New(ferr.InvalidUpdateVersionException, "RESIGN_LEADERSHIP names exactly one bucket")
		}
		t, br := r.GetTablesReq()[0], r.GetTablesReq()[0].GetBucketsReq()[0]
		b := cluster.Bucket{TableID: t.GetTableId(), PartitionID: cluster.NoPartition, Bucket: br.GetBucketId()}
		if br.PartitionId != nil {
			b.PartitionID = br.GetPartitionId()
		}
		st, moved, err := s.ResignLeadership(ctx, r.GetServerId(), b, br.GetLeaderEpoch())
		out := &flusspb.PbAdjustIsrRespForBucket{BucketId: proto.Int32(b.Bucket), PartitionId: br.PartitionId,
			LeaderId: proto.Int32(st.Leader), LeaderEpoch: proto.Int32(st.LeaderEpoch), Isr: st.ISR, BucketEpoch: proto.Int32(st.BucketEpoch)}
		switch {
		case err != nil && ferr.CodeOf(err) == ferr.FencedLeaderEpochException:
			out.ErrorCode, out.ErrorMessage = proto.Int32(int32(ferr.FencedLeaderEpochException)), proto.String(err.Error())
		case err != nil:
			return nil, err
		case !moved:
			out.ErrorCode = proto.Int32(int32(ferr.NotEnoughReplicasException))
			out.ErrorMessage = proto.String(fmt.Sprintf("bucket %s has no other live in-sync replica", b))
		}
		return &flusspb.AdjustIsrResponse{TablesResp: []*flusspb.PbAdjustIsrRespForTable{{TableId: proto.Int64(b.TableID), BucketsResp: []*flusspb.PbAdjustIsrRespForBucket{out}}}}, nil
	})
}

// RequestResign asks the active coordinator — in process when this node is it, else over
// its internal listener — once to move the leadership of b (led by id at leaderEpoch) to
// another in-sync replica. moved reports whether b now has another leader; false with a nil
// error when it has no other live ISR member.
func (s *Shutdown) RequestResign(ctx context.Context, id int32, b cluster.Bucket, leaderEpoch int32) (moved bool, err error) {
	if err := s.Coordinator.Refresh(ctx); err != nil {
		s.Log.Debug("resign leadership: cannot read the coordinator election", "err", err)
	}
	if s.Coordinator.Active() {
		_, moved, err := s.ResignLeadership(ctx, id, b, leaderEpoch)
		return moved, err
	}
	addr, ok := s.Coordinator.CoordinatorAddr()
	if !ok {
		return false, errNoCoordinator
	}
	br := &flusspb.PbAdjustIsrReqForBucket{BucketId: proto.Int32(b.Bucket), LeaderEpoch: proto.Int32(leaderEpoch),
		CoordinatorEpoch: proto.Int32(0), BucketEpoch: proto.Int32(0)}
	if b.PartitionID != cluster.NoPartition {
		br.PartitionId = proto.Int64(b.PartitionID)
	}
	var resp flusspb.AdjustIsrResponse
	err = s.Pool.Call(ctx, addr, wire.ResignLeadership, &flusspb.AdjustIsrRequest{ServerId: proto.Int32(id),
		TablesReq: []*flusspb.PbAdjustIsrReqForTable{{TableId: proto.Int64(b.TableID), BucketsReq: []*flusspb.PbAdjustIsrReqForBucket{br}}}}, &resp)
	if err != nil {
		return false, fmt.Errorf("coordinator %s: %w", addr, err)
	}
	if len(resp.GetTablesResp()) != 1 || len(resp.GetTablesResp()[0].GetBucketsResp()) != 1 {
		return false, fmt.Errorf("coordinator %s: RESIGN_LEADERSHIP answered %d tables", addr, len(resp.GetTablesResp()))
	}
	out := resp.GetTablesResp()[0].GetBucketsResp()[0]
	switch code := ferr.Code(out.GetErrorCode()); {
	case out.ErrorCode == nil || code == ferr.None:
		return true, nil
	case code == ferr.NotEnoughReplicasException:
		return false, nil
	default:
		return false, ferr.New(code, "%s", out.GetErrorMessage())
	}
}
