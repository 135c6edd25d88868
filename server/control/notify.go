package control

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
	"github.com/stromdb/strom/server/cluster"
)

// stateApplier is the tablet server's ApplyBucketStates (docs/cluster.md, rule 1 of the
// replication contract).
type stateApplier interface {
	ApplyBucketStates(ctx context.Context, updates []cluster.BucketUpdate) error
}

// applyLocal hands updates to the local tablet server. Until the tablet server implements
// ApplyBucketStates, an adapter opens, through BecomeLeader, the buckets of every table or
// partition of which this server leads a bucket (BecomeLeader opens all buckets of the table
// or partition; clients reach only the ones GET_METADATA names this server the leader of).
func (c *Control) applyLocal(ctx context.Context, updates []cluster.BucketUpdate) error {
	if len(updates) == 0 {
		return nil
	}
	if a, ok := c.opts.Replicas.(stateApplier); ok {
		return a.ApplyBucketStates(ctx, updates)
	}
	type tp struct{ table, partition int64 }
	done := map[tp]bool{}
	var errs []error
	for _, u := range updates {
		k := tp{u.Bucket.TableID, u.Bucket.PartitionID}
		if u.State.Leader != c.opts.Registration.ID || done[k] {
			continue
		}
		done[k] = true
		if err := c.opts.Replicas.BecomeLeader(ctx, u.Table, u.Partition); err != nil {
			errs = append(errs, fmt.Errorf("lead %s: %w", u.Bucket, err))
		}
	}
	return errors.Join(errs...)
}

// applyMine applies the states that concern this tablet server, and stops the replicas of
// dropped buckets it held: the whole table's data when the table was dropped
// (droppedTables), else the partition's.
func (c *Control) applyMine(ctx context.Context, states map[cluster.Bucket]cluster.BucketState, dropped []cluster.Bucket, droppedTables map[int64]bool) {
	self := c.opts.Registration.ID
	var updates []cluster.BucketUpdate
	var missing []cluster.Bucket
	reloaded := false
	for b, st := range states {
		c.mineMu.Lock()
		held := c.mine[b]
		if st.IsReplica(self) {
			c.mine[b] = true
		} else {
			delete(c.mine, b)
		}
		c.mineMu.Unlock()
		if !st.IsReplica(self) && !held {
			continue
		}
		u, ok := c.update(b, st)
		if !ok && !reloaded && c.opts.Catalog != nil {
			reloaded = true
			if err := c.opts.Catalog.Reload(ctx); err != nil {
				c.log.Warn("cannot reload the catalog", "err", err)
			}
			u, ok = c.update(b, st)
		}
		if !ok {
			missing = append(missing, b)
			continue
		}
		updates = append(updates, u)
	}
	if len(missing) > 0 {
		c.pendingMu.Lock()
		if c.pending == nil {
			c.pending = map[cluster.Bucket]bool{}
		}
		for _, b := range missing {
			c.pending[b] = true
		}
		c.pendingMu.Unlock()
	}
	if err := c.applyLocal(ctx, updates); err != nil {
		c.log.Warn("cannot apply bucket states", "err", err)
	}
	type tp struct{ table, partition int64 }
	stopped := map[tp]bool{}
	for _, b := range dropped {
		k := tp{b.TableID, b.PartitionID}
		if droppedTables[b.TableID] {
			k.partition = cluster.NoPartition
		}
		if stopped[k] {
			continue
		}
		stopped[k] = true
		if err := c.opts.Replicas.StopReplicas(ctx, k.table, k.partition); err != nil {
			c.log.Warn("cannot delete the replicas of a dropped bucket", "table", k.table, "partition", k.partition, "err", err)
		}
	}
}

func (c *Control) retryPending() {
	c.pendingMu.Lock()
	bs := make([]cluster.Bucket, 0, len(c.pending))
	for b := range c.pending {
		bs = append(bs, b)
	}
	c.pending = nil
	c.pendingMu.Unlock()
	if len(bs) > 0 {
		c.applyMine(c.ctx, c.statesOf(bs), nil, nil)
	}
}

