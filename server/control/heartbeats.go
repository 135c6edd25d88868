package control

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
	"github.com/stromdb/strom/server/control/election"
	"github.com/stromdb/strom/server/control/membership"
	"github.com/stromdb/strom/server/control/peers"
	"github.com/stromdb/strom/server/meta"
)

// heartbeats is the active coordinator's detection of tablet servers that stopped answering
// — paused (SIGSTOP), hung, or cut off by a partition — and their fence (docs/cluster.md,
// "Failover in under 2 s"). Every interval it sends each live tablet server that takes part
// (its registration names a fence grace: fenceCheck) an API_VERSIONS request over the
// internal listener, through a connection pool of its own (so a slow NOTIFY_LEADER_AND_ISR
// never queues in front of a beat); the server answers it in its connection's goroutine,
// without the disk or any bucket lock. A server none of whose beats sent in the last
// fenceAfter was answered is fenced:
//
//  1. a fence key is written under the server's own registration lease, in a transaction
//     that holds only while this node's coordinator epoch does and the registration still
//     has the lease read (a deposed coordinator, or a server that re-registered, is left
//     alone);
//  2. after the server's fence grace divided by leaseSafety, plus fenceMargin, the lease is
//     revoked. The membership watch then fails the server's leaderships over through the
//     normal path, with new leader epochs, from the ISR.
//
// By fenceCheck's invariant the server stopped acknowledging before step 2: fence first,
// then elect. A fenced server that reads its fence gives its registration up itself, so a
// coordinator deposed between the steps leaves no server fenced for good.
//
// Invariants against false fences: no server is fenced while fewer than a majority of the
// tablet servers taking part (this node counted when it is one) answered within fenceAfter or
// are still within a fresh budget — the coordinator itself is then the likely isolated one; and a tick that comes more than
// 2*interval after the previous one (this process was paused or starved) restarts every
// server's budget, so a coordinator's own pause never counts against the servers.
type heartbeats struct {
	cli        *clientv3.Client
	log        *slog.Logger
	elector    *election.Elector
	members    *membership.Members
	pool       *peers.Pool // the heartbeats' own connections
	self       int32       // this node's tablet-server.id; -1 without the tablet role
	interval   time.Duration
	fenceAfter time.Duration
	// selfInternal is this node's coordinator internal address (its own election key names
	// it: never beaten); standbys whether a standby deposes a silent active coordinator
	// (coordinator.heartbeat.standbys; coord_watch.go).
	selfInternal string
	standbys     bool

	mu       sync.Mutex
	answered map[int32]time.Time // per server: the send time of its newest answered beat, or when its budget started
	fencing  map[int32]bool      // fences in progress
	noQuorum bool                // logged that too few servers answer to fence any
	coord    coordWatch          // while a standby: the active coordinator watched
}

// fenceMargin is added to the wait between a fence and the revocation of the lease, for
// the fence read's answer to reach the server and its acknowledgements in progress to end.
const fenceMargin = 100 * time.Millisecond

func (h *heartbeats) run(ctx context.Context) {
	if h.interval <= 0 || h.fenceAfter <= 0 {
		return
	}
	h.answered, h.fencing = map[int32]time.Time{}, map[int32]bool{}
	tick := time.NewTicker(h.interval)
	defer tick.Stop()
	last := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-h.elector.Activated():
			// A round goes out at once on becoming active, so a silence inherited from the
			// standby's watch is acted on now, not an interval after the takeover.
		}
		now := time.Now()
		stalled := now.Sub(last) > 2*h.interval
		last = now
		if !h.elector.Active() {
			h.mu.Lock()
			clear(h.answered)
			h.watchCoordinator(ctx, now, stalled)
			h.mu.Unlock()
			continue
		}
		h.mu.Lock()
		h.inherit(ctx, now)
		h.mu.Unlock()
		h.tick(ctx, now, stalled)
	}
}

// inherit carries what this node observed as a standby of the coordinator it succeeds over
// to the first round as the active coordinator: the tablet server of the same process keeps
// the budget it had used up (it is the same process, silent for as long),
// so a paused coordinator-and-leader is fenced at once rather than after another
// fenceAfter. An observation older than 2*fenceAfter is dropped. (h.mu held.)
func (h *heartbeats) inherit(ctx context.Context, now time.Time) {
	w := h.coord
	if w.addr == "" {
		return
	}
	h.withdraw(ctx)
	h.coord = coordWatch{}
	if w.tablet == nil || *w.tablet == h.self || now.Sub(w.ticked) > 2*h.fenceAfter || !h.members.IsLive(*w.tablet) {
		return
	}
	if _, seen := h.answered[*w.tablet]; !seen {
		h.answered[*w.tablet] = w.answered
		h.log.Info("heartbeats: the tablet server of the coordinator this node succeeds keeps its silence budget", "id", *w.tablet, "silent", now.Sub(w.answered))
	}
}

