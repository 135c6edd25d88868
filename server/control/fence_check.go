package control

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/stromdb/strom/server/control/membership"
	"github.com/stromdb/strom/server/meta"
)

// fenceCheck is a tablet server's side of heartbeat fencing (docs/cluster.md, "Failover in
// under 2 s"): every interval it reads, in one linearizable etcd transaction, its own
// registration and its fence key (membership.FenceKey). A read that finds the registration
// and no fence on its lease vouches for the server for grace from the moment the read was
// sent; a read that finds a fence ends the vouching at once and makes the registrar give the
// registration up (Fenced).
//
// Invariant: while valid reports true, no fence on this server's registration was committed
// more than grace (by this server's clock) ago. The last read that found no fence was
// linearized after it was sent and before any fence commit, so a fence committed at T stops
// this server's acknowledgements by T+grace at the latest. The active coordinator revokes a
// fenced server's lease — which is what moves its leaderships — only grace/leaseSafety (plus
// a margin) after its fence committed (heartbeats.go), so the old leader has stopped before a
// new one is elected: fence first, then elect.
type fenceCheck struct {
	cli      *clientv3.Client
	log      *slog.Logger
	id       int32
	interval time.Duration
	grace    time.Duration

	validUntil atomic.Int64 // UnixNano; 0 until the first read without a fence
	fenced     atomic.Bool  // the last answered read found a fence on the registration
}

// valid reports whether the last fence read vouches for this server now. A nil check (the
// server does not take part in heartbeat fencing) always does.
func (f *fenceCheck) valid(now time.Time) bool {
	return f == nil || now.UnixNano() < f.validUntil.Load()
}

// isFenced reports whether the last answered read found a fence on the registration.
func (f *fenceCheck) isFenced() bool { return f != nil && f.fenced.Load() }

func (f *fenceCheck) run(ctx context.Context) {
	tick := time.NewTicker(f.interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		f.check(ctx)
	}
}

// check reads the registration and the fence once. An unanswered read changes nothing: the
// vouching runs out by itself.
func (f *fenceCheck) check(ctx context.Context) {
	cctx, cancel := context.WithTimeout(ctx, f.grace)
	defer cancel()
	sent := time.Now()
	resp, err := f.cli.Txn(cctx).Then(
		clientv3.OpGet(meta.KeyPrefix+membership.Key(f.id)),
		clientv3.OpGet(meta.KeyPrefix+membership.FenceKey(f.id)),
	).Commit()
	if err != nil || len(resp.Responses) != 2 {
		return
	}
	reg := resp.Responses[0].GetResponseRange().GetKvs()
	fence := resp.Responses[1].GetResponseRange().GetKvs()
	if len(reg) == 0 {
		return // not registered (yet, or again): the lease clock vouches for nothing either
	}
	if len(fence) > 0 && fence[0].Lease == reg[0].Lease {
		f.validUntil.Store(0)
		if !f.fenced.Swap(true) {
			f.log.Warn("this tablet server is fenced by the active coordinator (it missed its heartbeats): it stops acknowledging and leaves the cluster",
				"id", f.id)
		}
		return
	}
	f.fenced.Store(false)
	until := sent.Add(f.grace).UnixNano()
	for {
		old := f.validUntil.Load()
		if until <= old || f.validUntil.CompareAndSwap(old, until) {
			return
		}
	}
}
