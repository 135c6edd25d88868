// Package notify carries bucket states from the control plane to the tablet servers
// (docs/cluster.md, "Notifications"): the active coordinator tells each replica's server
// of a new state, in process when it is this node and else with NOTIFY_LEADER_AND_ISR (1018)
// over the target's internal listener; a tablet server hands the states that concern it to
// its replica manager. The RPC is only the fast path: every node also passes the states its
// watch brings through ApplyMine.
package notify

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
	"github.com/stromdb/strom/server/cluster"
	"github.com/stromdb/strom/server/control/bucketstate"
	"github.com/stromdb/strom/server/control/membership"
	"github.com/stromdb/strom/server/control/peers"
)

// Catalog is what the notifier needs of the local catalog: tables and partitions by id, and
// a reload when the watch brings a state of one it does not know yet.
type Catalog interface {
	cluster.Catalog
	Reload(ctx context.Context) error
}

// stateApplier is the tablet server's ApplyBucketStates (docs/cluster.md, "Replication
// inside the tablet server").
type stateApplier interface {
	ApplyBucketStates(ctx context.Context, updates []cluster.BucketUpdate) error
}

// Notifier sends and receives bucket states for one node.
type Notifier struct {
	// Self and Replicas are the local tablet server; Replicas nil: no tablet role.
	Self     int32
	Replicas cluster.ReplicaManager
	Catalog  Catalog // nil until the node has one
	States   *bucketstate.Cache
	Members  *membership.Members
	Pool     *peers.Pool
	// Epoch is the coordinator epoch sent with a notification.
	Epoch func() int64
	// Timeout bounds the wait for the answers of one Notify.
	Timeout time.Duration
	Log     *slog.Logger

	// pending are states concerning this server whose table or partition the local catalog
	// does not know yet (its reload lags the watch); retried after each reload.
	pendingMu sync.Mutex
	pending   map[cluster.Bucket]bool
	// mine are the buckets whose last state passed here listed this server: when a state
	// stops listing it, the replica is told so (and deletes its copy).
	mineMu sync.Mutex
	mine   map[cluster.Bucket]bool
}

// passes reports whether a state goes to the local tablet server self: when it lists self,
// or when the last state passed for the bucket did (held), so the replica learns it is no
// longer one and drops its copy.
func passes(self int32, st cluster.BucketState, held bool) bool {
	return st.IsReplica(self) || held
}

// tablePartition names a table (partition NoPartition: the whole table) or one partition.
type tablePartition struct{ table, partition int64 }

// stopTargets says which replicas to stop for dropped buckets this server held: the whole
// table's data when the table was dropped (droppedTables), else each partition's (or the
// unpartitioned table's) — each once, in the order of dropped.
func stopTargets(dropped []cluster.Bucket, droppedTables map[int64]bool) []tablePartition {
	var out []tablePartition
	seen := map[tablePartition]bool{}
	for _, b := range dropped {
		k := tablePartition{b.TableID, b.PartitionID}
		if droppedTables[b.TableID] {
			k.partition = cluster.NoPartition
		}
		if !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	return out
}

// ApplyMine applies the states that concern this tablet server, and stops the replicas of
// dropped buckets it held: the whole table's data when the table was dropped
// (droppedTables), else the partition's.
func (n *Notifier) ApplyMine(ctx context.Context, states map[cluster.Bucket]cluster.BucketState, dropped []cluster.Bucket, droppedTables map[int64]bool) {
	var updates []cluster.BucketUpdate
	var missing []cluster.Bucket
	reloaded := false
	for b, st := range states {
		n.mineMu.Lock()
		if n.mine == nil {
			n.mine = map[cluster.Bucket]bool{}
		}
		held := n.mine[b]
		if st.IsReplica(n.Self) {
			n.mine[b] = true
		} else {
			delete(n.mine, b)
		}
		n.mineMu.Unlock()
		if !passes(n.Self, st, held) {
			continue
		}
		u, ok := n.update(b, st)
		if !ok && !reloaded && n.Catalog != nil {
			reloaded = true
			if err := n.Catalog.Reload(ctx); err != nil {
				n.Log.Warn("cannot reload the catalog", "err", err)
			}
			u, ok = n.update(b, st)
		}
		if !ok {
			missing = append(missing, b)
			continue
		}
		updates = append(updates, u)
	}
	if len(missing) > 0 {
		n.pendingMu.Lock()
		if n.pending == nil {
			n.pending = map[cluster.Bucket]bool{}
		}
		for _, b := range missing {
			n.pending[b] = true
		}
		n.pendingMu.Unlock()
	}
	if err := n.applyLocal(ctx, updates); err != nil {
		n.Log.Warn("cannot apply bucket states", "err", err)
	}
	for _, k := range stopTargets(dropped, droppedTables) {
		if err := n.Replicas.StopReplicas(ctx, k.table, k.partition); err != nil {
			n.Log.Warn("cannot delete the replicas of a dropped bucket", "table", k.table, "partition", k.partition, "err", err)
		}
	}
}

// RetryPending applies again the states that waited for the catalog (after a reload).
func (n *Notifier) RetryPending(ctx context.Context) {
	n.pendingMu.Lock()
	bs := make([]cluster.Bucket, 0, len(n.pending))
	for b := range n.pending {
		bs = append(bs, b)
	}
	n.pending = nil
	n.pendingMu.Unlock()
	if len(bs) > 0 {
		n.ApplyMine(ctx, n.States.Of(bs), nil, nil)
	}
}

// leaderTables says which tables or partitions the adapter for a tablet server without
// ApplyBucketStates opens: those of which self leads a bucket, each once.
func leaderTables(self int32, updates []cluster.BucketUpdate) []cluster.BucketUpdate {
	var out []cluster.BucketUpdate
	seen := map[tablePartition]bool{}
	for _, u := range updates {
		k := tablePartition{u.Bucket.TableID, u.Bucket.PartitionID}
		if u.State.Leader != self || seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, u)
	}
	return out
}