// tick sends one round of beats and fences the servers whose budget ran out.
func (h *heartbeats) tick(ctx context.Context, now time.Time, stalled bool) {
	ids := h.members.IDs()
	h.mu.Lock()
	defer h.mu.Unlock()
	live := make(map[int32]bool, len(ids))
	for _, id := range ids {
		live[id] = true
	}
	for id := range h.answered {
		if !live[id] {
			delete(h.answered, id)
		}
	}
	recent, voters := 0, 0
	var due []int32
	for _, id := range ids {
		if id == h.self {
			voters++
			recent++ // this process is alive: it is running the heartbeats
			continue
		}
		reg, ok := h.members.Get(id)
		if !ok || reg.Internal == "" || reg.FenceGraceMs <= 0 {
			continue // takes no part: neither beaten nor counted
		}
		voters++
		if t, ok := h.answered[id]; !ok || stalled {
			h.answered[id] = now // a new server, or this process was stalled: a full budget
			recent++
		} else if now.Sub(t) < h.fenceAfter {
			recent++
		}
		go h.beat(ctx, id, reg.Internal, now)
		if now.Sub(h.answered[id]) >= h.fenceAfter && !h.fencing[id] {
			due = append(due, id)
		}
	}
	if len(due) == 0 {
		h.noQuorum = false
		return
	}
	if 2*recent <= voters {
		if !h.noQuorum {
			h.noQuorum = true
			h.log.Warn("heartbeats: too few tablet servers answer to fence any (this coordinator may be the isolated one)",
				"answering", recent, "live", voters, "silent", due)
		}
		return
	}
	h.noQuorum = false
	for _, id := range due {
		h.fencing[id] = true
		go h.fence(ctx, id, now.Sub(h.answered[id]))
	}
}

// ping sends addr one heartbeat (an API_VERSIONS over the internal listener) and reports
// whether it was answered within fenceAfter.
func (h *heartbeats) ping(ctx context.Context, addr string) bool {
	bctx, cancel := context.WithTimeout(ctx, h.fenceAfter)
	defer cancel()
	name, version := "strom-heartbeat", "1"
	var resp flusspb.ApiVersionsResponse
	return h.pool.Call(bctx, addr, wire.APIVersions, &flusspb.ApiVersionsRequest{ClientSoftwareName: &name, ClientSoftwareVersion: &version}, &resp) == nil
}

// beat sends one heartbeat, sent at sent, and records its answer.
func (h *heartbeats) beat(ctx context.Context, id int32, addr string, sent time.Time) {
	if !h.ping(ctx, addr) {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if t, ok := h.answered[id]; ok && sent.After(t) {
		h.answered[id] = sent
	}
}

// fence fences server id (see heartbeats), silent for silentFor.
func (h *heartbeats) fence(ctx context.Context, id int32, silentFor time.Duration) {
	defer func() {
		h.mu.Lock()
		delete(h.fencing, id)
		h.mu.Unlock()
	}()
	f, ok := h.elector.Fence()
	if !ok {
		return
	}
	fctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	regKey := meta.KeyPrefix + membership.Key(id)
	resp, err := h.cli.Get(fctx, regKey)
	if err != nil || len(resp.Kvs) == 0 || resp.Kvs[0].Lease == 0 {
		return // gone already, or etcd did not answer: the next tick tries again
	}
	reg, err := membership.Decode(resp.Kvs[0].Value)
	if err != nil || reg.FenceGraceMs <= 0 {
		return
	}
	lease := resp.Kvs[0].Lease
	val, _ := json.Marshal(struct {
		CoordinatorEpoch int64 `json:"coordinator_epoch"`
		SilentMs         int64 `json:"silent_ms"`
	}{f.Epoch, silentFor.Milliseconds()})
	txn, err := h.cli.Txn(fctx).If(
		clientv3.Compare(clientv3.CreateRevision(meta.KeyPrefix+f.Key), "=", f.Epoch),
		clientv3.Compare(clientv3.LeaseValue(regKey), "=", lease),
	).Then(clientv3.OpPut(meta.KeyPrefix+membership.FenceKey(id), string(val), clientv3.WithLease(clientv3.LeaseID(lease)))).Commit()
	if err != nil || !txn.Succeeded {
		return // deposed, re-registered, or etcd did not answer
	}
	wait := time.Duration(float64(time.Duration(reg.FenceGraceMs)*time.Millisecond)/leaseSafety) + fenceMargin
	h.log.Warn("heartbeats: tablet server does not answer; fenced, its lease is revoked once its fence grace has passed",
		"id", id, "internal", reg.Internal, "silent", silentFor, "revoke_in", wait)
	select {
	case <-ctx.Done():
		return
	case <-time.After(wait):
	}
	rctx, rcancel := context.WithTimeout(ctx, 5*time.Second)
	defer rcancel()
	// Revoking needs no epoch check: the fence committed under this coordinator's epoch, and
	// its grace has passed, so the server has stopped acknowledging whoever revokes.
	if _, err := h.cli.Revoke(rctx, clientv3.LeaseID(lease)); err != nil {
		h.log.Warn("heartbeats: cannot revoke the lease of a fenced tablet server; it gives it up itself or it expires", "id", id, "err", err)
		return
	}
	h.log.Warn("heartbeats: fenced tablet server's registration revoked; its leaderships fail over now", "id", id)
}
