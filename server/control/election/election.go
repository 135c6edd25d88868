// Package election is the coordinator election and its epoch fencing (docs/cluster.md,
// "Coordinator election and fencing"). Every node with the coordinator role campaigns
// through etcd's concurrency.Election; the winner's election key's create revision is the
// coordinator epoch, and every write the active coordinator makes here is conditioned on
// that key still existing at that revision (FencedPut, FencedSwap), so a deposed
// coordinator's writes fail with NOT_COORDINATOR_LEADER and change nothing.
//
// Every node, campaigning or not, also follows who the active coordinator is (Refresh), for
// the listener topology and for standbys forwarding admin requests.
package election

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/stromdb/strom/server/cluster"
	"github.com/stromdb/strom/server/meta"
)

// Prefix is the prefix of the election keys, relative to meta.KeyPrefix; the oldest key
// (lowest create revision) is the active coordinator's, its value a CoordinatorInfo.
const Prefix = "coordinator/election/"

// CoordinatorInfo is the value of a coordinator's election key.
type CoordinatorInfo struct {
	Endpoints []cluster.Endpoint `json:"endpoints"`
	// Internal is HOST:PORT of the coordinator's internal listener, where standbys forward
	// admin requests.
	Internal string `json:"internal"`
	// TabletServer is the tablet-server.id of the tablet server in the same process, nil
	// when it has none: a standby that found this coordinator silent found that server silent
	// too (docs/cluster.md, "A paused active coordinator").
	TabletServer *int32 `json:"tablet_server,omitempty"`
}

// Elector is one node's part in the election: its own fence while it is the active
// coordinator, and the active coordinator it last read.
type Elector struct {
	cli *clientv3.Client
	log *slog.Logger

	fenceMu sync.RWMutex
	fence   meta.Fence
	active  bool

	mu       sync.RWMutex
	current  CoordinatorInfo
	curKey   LeaderKey
	hasCoord bool

	session atomic.Int64 // the lease of this node's election session; 0 while it has none

	activated chan struct{} // signalled (without blocking) whenever this node becomes active
}

// LeaderKey identifies the active coordinator's election key as last read: its create
// revision (the coordinator epoch) and its session lease.
type LeaderKey struct {
	Rev   int64
	Lease clientv3.LeaseID
}

// New returns an Elector that is not active and knows no coordinator.
func New(cli *clientv3.Client, log *slog.Logger) *Elector {
	return &Elector{cli: cli, log: log, activated: make(chan struct{}, 1)}
}

// Activated is signalled whenever this node becomes the active coordinator (one pending
// signal at most), so loops that act only while active start at once instead of at their
// next tick.
func (e *Elector) Activated() <-chan struct{} { return e.activated }

// Active reports whether this node is the active coordinator.
func (e *Elector) Active() bool {
	e.fenceMu.RLock()
	defer e.fenceMu.RUnlock()
	return e.active
}

// Fence returns the active coordinator's fence: its election key and epoch. ok is false
// while this node is not the active coordinator.
func (e *Elector) Fence() (meta.Fence, bool) {
	e.fenceMu.RLock()
	defer e.fenceMu.RUnlock()
	return e.fence, e.active
}

// Epoch returns the coordinator epoch of this node while it is active, else 0.
func (e *Elector) Epoch() int64 {
	f, ok := e.Fence()
	if !ok {
		return 0
	}
	return f.Epoch
}

// SetActive sets this node's fence. The campaign calls it; tests call it to play a deposed
// coordinator that has not noticed yet.
func (e *Elector) SetActive(f meta.Fence, active bool) {
	e.fenceMu.Lock()
	defer e.fenceMu.Unlock()
	e.fence, e.active = f, active
	if active {
		select {
		case e.activated <- struct{}{}:
		default:
		}
	}
}

// Campaign campaigns under a session lease of ttl until ctx ends. When it wins it calls
// takeover (bounded by 30 s; an error steps down) and then holds the leadership until its
// session ends (the lease expired, say, because this node was cut off from etcd): then it
// steps down and campaigns again. When ctx ends it resigns, unless abandoned says to leave
// the lease to run out as a killed process would.
func (e *Elector) Campaign(ctx context.Context, info CoordinatorInfo, ttl time.Duration, takeover func(context.Context) error, abandoned func() bool) {
	val, _ := json.Marshal(info)
	for ctx.Err() == nil {
		sess, err := concurrency.NewSession(e.cli, concurrency.WithTTL(int(ttl/time.Second)), concurrency.WithContext(ctx))
		if err != nil {
			if ctx.Err() == nil {
				e.log.Warn("cannot open a coordinator election session", "err", err)
				time.Sleep(500 * time.Millisecond)
			}
			continue
		}
		e.session.Store(int64(sess.Lease()))
		e.leadWhileSession(ctx, sess, string(val), takeover)
		e.session.Store(0)
		e.SetActive(meta.Fence{}, false)
		if abandoned != nil && abandoned() {
			sess.Orphan() // the lease runs out on its own
			return
		}
		sess.Close() // resigns: deletes the election key and revokes the lease
	}
}

