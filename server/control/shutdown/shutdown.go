// Package shutdown is controlled shutdown (CONTROLLED_SHUTDOWN, 1043; docs/cluster.md,
// "Controlled shutdown"): a tablet server that is stopping asks the active coordinator to
// move its leaderships to other in-sync replicas first, so clients find new leaders at once
// instead of after the registration lease expires.
package shutdown

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
	"github.com/stromdb/strom/server/cluster"
	"github.com/stromdb/strom/server/control/assign"
	"github.com/stromdb/strom/server/control/bucketstate"
	"github.com/stromdb/strom/server/control/peers"
	"github.com/stromdb/strom/server/meta"
)

// Plan is the decision: the new state of every bucket in states that server id leads — the
// election rules (assign.Elect) with id counted as dead, so the first other live ISR member
// in replica order leads (LeaderEpoch+1, BucketEpoch+1, id leaves the ISR) — and the buckets
// id leads that cannot move (no other live ISR member).
func Plan(states map[cluster.Bucket]cluster.BucketState, id int32, live func(int32) bool, coordinatorEpoch int64) (moves map[cluster.Bucket]cluster.BucketState, remaining []cluster.Bucket) {
	moves = map[cluster.Bucket]cluster.BucketState{}
	othersLive := func(s int32) bool { return s != id && live(s) }
	for b, st := range states {
		if st.Leader != id {
			continue
		}
		next, ok := assign.Elect(st, othersLive, coordinatorEpoch)
		if !ok || next.Leader == cluster.NoLeader {
			remaining = append(remaining, b)
			continue
		}
		moves[b] = next
	}
	return moves, remaining
}

// Movable reports whether some bucket led by id has another live ISR member: whether asking
// again can move anything.
func Movable(states map[cluster.Bucket]cluster.BucketState, id int32, live func(int32) bool) bool {
	for _, st := range states {
		if st.Leader != id {
			continue
		}
		for _, r := range st.ISR {
			if r != id && live(r) {
				return true
			}
		}
	}
	return false
}

// Coordinator is what the shutdown needs of the election (election.Elector).
type Coordinator interface {
	Active() bool
	CoordinatorAddr() (string, bool)
}

// Shutdown runs both sides: the active coordinator's (MoveLeaderships, the RPC handler) and
// the stopping tablet server's (Request).
type Shutdown struct {
	Writer      *assign.Writer
	States      *bucketstate.Cache
	Live        func(int32) bool
	Notify      assign.Notifier
	Coordinator Coordinator
	Pool        *peers.Pool
	Log         *slog.Logger
}

// MoveLeaderships moves every leadership of server id as Plan decides, each a fenced
// compare-and-swap, and tells the replicas. It returns the buckets it could not move (no
// other live ISR member, or changed meanwhile: the server asks again).
func (s *Shutdown) MoveLeaderships(ctx context.Context, id int32) ([]cluster.Bucket, error) {
	s.Writer.Lock()
	defer s.Writer.Unlock()
	epoch := s.Writer.Fence.Epoch()
	if epoch == 0 {
		return nil, meta.ErrNotLeader()
	}
	entries := s.States.Entries(func(st cluster.BucketState) bool { return st.Leader == id })
	states := make(map[cluster.Bucket]cluster.BucketState, len(entries))
	for b, e := range entries {
		states[b] = e.State
	}
	moves, remaining := Plan(states, id, s.Live, epoch)
	changed := map[cluster.Bucket]cluster.BucketState{}
	for b, next := range moves {
		rev, err := s.Writer.Swap(ctx, b, entries[b].Rev, next)
		if err != nil {
			return nil, err
		}
		if rev == 0 {
			remaining = append(remaining, b) // changed meanwhile; the server retries
			continue
		}
		changed[b] = next
	}
	if len(changed) > 0 {
		s.Notify.Notify(ctx, changed, nil, nil)
	}
	s.Log.Info("controlled shutdown", "server", id, "moved", len(changed), "remaining", len(remaining))
	return remaining, nil
}

// Register installs the coordinator's side on svc: CONTROLLED_SHUTDOWN (version 0 only, as
// in Fluss 0.9), accepted only on the internal listener.
func (s *Shutdown) Register(svc *wire.Service, internalListener string) {
	svc.Handle(wire.ControlledShutdown, wire.VersionRange{Min: 0, Max: 0}, func(ctx context.Context, req *wire.Request) (proto.Message, error) {
		if req.Listener != internalListener {
			return nil, ferr.New(ferr.AuthorizationException, "CONTROLLED_SHUTDOWN is accepted only on the internal listener %s", internalListener)
		}
		var r flusspb.ControlledShutdownRequest
		if err := req.Decode(&r); err != nil {
			return nil, err
		}
		remaining, err := s.MoveLeaderships(ctx, r.GetTabletServerId())
		if err != nil {
			return nil, err
		}
		return encodeResponse(remaining), nil
	})
}

func encodeResponse(remaining []cluster.Bucket) *flusspb.ControlledShutdownResponse {
	resp := &flusspb.ControlledShutdownResponse{}
	for _, b := range remaining {
		tb := &flusspb.PbTableBucket{TableId: proto.Int64(b.TableID), BucketId: proto.Int32(b.Bucket)}
		if b.PartitionID != cluster.NoPartition {
			tb.PartitionId = proto.Int64(b.PartitionID)
		}
		resp.RemainingLeaderBuckets = append(resp.RemainingLeaderBuckets, tb)
	}
	return resp
}

// Request asks the active coordinator to move tablet server id's leaderships away — in
// process when this node is the active coordinator, else over its internal listener —
// retrying (within timeout, at most four attempts) while some remain that could move.
// Buckets with no other live ISR member keep id as leader until its lease ends.
func (s *Shutdown) Request(ctx context.Context, id int32, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for attempt := 0; ; attempt++ {
		var remaining int
		var err error
		if s.Coordinator.Active() {
			var rest []cluster.Bucket
			rest, err = s.MoveLeaderships(ctx, id)
			remaining = len(rest)
		} else if addr, ok := s.Coordinator.CoordinatorAddr(); ok {
			var resp flusspb.ControlledShutdownResponse
			err = s.Pool.Call(ctx, addr, wire.ControlledShutdown, &flusspb.ControlledShutdownRequest{
				TabletServerId: proto.Int32(id), TabletServerEpoch: proto.Int32(0)}, &resp)
			remaining = len(resp.GetRemainingLeaderBuckets())
		} else {
			err = fmt.Errorf("no active coordinator")
		}
		if err == nil && (remaining == 0 || !Movable(s.States.Snapshot(), id, s.Live)) {
			return nil
		}
		if attempt >= 3 || ctx.Err() != nil {
			if err == nil {
				err = fmt.Errorf("%d leaderships remain", remaining)
			}
			return fmt.Errorf("controlled shutdown of tablet server %d: %w", id, err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
}
