package coordinator

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"maps"
	"slices"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
	"github.com/stromdb/strom/server/auth"
	"github.com/stromdb/strom/server/cluster"
	"github.com/stromdb/strom/server/control"
)

// Membership changes: ADD_SERVER_TAG (1047), REMOVE_SERVER_TAG (1048), REBALANCE (1049),
// LIST_REBALANCE_PROGRESS (1050), CANCEL_REBALANCE (1051). In a cluster server/control runs
// them (tags and the plan in etcd, moves as fenced bucket-state transactions); a standby
// forwards them to the active coordinator like every admin request. Authorization is
// Fluss's: ALTER on the cluster for tags, WRITE for REBALANCE and CANCEL_REBALANCE,
// DESCRIBE for LIST_REBALANCE_PROGRESS.

// Membership is what the coordinator needs from the control plane for these APIs
// (control.Control implements it). Every method fails with NOT_COORDINATOR_LEADER on a
// node that is not the active coordinator, which makes a standby forward the request.
type Membership interface {
	AddServerTag(ctx context.Context, ids []int32, tag control.ServerTag) error
	RemoveServerTag(ctx context.Context, ids []int32, tag control.ServerTag) error
	StartRebalance(ctx context.Context, goals []control.Goal) (string, error)
	RebalanceProgress(id string) (*control.Rebalance, error)
	CancelRebalance(ctx context.Context, id string) error
}

func (c *Coordinator) membership() Membership {
	if m, ok := c.opts.Cluster.(Membership); ok {
		return m
	}
	c.localOnce.Do(func() { c.local = &localMembership{c: c} })
	return c.local
}

func init() {
	registerAdmin(wire.AddServerTag, 0, 0, (*Coordinator).handleAddServerTag)
	registerAdmin(wire.RemoveServerTag, 0, 0, (*Coordinator).handleRemoveServerTag)
	registerAdmin(wire.Rebalance, 0, 0, (*Coordinator).handleRebalance)
	registerAdmin(wire.ListRebalanceProgress, 0, 0, (*Coordinator).handleListRebalanceProgress)
	registerAdmin(wire.CancelRebalance, 0, 0, (*Coordinator).handleCancelRebalance)
}

func serverTagOf(v int32) (control.ServerTag, error) {
	if !control.ValidServerTag(v) {
		return 0, ferr.New(ferr.UnknownServerError, "Value %d must be one of [PERMANENT_OFFLINE(0), TEMPORARY_OFFLINE(1)]", v)
	}
	return control.ServerTag(v), nil
}

// serverTagRequest is ADD_SERVER_TAG's or REMOVE_SERVER_TAG's request: both name servers and
// one tag.
type serverTagRequest interface {
	proto.Message
	GetServerIds() []int32
	GetServerTag() int32
}

// decodeServerTag decodes r and checks ALTER on the cluster, as Fluss does for both tag APIs.
func (c *Coordinator) decodeServerTag(req *wire.Request, r serverTagRequest) (control.ServerTag, error) {
	if err := req.Decode(r); err != nil {
		return 0, err
	}
	if err := c.authorize(req, auth.OpAlter, auth.ClusterResource()); err != nil {
		return 0, err
	}
	return serverTagOf(r.GetServerTag())
}

func (c *Coordinator) handleAddServerTag(ctx context.Context, req *wire.Request) (proto.Message, error) {
	var r flusspb.AddServerTagRequest
	tag, err := c.decodeServerTag(req, &r)
	if err != nil {
		return nil, err
	}
	return &flusspb.AddServerTagResponse{}, c.membership().AddServerTag(ctx, r.GetServerIds(), tag)
}

func (c *Coordinator) handleRemoveServerTag(ctx context.Context, req *wire.Request) (proto.Message, error) {
	var r flusspb.RemoveServerTagRequest
	tag, err := c.decodeServerTag(req, &r)
	if err != nil {
		return nil, err
	}
	return &flusspb.RemoveServerTagResponse{}, c.membership().RemoveServerTag(ctx, r.GetServerIds(), tag)
}

