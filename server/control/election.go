package control

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/stromdb/strom/server/meta"
)

// Active reports whether this node is the active coordinator.
func (c *Control) Active() bool {
	c.fenceMu.RLock()
	defer c.fenceMu.RUnlock()
	return c.active
}

// Fence returns the active coordinator's fence: its election key and epoch. ok is false
// while this node is not the active coordinator.
func (c *Control) Fence() (meta.Fence, bool) {
	c.fenceMu.RLock()
	defer c.fenceMu.RUnlock()
	return c.fence, c.active
}

// Epoch returns the coordinator epoch of this node while it is active, else 0.
func (c *Control) Epoch() int64 {
	f, ok := c.Fence()
	if !ok {
		return 0
	}
	return f.Epoch
}

func (c *Control) setActive(f meta.Fence, active bool) {
	c.fenceMu.Lock()
	defer c.fenceMu.Unlock()
	c.fence, c.active = f, active
}

// campaignLoop campaigns for the coordinator election under a session lease of
// coordinator.lease-ttl; when it wins it takes over, and when its session ends (the lease
// expired, say, because this node was cut off from etcd) it steps down and campaigns again.
func (c *Control) campaignLoop() {
	val, _ := json.Marshal(c.opts.Coordinator)
	ttl := int(c.opts.CoordinatorTTL / time.Second)
	for c.ctx.Err() == nil {
		sess, err := concurrency.NewSession(c.cli, concurrency.WithTTL(ttl), concurrency.WithContext(c.ctx))
		if err != nil {
			if c.ctx.Err() == nil {
				c.log.Warn("cannot open a coordinator election session", "err", err)
				time.Sleep(500 * time.Millisecond)
			}
			continue
		}
		c.leadWhileSession(sess, string(val))
		c.setActive(meta.Fence{}, false)
		if c.abandon.Load() {
			sess.Orphan() // the lease runs out on its own
			return
		}
		sess.Close() // resigns: deletes the election key and revokes the lease
	}
}

func (c *Control) leadWhileSession(sess *concurrency.Session, val string) {
	e := concurrency.NewElection(sess, meta.KeyPrefix+strings.TrimSuffix(electionPrefix, "/"))
	if err := e.Campaign(c.ctx, val); err != nil {
		if c.ctx.Err() == nil {
			c.log.Warn("coordinator campaign failed", "err", err)
		}
		return
	}
	fence := meta.Fence{Key: strings.TrimPrefix(e.Key(), meta.KeyPrefix), Epoch: e.Rev()}
	c.setActive(fence, true)
	c.log.Info("became the active coordinator", "epoch", fence.Epoch)
	tctx, cancel := context.WithTimeout(c.ctx, 30*time.Second)
	if err := c.takeover(tctx); err != nil {
		c.log.Error("coordinator takeover failed; stepping down", "err", err)
		cancel()
		return
	}
	cancel()
	select {
	case <-sess.Done():
		c.log.Warn("lost the coordinator election lease; stepping down", "epoch", fence.Epoch)
	case <-c.ctx.Done():
	}
}

// takeover makes a newly active coordinator's catalog current and reconciles every bucket:
// leaders on dead servers are replaced, leaderless buckets with a live ISR member get one,
// and every replica is told the states.
func (c *Control) takeover(ctx context.Context) error {
	if c.opts.Catalog != nil {
		if err := c.opts.Catalog.Takeover(ctx); err != nil {
			return err
		}
	}
	if err := c.loadMembership(ctx); err != nil {
		return err
	}
	c.reconcile(ctx, true)
	c.kickRebalance()
	return nil
}

// reconcileLoop reruns leader elections on every membership change while active.
func (c *Control) reconcileLoop() {
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-c.kick:
		}
		if !c.Active() {
			continue
		}
		ctx, cancel := context.WithTimeout(c.ctx, 30*time.Second)
		c.reconcile(ctx, false)
		cancel()
	}
}
