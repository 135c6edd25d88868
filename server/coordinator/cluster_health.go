package coordinator

import (
	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/proto/flusspb"
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

// healthService serves GET_CLUSTER_HEALTH. It holds no state: it counts the catalog's
// buckets against the local tablet server (single node) or the bucket states (cluster).
type healthService struct {
	catalog bucketLister
	access  access
	states  bucketStateReader // nil on the single node
	live    liveness          // nil: every leader counts as live
	leader  BucketLeader      // the single node's tablet server; nil: every bucket is led
}

var healthAPIs apiTable[*healthService]

// liveness says whether a tablet server is registered (control.Control).
type liveness interface {
	IsLive(id int32) bool
}

// clusterHealth counts replicas as Fluss's coordinator does. A Strom node holds one replica
// per bucket, always in sync with itself; a bucket's leader is active when the tablet server
// serves it. RED: some leader inactive; YELLOW: some replica out of sync; GREEN otherwise.
func (h *healthService) clusterHealth() *flusspb.GetClusterHealthResponse {
	buckets := h.catalog.buckets()
	if h.states != nil {
		return h.fromStates(buckets)
	}
	var replicas, inSync, leaders, active int32
	for _, b := range buckets {
		replicas++
		inSync++
		leaders++
		if h.leader == nil || h.leader.Leads(b) {
			active++
		}
	}
	return healthResponse(replicas, inSync, leaders, active)
}

// fromStates counts from the bucket states of a cluster: each bucket's replicas and ISR;
// its leader is active when it is set and its server is registered.
func (h *healthService) fromStates(buckets []cluster.Bucket) *flusspb.GetClusterHealthResponse {
	type tp struct{ table, partition int64 }
	count := map[tp]int32{}
	for _, b := range buckets {
		k := tp{b.TableID, b.PartitionID}
		count[k] = max(count[k], b.Bucket+1)
	}
	var replicas, inSync, leaders, active int32
	for k, n := range count {
		states, known := h.states.BucketStates(k.table, k.partition, n)
		for i, st := range states {
			leaders++
			if !known[i] {
				continue
			}
			replicas += int32(len(st.Replicas))
			inSync += int32(len(st.ISR))
			if st.Leader != cluster.NoLeader && (h.live == nil || h.live.IsLive(st.Leader)) {
				active++
			}
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
