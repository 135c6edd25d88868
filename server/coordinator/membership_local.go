package coordinator

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/server/cluster"
	"github.com/stromdb/strom/server/control"
)

// localMembership runs the membership APIs on the single node: its one tablet server can
// be tagged (kept in memory), and a rebalance is planned by the same rules as in a cluster
// over buckets that all live on that server, so it either has nothing to move (COMPLETED at
// once) or cannot move a tagged server's replicas anywhere (REBALANCE_FAILURE).
type localMembership struct {
	topo    *cluster.Topology
	catalog bucketLister
	mu      sync.Mutex
	tags    map[int32]control.ServerTag
	last    *control.Rebalance
}

func (l *localMembership) servers() []int32 {
	ids := l.topo.TabletServerIDs()
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
		for _, b := range l.catalog.buckets() {
			states[b] = cluster.BucketState{Replicas: []int32{self}, Leader: self, ISR: []int32{self}}
		}
	}
	moves, err := control.PlanRebalance(states, live, nil, maps.Clone(l.tags), goals)
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

// bucketLister lists every bucket of every table and partition (Catalog).
type bucketLister interface {
	buckets() []cluster.Bucket
}
