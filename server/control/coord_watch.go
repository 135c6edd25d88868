package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/stromdb/strom/server/control/election"
	"github.com/stromdb/strom/server/meta"
)

// SuspectPrefix is the prefix (relative to meta.KeyPrefix) of the standby coordinators'
// suspicions: coordinator/suspects/<the standby's election session lease, hex> holds the
// coordinator epoch the standby finds silent, under that standby's session lease.
const SuspectPrefix = "coordinator/suspects/"

// coordWatch is a standby coordinator's side of the heartbeats: it beats the active
// coordinator, and deposes it when it is silent (docs/cluster.md, "A paused active
// coordinator"). Every heartbeat interval a standby sends the coordinator named by the
// oldest election key an API_VERSIONS request over its internal listener. When none of the
// beats sent in the last fenceAfter was answered, the standby records its suspicion of that
// epoch in etcd (SuspectPrefix, under its own session lease, so a dead standby's suspicion
// goes with it) and counts the suspicions of that epoch; once more than half of the standbys
// (the campaigning coordinators but the active one) suspect it, it revokes the active
// coordinator's session lease after checking that the oldest election key still has that
// epoch and that lease. etcd then deletes the election key and the next campaigner wins.
//
// Invariants:
//   - Leadership changes only through etcd's election: the deposition is the revocation of
//     the silent coordinator's own session lease, nothing more. Every write a deposed
//     coordinator makes is a transaction conditioned on its election key at its epoch
//     (election.FencedPut, FencedSwap, meta.FencedStore, the heartbeats' fences), so when it
//     resumes its next write fails and changes nothing; its session's keepalive finds the
//     lease gone and it steps down and campaigns again.
//   - No single standby deposes: one whose link to the active coordinator alone is cut (an
//     asymmetric partition) is outvoted by the others, which still hear it. With one standby
//     (two coordinators) its view decides alone.
//   - A tick that comes more than 2*interval after the previous one (this standby was paused
//     or starved) restarts the budget, as on the active coordinator; a standby that hears the
//     coordinator again withdraws its suspicion.
//
// The active coordinator's process usually also runs a tablet server (its election key names
// it); what a standby observed of that process carries over to its heartbeats when it
// becomes the active coordinator (inherit), so the silent server's fence is written at once
// instead of after another fenceAfter.
type coordWatch struct {
	target   election.LeaderKey // the coordinator watched; Rev 0: none
	addr     string             // its internal listener
	tablet   *int32             // the tablet server in its process, if any
	answered time.Time          // send time of its newest answered beat, or when the budget started
	ticked   time.Time          // the last tick that beat it
	suspects bool               // this standby's suspicion of target is written
	deposing bool               // a deposition is in progress (its goroutine clears it)
}

// watchCoordinator is one tick of a standby's watch (h.mu held).
func (h *heartbeats) watchCoordinator(ctx context.Context, now time.Time, stalled bool) {
	w := &h.coord
	info, key, ok := h.elector.Leader()
	if ok && info.Internal == h.selfInternal {
		return // this node's own key leads: it is taking over, and inherit takes w
	}
	if !ok || info.Internal == "" || key.Lease == 0 {
		h.withdraw(ctx)
		*w = coordWatch{}
		return
	}
	if key != w.target || info.Internal != w.addr {
		h.withdraw(ctx)
		*w = coordWatch{target: key, addr: info.Internal, tablet: info.TabletServer, answered: now}
	}
	if stalled {
		w.answered = now
	}
	w.ticked = now
	go h.beatCoordinator(ctx, key, info.Internal, now)
	silent := now.Sub(w.answered)
	if silent < h.fenceAfter {
		h.withdraw(ctx)
		return
	}
	if w.deposing || !h.standbys {
		return
	}
	w.deposing = true
	go h.depose(ctx, key, info.Internal, silent)
}

