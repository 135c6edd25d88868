package control

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/stromdb/strom/server/cluster"
	"github.com/stromdb/strom/server/control/assign"
	"github.com/stromdb/strom/server/control/bucketstate"
	"github.com/stromdb/strom/server/control/election"
	"github.com/stromdb/strom/server/control/membership"
	"github.com/stromdb/strom/server/control/notify"
	"github.com/stromdb/strom/server/control/rebalance"
	"github.com/stromdb/strom/server/meta"
)

// follower follows every change under meta.KeyPrefix with one etcd watch and routes each
// key to the concern that owns it: servers/ to the members, the election to the elector,
// buckets/ to the state cache, servertags and rebalance to the rebalancer, catalog records to
// the catalog reload. Then it sets off what the change calls for: the listener topology, a
// reconciliation, the local tablet server's states, a rebalance step.
type follower struct {
	opts       *Options // the node's roles; set before Start
	cli        *clientv3.Client
	log        *slog.Logger
	members    *membership.Members
	states     *bucketstate.Cache
	elector    *election.Elector
	rebalancer *rebalance.Rebalancer
	notifier   *notify.Notifier
	reconciler *assign.Reconciler

	catalogKick chan struct{}
	// seen is the revision up to which every change has been handled (applied to the local
	// tablet server among others); the registrar waits on it (caughtUp).
	seen atomic.Int64
}

// load reads the servers, the election, the bucket states, the tags and the rebalance at one
// revision and replaces each concern's view; it also returns every key it read (the
// catalog's among them), for the stray check at start.
func (f *follower) load(ctx context.Context) (int64, []*mvccpb.KeyValue, error) {
	resp, err := f.cli.Get(ctx, meta.KeyPrefix, clientv3.WithPrefix())
	if err != nil {
		return 0, nil, fmt.Errorf("load cluster state: %w", err)
	}
	live := map[int32]membership.Registration{}
	entries := map[cluster.Bucket]bucketstate.Entry{}
	records := map[string][]byte{}
	for _, kv := range resp.Kvs {
		key := strings.TrimPrefix(string(kv.Key), meta.KeyPrefix)
		switch {
		case rebalance.Owns(key):
			records[key] = kv.Value
		case strings.HasPrefix(key, membership.Prefix):
			if id, reg, ok := f.registration(key, kv.Value); ok {
				live[id] = reg
			}
		case strings.HasPrefix(key, bucketstate.Prefix):
			if b, st, ok := f.state(key, kv.Value); ok {
				entries[b] = bucketstate.Entry{State: st, Rev: kv.ModRevision}
			}
		}
	}
	f.members.Replace(live)
	f.states.Replace(entries)
	f.rebalancer.Replace(records)
	if err := f.elector.Refresh(ctx); err != nil {
		return 0, nil, err
	}
	f.publishTopology()
	return resp.Header.Revision, resp.Kvs, nil
}

func (f *follower) registration(key string, value []byte) (int32, membership.Registration, bool) {
	id, ok := membership.ParseKey(key)
	if !ok {
		return 0, membership.Registration{}, false
	}
	reg, err := membership.Decode(value)
	if err != nil {
		f.log.Warn("ignoring a corrupt server registration", "key", key, "err", err)
		return 0, membership.Registration{}, false
	}
	return id, reg, true
}

func (f *follower) state(key string, value []byte) (cluster.Bucket, cluster.BucketState, bool) {
	b, ok := bucketstate.ParseKey(key)
	if !ok {
		return cluster.Bucket{}, cluster.BucketState{}, false
	}
	st, err := bucketstate.Decode(value)
	if err != nil {
		f.log.Warn("ignoring a corrupt bucket state", "key", key, "err", err)
		return cluster.Bucket{}, cluster.BucketState{}, false
	}
	return b, st, true
}