func (c *Coordinator) handleRebalance(ctx context.Context, req *wire.Request) (proto.Message, error) {
	var r flusspb.RebalanceRequest
	if err := req.Decode(&r); err != nil {
		return nil, err
	}
	if err := c.authorize(req, auth.OpWrite, auth.ClusterResource()); err != nil {
		return nil, err
	}
	goals := make([]control.Goal, 0, len(r.GetGoals()))
	for _, g := range r.GetGoals() {
		if !control.ValidGoal(g) {
			return nil, ferr.New(ferr.UnknownServerError, "Value %d must be one of [REPLICA_DISTRIBUTION(0), LEADER_DISTRIBUTION(1), RACK_AWARE(2)]", g)
		}
		goals = append(goals, control.Goal(g))
	}
	id, err := c.membership().StartRebalance(ctx, goals)
	if err != nil {
		return nil, err
	}
	return &flusspb.RebalanceResponse{RebalanceId: proto.String(id)}, nil
}

func (c *Coordinator) handleListRebalanceProgress(ctx context.Context, req *wire.Request) (proto.Message, error) {
	var r flusspb.ListRebalanceProgressRequest
	if err := req.Decode(&r); err != nil {
		return nil, err
	}
	if err := c.authorize(req, auth.OpDescribe, auth.ClusterResource()); err != nil {
		return nil, err
	}
	reb, err := c.membership().RebalanceProgress(r.GetRebalanceId())
	if err != nil {
		return nil, err
	}
	return rebalanceProgressResponse(reb), nil
}

func (c *Coordinator) handleCancelRebalance(ctx context.Context, req *wire.Request) (proto.Message, error) {
	var r flusspb.CancelRebalanceRequest
	if err := req.Decode(&r); err != nil {
		return nil, err
	}
	if err := c.authorize(req, auth.OpWrite, auth.ClusterResource()); err != nil {
		return nil, err
	}
	return &flusspb.CancelRebalanceResponse{}, c.membership().CancelRebalance(ctx, r.GetRebalanceId())
}

// rebalanceProgressResponse encodes a rebalance as Fluss does: no fields when there has
// been none; the moves grouped by table.
func rebalanceProgressResponse(r *control.Rebalance) *flusspb.ListRebalanceProgressResponse {
	resp := &flusspb.ListRebalanceProgressResponse{}
	if r == nil {
		return resp
	}
	resp.RebalanceId = proto.String(r.ID)
	resp.RebalanceStatus = proto.Int32(int32(r.Status))
	byTable := map[int64]*flusspb.PbRebalanceProgressForTable{}
	var order []int64
	for _, m := range r.Moves {
		t := byTable[m.Bucket.TableID]
		if t == nil {
			t = &flusspb.PbRebalanceProgressForTable{TableId: proto.Int64(m.Bucket.TableID)}
			byTable[m.Bucket.TableID] = t
			order = append(order, m.Bucket.TableID)
		}
		plan := &flusspb.PbRebalancePlanForBucket{BucketId: proto.Int32(m.Bucket.Bucket),
			OriginalLeader: proto.Int32(m.OriginalLeader), NewLeader: proto.Int32(m.NewLeader),
			OriginalReplicas: slices.Clone(m.OriginalReplicas), NewReplicas: slices.Clone(m.NewReplicas)}
		if m.Bucket.PartitionID != cluster.NoPartition {
			plan.PartitionId = proto.Int64(m.Bucket.PartitionID)
		}
		t.BucketsProgress = append(t.BucketsProgress, &flusspb.PbRebalanceProgressForBucket{RebalancePlan: plan, RebalanceStatus: proto.Int32(int32(m.Status))})
	}
	for _, id := range order {
		resp.TableProgress = append(resp.TableProgress, byTable[id])
	}
	return resp
}