func (e *Elector) leadWhileSession(ctx context.Context, sess *concurrency.Session, val string, takeover func(context.Context) error) {
	el := concurrency.NewElection(sess, meta.KeyPrefix+strings.TrimSuffix(Prefix, "/"))
	if err := el.Campaign(ctx, val); err != nil {
		if ctx.Err() == nil {
			e.log.Warn("coordinator campaign failed", "err", err)
		}
		return
	}
	fence := meta.Fence{Key: strings.TrimPrefix(el.Key(), meta.KeyPrefix), Epoch: el.Rev()}
	e.SetActive(fence, true)
	e.log.Info("became the active coordinator", "epoch", fence.Epoch)
	tctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	if err := takeover(tctx); err != nil {
		e.log.Error("coordinator takeover failed; stepping down", "err", err)
		cancel()
		return
	}
	cancel()
	select {
	case <-sess.Done():
		e.log.Warn("lost the coordinator election lease; stepping down", "epoch", fence.Epoch)
	case <-ctx.Done():
	}
}

// Refresh reads the election: its leader is the key with the lowest create revision.
func (e *Elector) Refresh(ctx context.Context) error {
	resp, err := e.cli.Get(ctx, meta.KeyPrefix+Prefix, clientv3.WithFirstCreate()...)
	if err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.hasCoord = false
	e.current, e.curKey = CoordinatorInfo{}, LeaderKey{}
	if len(resp.Kvs) == 0 {
		return nil
	}
	var info CoordinatorInfo
	if err := json.Unmarshal(resp.Kvs[0].Value, &info); err != nil {
		return fmt.Errorf("corrupt coordinator election value: %w", err)
	}
	e.current, e.hasCoord = info, true
	e.curKey = LeaderKey{Rev: resp.Kvs[0].CreateRevision, Lease: clientv3.LeaseID(resp.Kvs[0].Lease)}
	return nil
}

// Leader returns the active coordinator and its election key as last read; ok false while
// none is elected.
func (e *Elector) Leader() (CoordinatorInfo, LeaderKey, bool) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return e.current, e.curKey, e.hasCoord
}

// SessionLease returns the lease of this node's election session, 0 while it has none.
func (e *Elector) SessionLease() clientv3.LeaseID { return clientv3.LeaseID(e.session.Load()) }

// Coordinator returns the active coordinator as last read; ok false while none is elected.
func (e *Elector) Coordinator() (CoordinatorInfo, bool) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return e.current, e.hasCoord
}

// CoordinatorAddr returns HOST:PORT of the active coordinator's internal listener, which may
// be this node's own.
func (e *Elector) CoordinatorAddr() (string, bool) {
	info, ok := e.Coordinator()
	if !ok || info.Internal == "" {
		return "", false
	}
	return info.Internal, true
}

// FencedPut writes (or, del, deletes) key (relative to meta.KeyPrefix) if this node still
// holds its fence; NOT_COORDINATOR_LEADER otherwise.
func (e *Elector) FencedPut(ctx context.Context, key string, val []byte, del bool) error {
	fence, ok := e.Fence()
	if !ok {
		return meta.ErrNotLeader()
	}
	fenceKey := meta.KeyPrefix + fence.Key
	op := clientv3.OpPut(meta.KeyPrefix+key, string(val))
	if del {
		op = clientv3.OpDelete(meta.KeyPrefix + key)
	}
	resp, err := e.cli.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(fenceKey), "=", fence.Epoch)).Then(op).Commit()
	if err != nil {
		return fmt.Errorf("write %s: %w", key, err)
	}
	if !resp.Succeeded {
		return meta.ErrNotLeader()
	}
	return nil
}

// FencedSwap writes val to key (relative to meta.KeyPrefix) if the key's mod revision is
// still expectRev and this node still holds its fence. It returns the new revision, 0 when
// the key had moved on, or NOT_COORDINATOR_LEADER when the fence is gone.
func (e *Elector) FencedSwap(ctx context.Context, key string, expectRev int64, val []byte) (int64, error) {
	fence, ok := e.Fence()
	if !ok {
		return 0, meta.ErrNotLeader()
	}
	full := meta.KeyPrefix + key
	fenceKey := meta.KeyPrefix + fence.Key
	resp, err := e.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(fenceKey), "=", fence.Epoch), clientv3.Compare(clientv3.ModRevision(full), "=", expectRev)).
		Then(clientv3.OpPut(full, string(val))).
		Else(clientv3.OpGet(fenceKey)).Commit()
	if err != nil {
		return 0, fmt.Errorf("write %s: %w", key, err)
	}
	if resp.Succeeded {
		return resp.Header.Revision, nil
	}
	if g := resp.Responses[0].GetResponseRange(); len(g.Kvs) == 0 || g.Kvs[0].CreateRevision != fence.Epoch {
		return 0, meta.ErrNotLeader()
	}
	return 0, nil
}
