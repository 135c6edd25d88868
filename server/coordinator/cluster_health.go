package coordinator

import (
	"context"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
	"github.com/stromdb/strom/server/auth"
	"github.com/stromdb/strom/server/cluster"
)

// BucketLeader is implemented by replica managers that can say whether they serve a bucket.
type BucketLeader interface {
	Leads(b cluster.Bucket) bool
}

// Cluster health status codes (GetClusterHealthResponse.status).
const (
	healthGreen  int32 = 0
	healthYellow int32 = 1
	healthRed    int32 = 2
)

// ClusterHealth counts replicas as Fluss's coordinator does. A Strom node holds one replica
// per bucket, always in sync with itself; a bucket's leader is active when the tablet server
// serves it. RED: some leader inactive; YELLOW: some replica out of sync; GREEN otherwise.
func (c *Coordinator) ClusterHealth() *flusspb.GetClusterHealthResponse {
	c.mu.RLock()
	var buckets []cluster.Bucket
	for _, t := range c.tablesByID {
		pids := []int64{cluster.NoPartition}
		if t.Partitioned() {
			pids = pids[:0]
			for _, p := range c.partitions[t.ID] {
				pids = append(pids, p.ID)
			}
		}
		for _, pid := range pids {
			for b := int32(0); b < t.NumBuckets(); b++ {
				buckets = append(buckets, cluster.Bucket{TableID: t.ID, PartitionID: pid, Bucket: b})
			}
		}
	}
	c.mu.RUnlock()
	leader, _ := c.replicas.(BucketLeader)
	var replicas, inSync, leaders, active int32
	if c.clustered() {
		return c.clusterHealth(buckets)
	}
	for _, b := range buckets {
		replicas++
		inSync++
		leaders++
		if leader == nil || leader.Leads(b) {
			active++
		}
	}
	return healthResponse(replicas, inSync, leaders, active)
}

func healthResponse(replicas, inSync, leaders, active int32) *flusspb.GetClusterHealthResponse {
	status := healthGreen
	switch {
	case active < leaders:
		status = healthRed
	case inSync < replicas:
		status = healthYellow
	}
	return &flusspb.GetClusterHealthResponse{NumReplicas: proto.Int32(replicas), InSyncReplicas: proto.Int32(inSync),
		NumLeaderReplicas: proto.Int32(leaders), ActiveLeaderReplicas: proto.Int32(active), Status: proto.Int32(status)}
}

func init() { registerReadOnly(wire.GetClusterHealth, 0, 0, (*Coordinator).handleGetClusterHealth) }

func (c *Coordinator) handleGetClusterHealth(ctx context.Context, req *wire.Request) (proto.Message, error) {
	var r flusspb.GetClusterHealthRequest
	if err := req.Decode(&r); err != nil {
		return nil, err
	}
	if err := c.authorize(req, auth.OpDescribe, auth.ClusterResource()); err != nil {
		return nil, err
	}
	return c.ClusterHealth(), nil
}

// clusterHealth counts from the bucket states of a cluster: each bucket's replicas and ISR;
// its leader is active when it is set and its server is registered.
func (c *Coordinator) clusterHealth(buckets []cluster.Bucket) *flusspb.GetClusterHealthResponse {
	live, _ := c.opts.Cluster.(interface{ IsLive(id int32) bool })
	type tp struct{ table, partition int64 }
	count := map[tp]int32{}
	for _, b := range buckets {
		k := tp{b.TableID, b.PartitionID}
		count[k] = max(count[k], b.Bucket+1)
	}
	var replicas, inSync, leaders, active int32
	for k, n := range count {
		states, known := c.opts.Cluster.BucketStates(k.table, k.partition, n)
		for i, st := range states {
			leaders++
			if !known[i] {
				continue
			}
			replicas += int32(len(st.Replicas))
			inSync += int32(len(st.ISR))
			if st.Leader != cluster.NoLeader && (live == nil || live.IsLive(st.Leader)) {
				active++
			}
		}
	}
	return healthResponse(replicas, inSync, leaders, active)
}