// localMembership runs the membership APIs on the single node: its one tablet server can
// be tagged (kept in memory), and a rebalance is planned by the same rules as in a cluster
// over buckets that all live on that server, so it either has nothing to move (COMPLETED at
// once) or cannot move a tagged server's replicas anywhere (REBALANCE_FAILURE).
type localMembership struct {
	c    *Coordinator
	mu   sync.Mutex
	tags map[int32]control.ServerTag
	last *control.Rebalance
}

func (l *localMembership) servers() []int32 {
	ids := l.c.topo.TabletServerIDs()
	slices.Sort(ids)
	return ids
}

func (l *localMembership) AddServerTag(ctx context.Context, ids []int32, tag control.ServerTag) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	live := l.servers()
	for _, id := range ids {
		if !slices.Contains(live, id) {
			return ferr.New(ferr.ServerNotExistException, "Server %d not exists when trying to add server tag.", id)
		}
		if cur, ok := l.tags[id]; ok && cur != tag {
			return ferr.New(ferr.SeverTagAlreadyExistException, "Server tag %s already exists for server %d. However you want to set it to %s, please remove the server tag first.", cur, id, tag)
		}
	}
	if l.tags == nil {
		l.tags = map[int32]control.ServerTag{}
	}
	for _, id := range ids {
		l.tags[id] = tag
	}
	return nil
}

func (l *localMembership) RemoveServerTag(ctx context.Context, ids []int32, tag control.ServerTag) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, id := range ids {
		if cur, ok := l.tags[id]; ok && cur != tag {
			return ferr.New(ferr.SeverTagNotExistException, "Server tag %s not exists for server %d, the current server tag of this server is %s.", tag, id, cur)
		}
	}
	for _, id := range ids {
		delete(l.tags, id)
	}
	return nil
}

func (l *localMembership) StartRebalance(ctx context.Context, goals []control.Goal) (string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	live := l.servers()
	states := map[cluster.Bucket]cluster.BucketState{}
	if len(live) == 1 {
		self := live[0]
		l.c.mu.RLock()
		for _, t := range l.c.tablesByID {
			pids := []int64{cluster.NoPartition}
			if t.Partitioned() {
				pids = pids[:0]
				for _, p := range l.c.partitions[t.ID] {
					pids = append(pids, p.ID)
				}
			}
			for _, pid := range pids {
				for b := int32(0); b < t.NumBuckets(); b++ {
					states[cluster.Bucket{TableID: t.ID, PartitionID: pid, Bucket: b}] = cluster.BucketState{Replicas: []int32{self}, Leader: self, ISR: []int32{self}}
				}
			}
		}
		l.c.mu.RUnlock()
	}
	moves, err := control.PlanRebalance(states, live, maps.Clone(l.tags), goals)
	if err != nil {
		return "", err
	}
	if len(moves) > 0 {
		// One server cannot move a replica anywhere; a plan with moves means a bug.
		return "", ferr.New(ferr.RebalanceFailureException, "the single node cannot move replicas")
	}
	var id [16]byte
	rand.Read(id[:])
	l.last = &control.Rebalance{ID: hex.EncodeToString(id[:]), Status: control.StatusCompleted, Goals: goals, CreatedMs: time.Now().UnixMilli()}
	return l.last.ID, nil
}

func (l *localMembership) RebalanceProgress(id string) (*control.Rebalance, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if id != "" && (l.last == nil || l.last.ID != id) {
		return nil, ferr.New(ferr.NoRebalanceInProgressException, "Rebalance task id %s to list is not the current rebalance task.", id)
	}
	return l.last, nil
}

func (l *localMembership) CancelRebalance(ctx context.Context, id string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.last == nil || (id != "" && l.last.ID != id) {
		return ferr.New(ferr.NoRebalanceInProgressException, "No rebalance task %q in progress.", id)
	}
	return nil // the single node's rebalances are final at once
}
