package coordinator

import (
	"context"
	"slices"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
	"github.com/stromdb/strom/server/auth"
	"github.com/stromdb/strom/server/cluster"
	"github.com/stromdb/strom/server/control"
)

func init() {
	membershipAPIs.admin(wire.ListRebalanceProgress, 0, 0, (*membershipService).handleListRebalanceProgress)
}

func (m *membershipService) handleListRebalanceProgress(ctx context.Context, req *wire.Request) (proto.Message, error) {
	var r flusspb.ListRebalanceProgressRequest
	if err := req.Decode(&r); err != nil {
		return nil, err
	}
	if err := m.access.authorize(req, auth.OpDescribe, auth.ClusterResource()); err != nil {
		return nil, err
	}
	reb, err := m.members.RebalanceProgress(r.GetRebalanceId())
	if err != nil {
		return nil, err
	}
	return rebalanceProgressResponse(reb), nil
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