// applyLocal hands updates to the local tablet server. A replica manager without
// ApplyBucketStates gets, through BecomeLeader, the buckets of every table or partition of
// which this server leads a bucket (BecomeLeader opens all buckets of the table or
// partition; clients reach only the ones GET_METADATA names this server the leader of).
func (n *Notifier) applyLocal(ctx context.Context, updates []cluster.BucketUpdate) error {
	if len(updates) == 0 {
		return nil
	}
	if a, ok := n.Replicas.(stateApplier); ok {
		return a.ApplyBucketStates(ctx, updates)
	}
	var errs []error
	for _, u := range leaderTables(n.Self, updates) {
		if err := n.Replicas.BecomeLeader(ctx, u.Table, u.Partition); err != nil {
			errs = append(errs, fmt.Errorf("lead %s: %w", u.Bucket, err))
		}
	}
	return errors.Join(errs...)
}

// update resolves a bucket's table and partition in the local catalog.
func (n *Notifier) update(b cluster.Bucket, st cluster.BucketState) (cluster.BucketUpdate, bool) {
	if n.Catalog == nil {
		return cluster.BucketUpdate{}, false
	}
	t, ok := n.Catalog.TableByID(b.TableID)
	if !ok {
		return cluster.BucketUpdate{}, false
	}
	u := cluster.BucketUpdate{Table: t, Bucket: b, State: st}
	if b.PartitionID != cluster.NoPartition {
		p, ok := n.Catalog.PartitionByID(b.PartitionID)
		if !ok {
			return cluster.BucketUpdate{}, false
		}
		u.Partition = p
	}
	return u, true
}

// byServer groups states by each replica's server.
func byServer(states map[cluster.Bucket]cluster.BucketState) map[int32]map[cluster.Bucket]cluster.BucketState {
	out := map[int32]map[cluster.Bucket]cluster.BucketState{}
	for b, st := range states {
		for _, r := range st.Replicas {
			if out[r] == nil {
				out[r] = map[cluster.Bucket]cluster.BucketState{}
			}
			out[r][b] = st
		}
	}
	return out
}

// Notify tells each replica's tablet server the new states: in process when it is this
// node, else with NOTIFY_LEADER_AND_ISR over its internal listener. It waits, bounded by
// Timeout, for the answers. A server that does not answer learns the states from its
// watch. t and p, when known, name the table and partition in the request.
func (n *Notifier) Notify(ctx context.Context, states map[cluster.Bucket]cluster.BucketState, t *cluster.TableInfo, p *cluster.PartitionInfo) {
	ctx, cancel := context.WithTimeout(ctx, n.Timeout)
	defer cancel()
	var wg sync.WaitGroup
	for id, sts := range byServer(states) {
		if n.Replicas != nil && id == n.Self {
			wg.Add(1)
			go func() {
				defer wg.Done()
				n.ApplyMine(ctx, sts, nil, nil)
			}()
			continue
		}
		reg, live := n.Members.Get(id)
		if !live {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := n.send(ctx, reg, sts, t, p); err != nil {
				n.Log.Warn("NOTIFY_LEADER_AND_ISR failed; the server follows its watch", "server", id, "err", err)
			}
		}()
	}
	wg.Wait()
}

