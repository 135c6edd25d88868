package control

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
	"github.com/stromdb/strom/server/cluster"
	"github.com/stromdb/strom/server/meta"
)

// Controlled shutdown (CONTROLLED_SHUTDOWN, 1043): a tablet server that is stopping asks the
// active coordinator to move its leaderships to other in-sync replicas first, so clients
// find new leaders at once instead of after the registration lease expires.

// moveLeaderships moves every leadership of server id to the first other live ISR member in
// replica order (LeaderEpoch+1, BucketEpoch+1, id leaves the ISR). It returns the buckets it
// could not move (no other live ISR member).
func (c *Control) moveLeaderships(ctx context.Context, id int32) ([]cluster.Bucket, error) {
	c.reconcileMu.Lock()
	defer c.reconcileMu.Unlock()
	epoch := c.Epoch()
	if epoch == 0 {
		return nil, meta.ErrNotLeader()
	}
	c.mu.RLock()
	entries := make(map[cluster.Bucket]stateEntry)
	for b, e := range c.states {
		if e.state.Leader == id {
			entries[b] = e
		}
	}
	c.mu.RUnlock()
	var remaining []cluster.Bucket
	changed := map[cluster.Bucket]cluster.BucketState{}
	for b, e := range entries {
		// The shutting-down server counts as dead for the election rules.
		next, ok := nextState(e.state, func(s int32) bool { return s != id && c.IsLive(s) }, epoch)
		if !ok || next.Leader == cluster.NoLeader {
			remaining = append(remaining, b)
			continue
		}
		rev, err := c.casState(ctx, b, e.rev, next)
		if err != nil {
			return nil, err
		}
		if rev == 0 {
			remaining = append(remaining, b) // changed meanwhile; the server retries
			continue
		}
		c.noteState(b, next, rev)
		changed[b] = next
	}
	if len(changed) > 0 {
		c.notify(ctx, changed, nil, nil)
	}
	c.log.Info("controlled shutdown", "server", id, "moved", len(changed), "remaining", len(remaining))
	return remaining, nil
}

// RegisterCoordinator installs the server-to-server handlers of a coordinator on svc:
// CONTROLLED_SHUTDOWN (version 0 only, as in Fluss 0.9), accepted only on the internal
// listener.
func (c *Control) RegisterCoordinator(svc *wire.Service, internalListener string) {
	svc.Handle(wire.ControlledShutdown, wire.VersionRange{Min: 0, Max: 0}, func(ctx context.Context, req *wire.Request) (proto.Message, error) {
		if req.Listener != internalListener {
			return nil, ferr.New(ferr.AuthorizationException, "CONTROLLED_SHUTDOWN is accepted only on the internal listener %s", internalListener)
		}
		var r flusspb.ControlledShutdownRequest
		if err := req.Decode(&r); err != nil {
			return nil, err
		}
		remaining, err := c.moveLeaderships(ctx, r.GetTabletServerId())
		if err != nil {
			return nil, err
		}
		resp := &flusspb.ControlledShutdownResponse{}
		for _, b := range remaining {
			tb := &flusspb.PbTableBucket{TableId: proto.Int64(b.TableID), BucketId: proto.Int32(b.Bucket)}
			if b.PartitionID != cluster.NoPartition {
				tb.PartitionId = proto.Int64(b.PartitionID)
			}
			resp.RemainingLeaderBuckets = append(resp.RemainingLeaderBuckets, tb)
		}
		return resp, nil
	})
}

// ControlledShutdown asks the active coordinator to move this tablet server's leaderships
// away, retrying (within timeout) while some remain that could move. Buckets with no other
// live ISR member keep this server as leader until its lease ends.
func (c *Control) ControlledShutdown(ctx context.Context, timeout time.Duration) error {
	if c.opts.Replicas == nil || c.cancel == nil || c.abandon.Load() {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	id := c.opts.Registration.ID
	for attempt := 0; ; attempt++ {
		var remaining int
		var err error
		if c.Active() {
			var rest []cluster.Bucket
			rest, err = c.moveLeaderships(ctx, id)
			remaining = len(rest)
		} else if addr, ok := c.activeInternal(); ok {
			var resp flusspb.ControlledShutdownResponse
			err = c.conns.call(ctx, addr, wire.ControlledShutdown, &flusspb.ControlledShutdownRequest{
				TabletServerId: proto.Int32(id), TabletServerEpoch: proto.Int32(0)}, &resp)
			remaining = len(resp.GetRemainingLeaderBuckets())
		} else {
			err = fmt.Errorf("no active coordinator")
		}
		if err == nil && (remaining == 0 || !c.movable(id)) {
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

// movable reports whether some bucket led by id has another live ISR member.
func (c *Control) movable(id int32) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	for _, e := range c.states {
		if e.state.Leader != id {
			continue
		}
		for _, r := range e.state.ISR {
			if _, live := c.live[r]; live && r != id {
				return true
			}
		}
	}
	return false
}

func (c *Control) activeInternal() (string, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if !c.hasCoord || c.coordinator.Internal == "" {
		return "", false
	}
	return c.coordinator.Internal, true
}