// beatCoordinator sends the active coordinator one heartbeat, sent at sent.
func (h *heartbeats) beatCoordinator(ctx context.Context, key election.LeaderKey, addr string, sent time.Time) {
	if !h.ping(ctx, addr) {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if w := &h.coord; w.target == key && sent.After(w.answered) {
		w.answered = sent
	}
}

// withdraw deletes this standby's suspicion, if it wrote one (h.mu held).
func (h *heartbeats) withdraw(ctx context.Context) {
	if !h.coord.suspects {
		return
	}
	h.coord.suspects = false
	lease := h.elector.SessionLease()
	if lease == 0 {
		return
	}
	go func() {
		dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		if _, err := h.cli.Delete(dctx, suspectKey(lease)); err != nil {
			h.log.Warn("heartbeats: cannot withdraw this standby's suspicion of the active coordinator; it goes with its session", "err", err)
		}
	}()
}

func suspectKey(lease clientv3.LeaseID) string {
	return meta.KeyPrefix + SuspectPrefix + fmt.Sprintf("%x", int64(lease))
}

type suspicion struct {
	CoordinatorEpoch int64 `json:"coordinator_epoch"`
	SilentMs         int64 `json:"silent_ms"`
}

// depose records this standby's suspicion of the coordinator of key and, when more than
// half of the standbys suspect it, revokes its session lease (see coordWatch).
func (h *heartbeats) depose(ctx context.Context, key election.LeaderKey, addr string, silent time.Duration) {
	defer func() {
		h.mu.Lock()
		h.coord.deposing = false
		h.mu.Unlock()
	}()
	mine := h.elector.SessionLease()
	if mine == 0 {
		return // not campaigning: no vote
	}
	dctx, cancel := context.WithTimeout(ctx, 2*h.fenceAfter)
	defer cancel()
	val, _ := json.Marshal(suspicion{CoordinatorEpoch: key.Rev, SilentMs: silent.Milliseconds()})
	// The suspicion holds only while the coordinator of that epoch still leads the election.
	oldest := clientv3.OpGet(meta.KeyPrefix+election.Prefix, clientv3.WithFirstCreate()...)
	txn, err := h.cli.Txn(dctx).
		Then(clientv3.OpPut(suspectKey(mine), string(val), clientv3.WithLease(mine)),
			oldest,
			clientv3.OpGet(meta.KeyPrefix+election.Prefix, clientv3.WithPrefix(), clientv3.WithCountOnly()),
			clientv3.OpGet(meta.KeyPrefix+SuspectPrefix, clientv3.WithPrefix())).Commit()
	if err != nil {
		h.log.Warn("heartbeats: cannot record this standby's suspicion of the active coordinator", "err", err)
		return
	}
	h.mu.Lock()
	if h.coord.target == key {
		h.coord.suspects = true
	}
	h.mu.Unlock()
	first := txn.Responses[1].GetResponseRange()
	if len(first.Kvs) == 0 || first.Kvs[0].CreateRevision != key.Rev || clientv3.LeaseID(first.Kvs[0].Lease) != key.Lease {
		return // the election moved on already
	}
	standbys := txn.Responses[2].GetResponseRange().Count - 1
	votes := int64(0)
	for _, kv := range txn.Responses[3].GetResponseRange().Kvs {
		var s suspicion
		if json.Unmarshal(kv.Value, &s) == nil && s.CoordinatorEpoch == key.Rev {
			votes++
		}
	}
	if 2*votes <= standbys {
		h.log.Info("heartbeats: the active coordinator does not answer; waiting for the other standbys to find it silent too",
			"internal", addr, "epoch", key.Rev, "silent", silent, "suspicions", votes, "standbys", standbys)
		return
	}
	h.mu.Lock()
	still := h.coord.target == key && time.Since(h.coord.answered) >= h.fenceAfter
	h.mu.Unlock()
	if !still {
		return // it answered meanwhile
	}
	if _, err := h.cli.Revoke(dctx, key.Lease); errors.Is(err, rpctypes.ErrLeaseNotFound) {
		h.log.Info("heartbeats: the silent active coordinator's election lease is already gone (another standby revoked it)", "internal", addr, "epoch", key.Rev)
		return
	} else if err != nil {
		h.log.Warn("heartbeats: cannot revoke the election lease of the silent active coordinator; it will expire", "internal", addr, "err", err)
		return
	}
	h.log.Warn("heartbeats: the active coordinator does not answer and a majority of the standbys agree; its election lease revoked",
		"internal", addr, "epoch", key.Rev, "silent", silent, "suspicions", votes, "standbys", standbys)
}