func (n *Notifier) send(ctx context.Context, reg membership.Registration, states map[cluster.Bucket]cluster.BucketState, t *cluster.TableInfo, p *cluster.PartitionInfo) error {
	tableOf := func(id int64) *cluster.TableInfo {
		if t != nil {
			return t
		}
		if n.Catalog == nil {
			return nil
		}
		tt, _ := n.Catalog.TableByID(id)
		return tt
	}
	req := encodeRequest(n.Epoch(), states, tableOf, p)
	var resp flusspb.NotifyLeaderAndIsrResponse
	if err := n.Pool.Call(ctx, reg.Internal, wire.NotifyLeaderAndIsr, req, &resp); err != nil {
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

// encodeRequest is the NOTIFY_LEADER_AND_ISR request of states. Fluss's coordinator epoch is
// 32-bit; Strom's (an etcd revision) is sent truncated, which is harmless: tablet servers
// order states by their leader and bucket epochs (docs/cluster.md, "Notifications").
func encodeRequest(epoch int64, states map[cluster.Bucket]cluster.BucketState, tableOf func(int64) *cluster.TableInfo, p *cluster.PartitionInfo) *flusspb.NotifyLeaderAndIsrRequest {
	req := &flusspb.NotifyLeaderAndIsrRequest{CoordinatorEpoch: proto.Int32(int32(epoch))}
	for b, st := range states {
		tb := &flusspb.PbTableBucket{TableId: proto.Int64(b.TableID), BucketId: proto.Int32(b.Bucket)}
		if b.PartitionID != cluster.NoPartition {
			tb.PartitionId = proto.Int64(b.PartitionID)
		}
		path := &flusspb.PbPhysicalTablePath{}
		if tt := tableOf(b.TableID); tt != nil {
			path.DatabaseName, path.TableName = proto.String(tt.Path.Database), proto.String(tt.Path.Table)
		}
		if p != nil && p.ID == b.PartitionID {
			path.PartitionName = proto.String(p.Name)
		}
		req.NotifyBucketsLeaderReq = append(req.NotifyBucketsLeaderReq, &flusspb.PbNotifyLeaderAndIsrReqForBucket{
			PhysicalTablePath: path, TableBucket: tb, Leader: proto.Int32(st.Leader), LeaderEpoch: proto.Int32(st.LeaderEpoch),
			Replicas: st.Replicas, Isr: st.ISR, BucketEpoch: proto.Int32(st.BucketEpoch),
		})
	}
	return req
}

// decodeRequest reads the states of a NOTIFY_LEADER_AND_ISR request.
func decodeRequest(r *flusspb.NotifyLeaderAndIsrRequest) map[cluster.Bucket]cluster.BucketState {
	states := map[cluster.Bucket]cluster.BucketState{}
	for _, nb := range r.GetNotifyBucketsLeaderReq() {
		tb := nb.GetTableBucket()
		b := cluster.Bucket{TableID: tb.GetTableId(), PartitionID: cluster.NoPartition, Bucket: tb.GetBucketId()}
		if tb.PartitionId != nil {
			b.PartitionID = tb.GetPartitionId()
		}
		states[b] = cluster.BucketState{Replicas: nb.GetReplicas(), Leader: nb.GetLeader(), LeaderEpoch: nb.GetLeaderEpoch(),
			ISR: nb.GetIsr(), BucketEpoch: nb.GetBucketEpoch(), CoordinatorEpoch: int64(r.GetCoordinatorEpoch())}
	}
	return states
}

// Register installs the tablet server's side on svc: NOTIFY_LEADER_AND_ISR (version 0 only,
// as in Fluss 0.9), accepted only on the internal listener.
func (n *Notifier) Register(svc *wire.Service, internalListener string) {
	svc.Handle(wire.NotifyLeaderAndIsr, wire.VersionRange{Min: 0, Max: 0}, func(ctx context.Context, req *wire.Request) (proto.Message, error) {
		if !req.IsInternal(internalListener) {
			return nil, ferr.New(ferr.AuthorizationException, "NOTIFY_LEADER_AND_ISR is accepted only on the internal listener %s", internalListener)
		}
		var r flusspb.NotifyLeaderAndIsrRequest
		if err := req.Decode(&r); err != nil {
			return nil, err
		}
		return n.handle(ctx, &r), nil
	})
}

func (n *Notifier) handle(ctx context.Context, r *flusspb.NotifyLeaderAndIsrRequest) *flusspb.NotifyLeaderAndIsrResponse {
	resp := &flusspb.NotifyLeaderAndIsrResponse{}
	states := decodeRequest(r)
	for _, nb := range r.GetNotifyBucketsLeaderReq() {
		resp.NotifyBucketsLeaderResp = append(resp.NotifyBucketsLeaderResp, &flusspb.PbNotifyLeaderAndIsrRespForBucket{TableBucket: nb.GetTableBucket()})
	}
	for b, st := range states {
		// Recorded ahead of the watch, unless the watch already brought a newer one.
		n.States.PutNewer(b, st)
	}
	n.ApplyMine(ctx, states, nil, nil)
	return resp
}
