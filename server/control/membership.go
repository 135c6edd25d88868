package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/stromdb/strom/server/meta"
)

func serverKey(id int32) string { return meta.KeyPrefix + serversPrefix + strconv.Itoa(int(id)) }

// register publishes this tablet server's registration under a lease and keeps it alive
// until Close. A registration of the same id left by a previous run (killed before its lease
// expired) is waited out; a live one of another process is an error.
func (c *Control) register(ctx context.Context) error {
	lease, err := c.registerOnce(ctx, true)
	if err != nil {
		return err
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		c.keepRegistered(lease)
	}()
	return nil
}

func (c *Control) registerOnce(ctx context.Context, wait bool) (clientv3.LeaseID, error) {
	reg := c.opts.Registration
	val, _ := json.Marshal(reg)
	key := serverKey(reg.ID)
	ttl := int64(c.opts.TabletTTL / time.Second)
	deadline := time.Now().Add(2*c.opts.TabletTTL + time.Second)
	for {
		sent := time.Now()
		lease, err := c.cli.Grant(ctx, ttl)
		if err != nil {
			return 0, fmt.Errorf("register tablet server %d: %w", reg.ID, err)
		}
		resp, err := c.cli.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
			Then(clientv3.OpPut(key, string(val), clientv3.WithLease(lease.ID))).Commit()
		if err != nil {
			c.cli.Revoke(context.WithoutCancel(ctx), lease.ID)
			return 0, fmt.Errorf("register tablet server %d: %w", reg.ID, err)
		}
		if resp.Succeeded {
			c.lease.renewed(sent, time.Duration(lease.TTL)*time.Second)
			c.log.Info("registered tablet server", "id", reg.ID, "lease_ttl", c.opts.TabletTTL)
			return lease.ID, nil
		}
		c.cli.Revoke(context.WithoutCancel(ctx), lease.ID)
		if !wait || time.Now().After(deadline) {
			return 0, fmt.Errorf("tablet-server.id %d is registered by another live server (each tablet server needs its own tablet-server.id)", reg.ID)
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// keepRegistered keeps the lease alive by renewing it three times per TTL; when etcd says it
// expired (the server was cut off from etcd for longer than the TTL, and the coordinator has
// moved its leaderships away), it registers again under a new lease. On Close it revokes the
// lease, so the server leaves at once.
//
// It renews with one KeepAliveOnce per period rather than the client's keepalive stream: that
// stream gives a lease up on the client side once no renewal was answered for a TTL, which an
// etcd leader election after a member died or froze looks like, and a stream left on a stuck
// connection answers nothing while the lease, renewed by etcd's new leader, runs out. Both
// left a server unregistered while it ran (CI: TestKillCoordinatorDuringDDL found no tablet
// server after a takeover, TestPauseLeaderBeyondLagTime a leaderless bucket past its bound).
// Here only etcd's own answer, lease not found, ends a registration.
func (c *Control) keepRegistered(lease clientv3.LeaseID) {
	tick := time.NewTicker(c.opts.TabletTTL / 3)
	defer tick.Stop()
	for {
		select {
		case <-c.ctx.Done():
			if c.abandon.Load() {
				return
			}
			rctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			c.cli.Revoke(rctx, lease)
			cancel()
			return
		case <-tick.C:
		}
		if !errors.Is(c.renewLease(lease), rpctypes.ErrLeaseNotFound) {
			continue // renewed, or etcd did not answer in time: try again at the next tick
		}
		c.log.Warn("tablet server registration lease expired; registering again", "id", c.opts.Registration.ID)
		for c.ctx.Err() == nil {
			rctx, cancel := context.WithTimeout(c.ctx, 5*time.Second)
			var err error
			lease, err = c.registerOnce(rctx, true)
			cancel()
			if err == nil {
				break
			}
			c.log.Warn("cannot register the tablet server", "err", err)
			time.Sleep(500 * time.Millisecond)
		}
	}
}

// renewLease renews lease once, waiting at most a third of the TTL for etcd's answer;
// rpctypes.ErrLeaseNotFound means the lease expired.
func (c *Control) renewLease(lease clientv3.LeaseID) error {
	ctx, cancel := context.WithTimeout(c.ctx, c.opts.TabletTTL/3)
	defer cancel()
	sent := time.Now()
	resp, err := c.cli.KeepAliveOnce(ctx, lease)
	if err == nil && resp.TTL > 0 {
		c.lease.renewed(sent, time.Duration(resp.TTL)*time.Second)
	}
	return err
}
