package membership

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/stromdb/strom/server/meta"
)

// Registrar keeps one tablet server registered under a lease of TTL.
type Registrar struct {
	Client *clientv3.Client
	Reg    Registration
	TTL    time.Duration
	Log    *slog.Logger
	// Abandoned reports whether the node leaves as a killed process would: its lease is
	// then not revoked at the end (tests of failure detection). Nil: never.
	Abandoned func() bool
	// Renewed, when set, is told of every grant or renewal etcd answered: when its request
	// was sent and the TTL granted. The lease is certainly alive until about sent+ttl, which
	// the tablet server's membership fence reads (control's leaseClock).
	Renewed func(sent time.Time, ttl time.Duration)
	// Sick, when set, reports whether the server must not be registered now (its disk
	// stalls: control's diskFence). Keep then revokes the lease — the coordinator moves
	// the server's leaderships and drops it from every ISR, as for a dead server — and
	// registers again once Sick reports false. Kick wakes Keep when the answer changes.
	Sick func() bool
	Kick <-chan struct{}
	// Left, when set, is told that the registration was given up: the lease clock must stop
	// vouching for it before the revocation is sent.
	Left func()
	// CaughtUp, when set, waits until this node has applied every cluster change up to rev
	// (control's watch). Keep calls it when it registers again after the registration was
	// lost (the lease expired, or Sick gave it up) and reports the new grant to Renewed only
	// once it returned nil. While the server was unregistered the coordinator may have moved
	// its leaderships; until its watch has caught up with that, it would still act as their
	// leader — serving stale lookups — under a fence that vouches for it again.
	CaughtUp func(ctx context.Context, rev int64) error
	// Fenced, when set, reports whether the active coordinator fenced this registration
	// (a fence key on its lease: control's fenceCheck). Keep then gives the registration up
	// at once, as for Sick, and registers again at its next tick; Kick wakes it.
	Fenced func() bool
}

// renewed reports a grant or renewal sent at sent to Renewed, if any.
func (r *Registrar) renewed(sent time.Time, ttl time.Duration) {
	if r.Renewed != nil {
		r.Renewed(sent, ttl)
	}
}

// Register publishes the registration under a new lease. A registration of the same id
// left by a previous run (killed before its lease expired) is waited out, up to twice the
// TTL; a live one of another process is an error.
func (r *Registrar) Register(ctx context.Context) (clientv3.LeaseID, error) {
	return r.registerOnce(ctx, true, false)
}

