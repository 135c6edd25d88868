package fluss

import (
	"context"

	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
)

// HealthStatus is a cluster's health as GET_CLUSTER_HEALTH grades it.
type HealthStatus int32

const (
	// HealthGreen: every bucket has an active leader and every replica is in sync.
	HealthGreen HealthStatus = 0
	// HealthYellow: every bucket has an active leader, some replica is out of sync.
	HealthYellow HealthStatus = 1
	// HealthRed: some bucket has no active leader (it is offline).
	HealthRed HealthStatus = 2
)

func (s HealthStatus) String() string {
	switch s {
	case HealthGreen:
		return "GREEN"
	case HealthYellow:
		return "YELLOW"
	case HealthRed:
		return "RED"
	}
	return "UNKNOWN"
}

// ClusterHealth counts the replicas of every bucket of every table in the cluster, as the
// coordinator sees them. Replicas-InSyncReplicas are the under-replicated replicas;
// LeaderReplicas-ActiveLeaderReplicas are the offline buckets (no live leader).
type ClusterHealth struct {
	Replicas             int32 // replicas of all buckets
	InSyncReplicas       int32 // of them, in the in-sync replica set of their bucket
	LeaderReplicas       int32 // buckets (one leader replica each)
	ActiveLeaderReplicas int32 // buckets whose leader is set and alive
	Status               HealthStatus
}

// UnderReplicated is the number of replicas out of sync with their leader.
func (h ClusterHealth) UnderReplicated() int32 { return h.Replicas - h.InSyncReplicas }

// OfflineBuckets is the number of buckets without an active leader.
func (h ClusterHealth) OfflineBuckets() int32 { return h.LeaderReplicas - h.ActiveLeaderReplicas }

// GetClusterHealth asks the coordinator for the cluster's health (GET_CLUSTER_HEALTH).
func (a *Admin) GetClusterHealth(ctx context.Context) (ClusterHealth, error) {
	var resp flusspb.GetClusterHealthResponse
	if err := a.conn.callCoordinator(ctx, wire.GetClusterHealth, &flusspb.GetClusterHealthRequest{}, &resp); err != nil {
		return ClusterHealth{}, err
	}
	return ClusterHealth{
		Replicas: resp.GetNumReplicas(), InSyncReplicas: resp.GetInSyncReplicas(),
		LeaderReplicas: resp.GetNumLeaderReplicas(), ActiveLeaderReplicas: resp.GetActiveLeaderReplicas(),
		Status: HealthStatus(resp.GetStatus()),
	}, nil
}
