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

// keepRegistered keeps the lease alive; if it is lost (the server was cut off from etcd for
// longer than the TTL, and the coordinator has moved its leaderships away), it registers
// again under a new lease. On Close it revokes the lease, so the server leaves at once.
func (c *Control) keepRegistered(lease clientv3.LeaseID) {
	for {
		ch, err := c.cli.KeepAlive(c.ctx, lease)
		if err == nil {
			for range ch {
			}
		}
		if c.ctx.Err() != nil {
			if c.abandon.Load() {
				return
			}
			rctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			c.cli.Revoke(rctx, lease)
			cancel()
			return
		}
		if c.reviveLease(lease) {
			c.log.Info("tablet server registration lease answered again; keeping it", "id", c.opts.Registration.ID)
			continue
		}
		c.log.Warn("tablet server registration lease lost; registering again", "id", c.opts.Registration.ID)
		for c.ctx.Err() == nil {
			rctx, cancel := context.WithTimeout(c.ctx, 5*time.Second)
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

// reviveLease reports whether lease is still alive in etcd after the client gave it up. The
// client ends a keepalive stream once no renewal was answered for a TTL, which is what an
// etcd leader election longer than the TTL looks like (a member died); the new etcd leader
// renews every lease when it takes over, so the registration is usually still there. Keeping
// it spares the cluster a moment with the server unregistered, in which a coordinator taking
// over at the same time would find no tablet server to elect. It tries for up to two TTLs,
// and gives up at once when etcd says the lease expired.
func (c *Control) reviveLease(lease clientv3.LeaseID) bool {
	deadline := time.Now().Add(2 * c.opts.TabletTTL)
	for c.ctx.Err() == nil && time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(c.ctx, c.opts.TabletTTL/2)
		_, err := c.cli.KeepAliveOnce(ctx, lease)
		cancel()
		switch {
		case err == nil:
			return true
		case errors.Is(err, rpctypes.ErrLeaseNotFound):
			return false
		}
		select {
		case <-c.ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
	return false
}