// update resolves a bucket's table and partition in the local catalog.
func (c *Control) update(b cluster.Bucket, st cluster.BucketState) (cluster.BucketUpdate, bool) {
	if c.opts.Catalog == nil {
		return cluster.BucketUpdate{}, false
	}
	t, ok := c.opts.Catalog.TableByID(b.TableID)
	if !ok {
		return cluster.BucketUpdate{}, false
	}
	u := cluster.BucketUpdate{Table: t, Bucket: b, State: st}
	if b.PartitionID != cluster.NoPartition {
		p, ok := c.opts.Catalog.PartitionByID(b.PartitionID)
		if !ok {
			return cluster.BucketUpdate{}, false
		}
		u.Partition = p
	}
	return u, true
}

// notify tells each replica's tablet server the new states: in process when it is this
// node, else with NOTIFY_LEADER_AND_ISR over its internal listener. It waits, bounded by
// NotifyTimeout, for the answers. A server that does not answer learns the states from its
// watch.
func (c *Control) notify(ctx context.Context, states map[cluster.Bucket]cluster.BucketState, t *cluster.TableInfo, p *cluster.PartitionInfo) {
	byServer := map[int32]map[cluster.Bucket]cluster.BucketState{}
	for b, st := range states {
		for _, r := range st.Replicas {
			if byServer[r] == nil {
				byServer[r] = map[cluster.Bucket]cluster.BucketState{}
			}
			byServer[r][b] = st
		}
	}
	ctx, cancel := context.WithTimeout(ctx, c.opts.NotifyTimeout)
	defer cancel()
	var wg sync.WaitGroup
	for id, sts := range byServer {
		if c.opts.Replicas != nil && id == c.opts.Registration.ID {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c.applyMine(ctx, sts, nil, nil)
			}()
			continue
		}
		c.mu.RLock()
		reg, live := c.live[id]
		c.mu.RUnlock()
		if !live {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := c.sendNotify(ctx, reg, sts, t, p); err != nil {
				c.log.Warn("NOTIFY_LEADER_AND_ISR failed; the server follows its watch", "server", id, "err", err)
			}
		}()
	}
	wg.Wait()
}

func (c *Control) sendNotify(ctx context.Context, reg Registration, states map[cluster.Bucket]cluster.BucketState, t *cluster.TableInfo, p *cluster.PartitionInfo) error {
	req := &flusspb.NotifyLeaderAndIsrRequest{CoordinatorEpoch: proto.Int32(int32(c.Epoch()))}
	for b, st := range states {
		tb := &flusspb.PbTableBucket{TableId: proto.Int64(b.TableID), BucketId: proto.Int32(b.Bucket)}
		if b.PartitionID != cluster.NoPartition {
			tb.PartitionId = proto.Int64(b.PartitionID)
		}
		path := &flusspb.PbPhysicalTablePath{}
		if tt := t; tt != nil || c.opts.Catalog != nil {
			if tt == nil {
				tt, _ = c.opts.Catalog.TableByID(b.TableID)
			}
			if tt != nil {
				path.DatabaseName, path.TableName = proto.String(tt.Path.Database), proto.String(tt.Path.Table)
			}
		}
		if p != nil && p.ID == b.PartitionID {
			path.PartitionName = proto.String(p.Name)
		}
		req.NotifyBucketsLeaderReq = append(req.NotifyBucketsLeaderReq, &flusspb.PbNotifyLeaderAndIsrReqForBucket{
			PhysicalTablePath: path, TableBucket: tb, Leader: proto.Int32(st.Leader), LeaderEpoch: proto.Int32(st.LeaderEpoch),
			Replicas: st.Replicas, Isr: st.ISR, BucketEpoch: proto.Int32(st.BucketEpoch),
		})
	}
	var resp flusspb.NotifyLeaderAndIsrResponse
	if err := c.conns.call(ctx, reg.Internal, wire.NotifyLeaderAndIsr, req, &resp); err != nil {
		return err
	}
	var errs []error
	for _, r := range resp.GetNotifyBucketsLeaderResp() {
		if r.GetErrorCode() != 0 {
			errs = append(errs, fmt.Errorf("bucket %d of table %d: %s", r.GetTableBucket().GetBucketId(), r.GetTableBucket().GetTableId(), r.GetErrorMessage()))
		}
	}
	return errors.Join(errs...)
}

