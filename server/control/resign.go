package control

import (
	"context"
	"errors"

	"github.com/stromdb/strom/server/cluster"
)

// ResignLeadership implements cluster.LeadershipResigner: it asks the active coordinator
// once to move b, which this node's tablet server leads at leaderEpoch, to another in-sync
// replica (shutdown.RequestResign).
func (c *Control) ResignLeadership(ctx context.Context, b cluster.Bucket, leaderEpoch int32) (bool, error) {
	if c.opts.Replicas == nil || c.cancel == nil || c.abandon.Load() {
		return false, errors.New("resign leadership: this node's control plane is not running a tablet server")
	}
	return c.shutdown.RequestResign(ctx, c.opts.Registration.ID, b, leaderEpoch)
}

var _ cluster.LeadershipResigner = (*Control)(nil)