// run follows every change from rev+1 until ctx ends, restarting from a fresh load when the
// watch breaks (a compacted revision, a lost member).
func (f *follower) run(ctx context.Context, rev int64) {
	for ctx.Err() == nil {
		wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
		wch := f.cli.Watch(wctx, meta.KeyPrefix, clientv3.WithPrefix(), clientv3.WithRev(rev+1), clientv3.WithPrevKV())
		broken := false
		for wr := range wch {
			if err := wr.Err(); err != nil {
				if !errors.Is(err, rpctypes.ErrCompacted) {
					f.log.Warn("cluster watch failed; reloading", "err", err)
				}
				broken = true
				break
			}
			rev = wr.Header.Revision
			f.handle(ctx, wr.Events)
			for _, ev := range wr.Events {
				f.noteSeen(ev.Kv.ModRevision)
			}
		}
		cancel()
		if ctx.Err() != nil {
			return
		}
		if !broken {
			// The channel closed without an error: the member lost its leader, say.
			time.Sleep(100 * time.Millisecond)
		}
		for ctx.Err() == nil {
			lctx, lcancel := context.WithTimeout(ctx, 5*time.Second)
			r, _, err := f.load(lctx)
			lcancel()
			if err == nil {
				rev = r
				f.afterReload(ctx)
				f.noteSeen(r)
				break
			}
			f.log.Warn("cluster reload failed", "err", err)
			time.Sleep(500 * time.Millisecond)
		}
	}
}

func (f *follower) afterReload(ctx context.Context) {
	if f.opts.Replicas != nil {
		f.notifier.ApplyMine(ctx, f.states.Snapshot(), nil, nil)
	}
	f.reconciler.Kick()
	f.kickCatalog()
}

// batch is what one watch response changed, by concern.
type batch struct {
	servers, elected, catalog bool
	states                    []bucketstate.Change // applied to the cache at once
	changed                   []cluster.Bucket     // states put
	dropped                   []cluster.Bucket     // deleted states that listed this server
	droppedTables             map[int64]bool       // tables whose schemas were deleted
}

// handle routes one watch response's events, then sets off what they call for.
func (f *follower) handle(ctx context.Context, events []*clientv3.Event) {
	bt := batch{droppedTables: map[int64]bool{}}
	for _, ev := range events {
		f.route(&bt, ev)
	}
	f.states.Apply(bt.states)
	f.react(ctx, &bt)
}

// route hands one event's key to its owner (the bucket states are collected in bt, to be
// applied at once) and notes in bt what changed.
func (f *follower) route(bt *batch, ev *clientv3.Event) {
	deleted := ev.Type == clientv3.EventTypeDelete
	key := strings.TrimPrefix(string(ev.Kv.Key), meta.KeyPrefix)
	if id, ok := droppedTable(key); ok && deleted {
		bt.droppedTables[id] = true
	}
	switch {
	case rebalance.Owns(key):
		f.rebalancer.Apply(key, ev.Kv.Value, deleted)
	case strings.HasPrefix(key, membership.Prefix):
		if deleted {
			if id, ok := membership.ParseKey(key); ok {
				f.members.Delete(id)
				bt.servers = true
			}
		} else if id, reg, ok := f.registration(key, ev.Kv.Value); ok {
			f.members.Put(id, reg)
			bt.servers = true
		}
	case strings.HasPrefix(key, election.Prefix):
		bt.elected = true
	case strings.HasPrefix(key, bucketstate.Prefix):
		if !deleted {
			if b, st, ok := f.state(key, ev.Kv.Value); ok {
				bt.states = append(bt.states, bucketstate.Change{Bucket: b, State: st, Rev: ev.Kv.ModRevision})
				bt.changed = append(bt.changed, b)
			}
			return
		}
		b, ok := bucketstate.ParseKey(key)
		if !ok {
			return
		}
		bt.states = append(bt.states, bucketstate.Change{Bucket: b, Deleted: true})
		if ev.PrevKv != nil {
			if st, err := bucketstate.Decode(ev.PrevKv.Value); err == nil && st.IsReplica(f.opts.Registration.ID) {
				bt.dropped = append(bt.dropped, b)
			}
		}
	case isCatalogKey(key):
		bt.catalog = true
	}
}