// RegisterTablet installs the server-to-server handlers of a tablet server on svc:
// NOTIFY_LEADER_AND_ISR (version 0 only, as in Fluss 0.9), accepted only on the internal
// listener.
func (c *Control) RegisterTablet(svc *wire.Service, internalListener string) {
	svc.Handle(wire.NotifyLeaderAndIsr, wire.VersionRange{Min: 0, Max: 0}, func(ctx context.Context, req *wire.Request) (proto.Message, error) {
		if req.Listener != internalListener {
			return nil, ferr.New(ferr.AuthorizationException, "NOTIFY_LEADER_AND_ISR is accepted only on the internal listener %s", internalListener)
		}
		var r flusspb.NotifyLeaderAndIsrRequest
		if err := req.Decode(&r); err != nil {
			return nil, err
		}
		return c.handleNotify(ctx, &r), nil
	})
}

func (c *Control) handleNotify(ctx context.Context, r *flusspb.NotifyLeaderAndIsrRequest) *flusspb.NotifyLeaderAndIsrResponse {
	resp := &flusspb.NotifyLeaderAndIsrResponse{}
	states := map[cluster.Bucket]cluster.BucketState{}
	for _, nb := range r.GetNotifyBucketsLeaderReq() {
		tb := nb.GetTableBucket()
		b := cluster.Bucket{TableID: tb.GetTableId(), PartitionID: cluster.NoPartition, Bucket: tb.GetBucketId()}
		if tb.PartitionId != nil {
			b.PartitionID = tb.GetPartitionId()
		}
		st := cluster.BucketState{Replicas: nb.GetReplicas(), Leader: nb.GetLeader(), LeaderEpoch: nb.GetLeaderEpoch(),
			ISR: nb.GetIsr(), BucketEpoch: nb.GetBucketEpoch(), CoordinatorEpoch: int64(r.GetCoordinatorEpoch())}
		states[b] = st
		// Record it ahead of the watch, unless the watch already brought a newer one.
		c.mu.Lock()
		if cur, ok := c.states[b]; !ok || st.Newer(cur.state) {
			c.states[b] = stateEntry{state: st, rev: cur.rev}
		}
		c.mu.Unlock()
		resp.NotifyBucketsLeaderResp = append(resp.NotifyBucketsLeaderResp, &flusspb.PbNotifyLeaderAndIsrRespForBucket{TableBucket: tb})
	}
	c.applyMine(ctx, states, nil, nil)
	return resp
}

// connPool keeps one connection per internal address.
type connPool struct {
	mu    sync.Mutex
	conns map[string]*wire.ClientConn
}

func newConnPool() *connPool { return &connPool{conns: map[string]*wire.ClientConn{}} }

func (p *connPool) call(ctx context.Context, addr string, key wire.APIKey, req, resp proto.Message) error {
	p.mu.Lock()
	cc := p.conns[addr]
	p.mu.Unlock()
	if cc == nil || cc.Err() != nil {
		var err error
		if cc, err = wire.Dial(ctx, addr, wire.ClientConfig{SoftwareName: "strom-server"}); err != nil {
			return err
		}
		p.mu.Lock()
		if old := p.conns[addr]; old != nil {
			old.Close()
		}
		p.conns[addr] = cc
		p.mu.Unlock()
	}
	err := cc.Call(ctx, key, req, resp)
	if err != nil && ferr.CodeOf(err) == ferr.UnknownServerError {
		p.mu.Lock()
		if p.conns[addr] == cc {
			delete(p.conns, addr)
		}
		p.mu.Unlock()
		cc.Close()
	}
	return err
}

func (p *connPool) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for a, cc := range p.conns {
		cc.Close()
		delete(p.conns, a)
	}
}