// registerOnce registers under a new lease; with again (Keep registering after the
// registration was lost) it waits for CaughtUp before reporting the grant.
func (r *Registrar) registerOnce(ctx context.Context, wait, again bool) (clientv3.LeaseID, error) {
	val, _ := json.Marshal(r.Reg)
	key := meta.KeyPrefix + Key(r.Reg.ID)
	ttl := int64(r.TTL / time.Second)
	deadline := time.Now().Add(2*r.TTL + time.Second)
	for {
		sent := time.Now()
		lease, err := r.Client.Grant(ctx, ttl)
		if err != nil {
			return 0, fmt.Errorf("register tablet server %d: %w", r.Reg.ID, err)
		}
		resp, err := r.Client.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
			Then(clientv3.OpPut(key, string(val), clientv3.WithLease(lease.ID))).Commit()
		if err != nil {
			r.Client.Revoke(context.WithoutCancel(ctx), lease.ID)
			return 0, fmt.Errorf("register tablet server %d: %w", r.Reg.ID, err)
		}
		if resp.Succeeded {
			if again && r.CaughtUp != nil {
				if err := r.waitCaughtUp(ctx, lease.ID, resp.Header.Revision); err != nil {
					r.Client.Revoke(context.WithoutCancel(ctx), lease.ID)
					return 0, fmt.Errorf("register tablet server %d: its view of the cluster did not catch up with revision %d: %w", r.Reg.ID, resp.Header.Revision, err)
				}
			}
			r.renewed(sent, time.Duration(lease.TTL)*time.Second)
			r.Log.Info("registered tablet server", "id", r.Reg.ID, "lease_ttl", r.TTL)
			return lease.ID, nil
		}
		r.Client.Revoke(context.WithoutCancel(ctx), lease.ID)
		if !wait || time.Now().After(deadline) {
			return 0, fmt.Errorf("tablet-server.id %d is registered by another live server (each tablet server needs its own tablet-server.id)", r.Reg.ID)
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// catchUpBound is how many TTLs a re-registering server may take to catch its watch up
// with its registration before it gives the registration up and starts over.
const catchUpBound = 4

// waitCaughtUp waits for CaughtUp(rev), renewing lease every TTL/3 meanwhile, for at most
// catchUpBound TTLs. The renewals are not reported to Renewed: the server's fence vouches
// for the registration only once its view has caught up, so until then it acts as the
// leader of nothing. Renewing instead of giving the lease up after one wait makes a server
// that applies thousands of state changes after a fence (docs/cluster.md, "Scale") pay one
// wait, not a loop of registrations each starting the catch-up over.
func (r *Registrar) waitCaughtUp(ctx context.Context, lease clientv3.LeaseID, rev int64) error {
	deadline := time.Now().Add(catchUpBound * r.TTL)
	for {
		cctx, cancel := context.WithTimeout(ctx, r.TTL/3)
		err := r.CaughtUp(cctx, rev)
		cancel()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil || time.Now().After(deadline) {
			return err
		}
		if _, kerr := r.Client.KeepAliveOnce(ctx, lease); kerr != nil {
			return fmt.Errorf("%w (renewing the lease meanwhile: %v)", err, kerr)
		}
	}
}

// Keep keeps lease alive until ctx ends, renewing it three times per TTL; when etcd says it
// expired (the server was cut off from etcd for longer than the TTL, and the coordinator has
// moved its leaderships away), it registers again under a new lease. When ctx ends it
// revokes the lease, so the server leaves at once (unless Abandoned).
//
// It renews with one KeepAliveOnce per period rather than the client's keepalive stream: that
// stream gives a lease up on the client side once no renewal was answered for a TTL, which an
// etcd leader election after a member died or froze looks like, and a stream left on a stuck
// connection answers nothing while the lease, renewed by etcd's new leader, runs out. Both
// left a server unregistered while it ran (CI: TestKillCoordinatorDuringDDL found no tablet
// server after a takeover, TestPauseLeaderBeyondLagTime a leaderless bucket past its bound).
// Here only etcd's own answer, lease not found, ends a registration.
//
// While Sick reports true the server stays unregistered (see Sick).
func (r *Registrar) Keep(ctx context.Context, lease clientv3.LeaseID) {
	tick := time.NewTicker(r.TTL / 3)
	defer tick.Stop()
	registered := true
	for {
		select {
		case <-ctx.Done():
			if !registered || r.Abandoned != nil && r.Abandoned() {
				return
			}
			rctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			r.Client.Revoke(rctx, lease)
			cancel()
			return
		case <-tick.C:
		case <-r.Kick:
		}
		if r.Sick != nil && r.Sick() {
			if registered {
				r.leave(ctx, lease, "its disk stalls")
				registered = false
			}
			continue
		}
		if registered && r.Fenced != nil && r.Fenced() {
			r.Log.Warn("the active coordinator fenced this tablet server (it missed its heartbeats); registering again", "id", r.Reg.ID)
			r.leave(ctx, lease, "fenced by the active coordinator")
			registered = false
			continue
		}
		if !registered {
			rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			l, err := r.registerOnce(rctx, true, true)
			cancel()
			if err != nil {
				r.Log.Warn("cannot register the tablet server again", "err", err)
				continue
			}
			lease, registered = l, true
			continue
		}
		if !errors.Is(r.renew(ctx, lease), rpctypes.ErrLeaseNotFound) {
			continue // renewed, or etcd did not answer in time: try again at the next tick
		}
		r.Log.Warn("tablet server registration lease expired; registering again", "id", r.Reg.ID)
		for ctx.Err() == nil {
			rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			var err error
			lease, err = r.registerOnce(rctx, true, true)
			cancel()
			if err == nil {
				break
			}
			r.Log.Warn("cannot register the tablet server", "err", err)
			time.Sleep(500 * time.Millisecond)
		}
	}
}

// renew renews lease once, waiting at most a third of the TTL for etcd's answer;
// rpctypes.ErrLeaseNotFound means the lease expired.
func (r *Registrar) renew(ctx context.Context, lease clientv3.LeaseID) error {
	ctx, cancel := context.WithTimeout(ctx, r.TTL/3)
	defer cancel()
	sent := time.Now()
	resp, err := r.Client.KeepAliveOnce(ctx, lease)
	if err == nil && resp.TTL > 0 {
		r.renewed(sent, time.Duration(resp.TTL)*time.Second)
	}
	return err
}

// leave gives the registration up while the server is sick or fenced (why): the lease clock first stops
// vouching for it (Left), then the lease is revoked, so the registration disappears at once
// instead of after the TTL. If the revocation does not reach etcd, the lease expires by
// itself after the TTL, since it is no longer renewed.
func (r *Registrar) leave(ctx context.Context, lease clientv3.LeaseID, why string) {
	if r.Left != nil {
		r.Left()
	}
	rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	_, err := r.Client.Revoke(rctx, lease)
	cancel()
	r.Log.Warn("tablet server left the cluster", "id", r.Reg.ID, "why", why, "revoke_err", err)
}