// react sets off what a batch calls for: the active coordinator read again, the listener
// topology, a catalog reload, a reconciliation, the local tablet server's states, a
// rebalance step.
func (f *follower) react(ctx context.Context, bt *batch) {
	if bt.elected {
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		if err := f.elector.Refresh(rctx); err != nil {
			f.log.Warn("cannot read the coordinator election", "err", err)
		}
		cancel()
	}
	if bt.servers || bt.elected {
		f.publishTopology()
	}
	if bt.catalog {
		f.kickCatalog()
	}
	if bt.servers || f.namesDeadServer(bt.changed) {
		f.reconciler.Kick()
	}
	if f.opts.Replicas != nil && (len(bt.changed) > 0 || len(bt.dropped) > 0) {
		f.notifier.ApplyMine(ctx, f.states.Of(bt.changed), bt.dropped, bt.droppedTables)
	}
	if len(bt.changed) > 0 && f.opts.Coordinator != nil {
		f.rebalancer.Kick()
	}
}

// namesDeadServer reports whether a state just put calls for an election: its leader or
// an ISR member is not live. The reconciler elects only when asked (a membership change,
// a takeover, a retry), so a state written from a view that was already stale — a table
// placed on a server whose registration was revoked while the creating transaction
// committed — would otherwise keep its dead leader until the next membership change.
// Kicking on a standby costs nothing: the reconciler acts only while active.
func (f *follower) namesDeadServer(changed []cluster.Bucket) bool {
	if len(changed) == 0 {
		return false
	}
	for _, st := range f.states.Of(changed) {
		if _, elect := assign.Elect(st, f.members.IsLive, 0); elect {
			return true
		}
	}
	return false
}

func isCatalogKey(key string) bool {
	for _, p := range []string{"databases/", "tables/", "schemas/", "partitions/"} {
		if strings.HasPrefix(key, p) {
			return true
		}
	}
	return false
}

// droppedTable recognises the deletion of a table's schemas (which a table drop deletes in
// the same transaction as its bucket states) and returns the table id.
func droppedTable(key string) (int64, bool) {
	rest, ok := strings.CutPrefix(key, "schemas/")
	if !ok {
		return 0, false
	}
	idStr, _, _ := strings.Cut(rest, "/")
	id, err := strconv.ParseInt(idStr, 10, 64)
	return id, err == nil
}

// publishTopology hands the live tablet servers and the active coordinator to the
// listener topology that GET_METADATA answers from.
func (f *follower) publishTopology() {
	if f.opts.Topology == nil {
		return
	}
	var coord []cluster.Endpoint
	if info, ok := f.elector.Coordinator(); ok {
		coord = info.Endpoints
	}
	f.opts.Topology.ReplaceTabletServers(f.members.Endpoints())
	f.opts.Topology.ReplaceRacks(f.members.Racks())
	f.opts.Topology.ReplaceCoordinator(coord)
}

func (f *follower) kickCatalog() {
	select {
	case f.catalogKick <- struct{}{}:
	default:
	}
}

// catalogLoop keeps the catalog of a node that is not the active coordinator in step with
// etcd (the active coordinator's catalog is written by itself), and then applies the states
// that waited for it.
func (f *follower) catalogLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-f.catalogKick:
		}
		if f.elector.Active() || f.opts.Catalog == nil {
			continue
		}
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := f.opts.Catalog.Reload(rctx)
		cancel()
		if err != nil {
			f.log.Warn("cannot reload the catalog", "err", err)
			continue
		}
		if f.opts.Replicas != nil {
			f.notifier.RetryPending(ctx)
		}
	}
}

// noteSeen records that every change up to rev has been handled (watch events arrive in
// revision order; a reload applies the whole state at its revision).
func (f *follower) noteSeen(rev int64) {
	for {
		old := f.seen.Load()
		if rev <= old || f.seen.CompareAndSwap(old, rev) {
			return
		}
	}
}

// caughtUp waits until every change up to rev has been handled, or ctx ends.
func (f *follower) caughtUp(ctx context.Context, rev int64) error {
	for f.seen.Load() < rev {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
	return nil
}
