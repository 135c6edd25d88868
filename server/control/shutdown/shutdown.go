// Package shutdown is controlled shutdown (CONTROLLED_SHUTDOWN, 1043; docs/cluster.md,
// "Controlled shutdown"): a tablet server that is stopping asks the active coordinator to
// move its leaderships to other in-sync replicas first, so clients find new leaders at once
// instead of after the registration lease expires.
package shutdown

import (
	"context"
	"errors"
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
	// CoordinatorAddr is the active coordinator as last read, which may be stale: the
	// coordinator can have moved since (a rolling restart moves it with every node).
	CoordinatorAddr() (string, bool)
	// Refresh reads the election again.
	Refresh(ctx context.Context) error
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
// in Fluss 0.9) and Strom's RESIGN_LEADERSHIP (resign.go), accepted only on the internal
// listener.
func (s *Shutdown) Register(svc *wire.Service, internalListener string) {
	s.registerResign(svc, internalListener)
	svc.Handle(wire.ControlledShutdown, wire.VersionRange{Min: 0, Max: 0}, func(ctx context.Context, req *wire.Request) (proto.Message, error) {
		if !req.IsInternal(internalListener) {
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

// retryPause is the pause between two controlled-shutdown requests.
const retryPause = 100 * time.Millisecond

// Request asks the active coordinator to move tablet server id's leaderships away — in
// process when this node is the active coordinator, else over its internal listener — and
// asks again, until timeout, while some remain that could move. Before every request it
// reads the election again (Coordinator.Refresh): the coordinator it last knew may have
// been deposed or stopped since, which would answer NOT_COORDINATOR_LEADER or not at all;
// those, and no coordinator being elected, are retried. Any other error (the request
// refused) ends it. Buckets with no other live ISR member keep id as leader until its lease
// ends.
func (s *Shutdown) Request(ctx context.Context, id int32, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var answered error // the last attempt's error that was not cut short by the bound
	for attempt := 1; ; attempt++ {
		remaining, err := s.requestOnce(ctx, id)
		if err != nil && ctx.Err() != nil && answered != nil {
			// The bound interrupted this attempt: what the previous one was told (say,
			// NOT_COORDINATOR_LEADER) says more than the deadline does.
			err = answered
		}
		if err == nil && (remaining == 0 || !Movable(s.States.Snapshot(), id, s.Live)) {
			if attempt > 1 {
				s.Log.Info("controlled shutdown done", "server", id, "attempts", attempt)
			}
			return nil
		}
		if err != nil && !retriable(err) {
			return fmt.Errorf("controlled shutdown of tablet server %d: %w", id, err)
		}
		if err == nil {
			err = fmt.Errorf("%d leaderships remain", remaining)
		}
		answered = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("controlled shutdown of tablet server %d: gave up after %d attempts in %s: %w", id, attempt, timeout, err)
		case <-time.After(retryPause):
		}
	}
}

// requestOnce asks the active coordinator, as the election names it now, once; it returns
// how many of id's leaderships it could not move.
func (s *Shutdown) requestOnce(ctx context.Context, id int32) (int, error) {
	if err := s.Coordinator.Refresh(ctx); err != nil {
		// etcd unreachable for the moment: ask the coordinator last read.
		s.Log.Debug("controlled shutdown: cannot read the coordinator election", "err", err)
	}
	if s.Coordinator.Active() {
		rest, err := s.MoveLeaderships(ctx, id)
		return len(rest), err
	}
	addr, ok := s.Coordinator.CoordinatorAddr()
	if !ok {
		return 0, errNoCoordinator
	}
	var resp flusspb.ControlledShutdownResponse
	err := s.Pool.Call(ctx, addr, wire.ControlledShutdown, &flusspb.ControlledShutdownRequest{
		TabletServerId: proto.Int32(id), TabletServerEpoch: proto.Int32(0)}, &resp)
	if err != nil {
		return 0, fmt.Errorf("coordinator %s: %w", addr, err)
	}
	return len(resp.GetRemainingLeaderBuckets()), nil
}

var errNoCoordinator = errors.New("no active coordinator")

// retriable reports whether asking again can succeed: the coordinator asked was not (or no
// longer) the active one, none was elected, or it could not be reached. An error a
// coordinator answered with otherwise (the request refused) stays.
func retriable(err error) bool {
	if errors.Is(err, errNoCoordinator) || ferr.CodeOf(err) == ferr.NotCoordinatorLeaderException {
		return true
	}
	var fe *ferr.Error
	return !errors.As(err, &fe) || fe.Code.Retriable()
}
