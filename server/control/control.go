// Package control is the control plane of a Strom cluster (docs/cluster.md): tablet-server
// membership through etcd leases, the coordinator election and its epoch fencing, replica
// assignment, bucket states in etcd, leader failover, notifications to tablet servers, and
// cluster.ReplicationControl over etcd.
//
// Every node runs one Control. It keeps, from one etcd watch, the live tablet servers, the
// active coordinator and every bucket state; it feeds the listener topology with the first
// two, and the local tablet server (if any) with the states that concern it. A node with the
// coordinator role campaigns; while it is the active coordinator it writes through a fence
// (its election key's create revision, the coordinator epoch), so a deposed coordinator's
// writes fail.
package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/stromdb/strom/server/cluster"
	"github.com/stromdb/strom/server/meta"
)

// Keys, all under meta.KeyPrefix.
const (
	serversPrefix  = "servers/"              // servers/<id>: Registration, leased
	electionPrefix = "coordinator/election/" // concurrency.Election keys; value: CoordinatorInfo
	bucketsPrefix  = "buckets/"              // buckets/<table>/<partition|->/<bucket>: BucketState
	lineagePrefix  = "lineage/"              // lineage/<table>/<partition|->/<bucket>: Lineage
)

func bucketSuffix(b cluster.Bucket) string {
	p := "-"
	if b.PartitionID != cluster.NoPartition {
		p = strconv.FormatInt(b.PartitionID, 10)
	}
	return fmt.Sprintf("%d/%s/%d", b.TableID, p, b.Bucket)
}

// BucketKey is the key of a bucket's state.
func BucketKey(b cluster.Bucket) string { return bucketsPrefix + bucketSuffix(b) }

func lineageKey(b cluster.Bucket) string { return lineagePrefix + bucketSuffix(b) }

// BucketsPrefix is the prefix of the states of a table's buckets (partitionID NoPartition:
// every bucket of the table, of every partition) or of one partition's.
func BucketsPrefix(tableID, partitionID int64) string {
	if partitionID == cluster.NoPartition {
		return fmt.Sprintf("%s%d/", bucketsPrefix, tableID)
	}
	return fmt.Sprintf("%s%d/%d/", bucketsPrefix, tableID, partitionID)
}

func parseBucketKey(key string) (cluster.Bucket, bool) {
	parts := strings.Split(strings.TrimPrefix(key, bucketsPrefix), "/")
	if len(parts) != 3 {
		return cluster.Bucket{}, false
	}
	t, err1 := strconv.ParseInt(parts[0], 10, 64)
	b, err2 := strconv.ParseInt(parts[2], 10, 32)
	p := cluster.NoPartition
	var err3 error
	if parts[1] != "-" {
		p, err3 = strconv.ParseInt(parts[1], 10, 64)
	}
	if err1 != nil || err2 != nil || err3 != nil {
		return cluster.Bucket{}, false
	}
	return cluster.Bucket{TableID: t, PartitionID: p, Bucket: int32(b)}, true
}

// Registration is what a tablet server publishes under servers/<id> while it lives.
type Registration struct {
	ID        int32              `json:"id"`
	Endpoints []cluster.Endpoint `json:"endpoints"`
	// Internal is HOST:PORT of the internal listener (replication and server-to-server RPCs).
	Internal string `json:"internal"`
}

// CoordinatorInfo is the value of the active coordinator's election key.
type CoordinatorInfo struct {
	Endpoints []cluster.Endpoint `json:"endpoints"`
	// Internal is HOST:PORT of the coordinator's internal listener, where standbys forward
	// admin requests.
	Internal string `json:"internal"`
}

// Catalog is what Control needs from the local catalog (the coordinator package).
type Catalog interface {
	cluster.Catalog
	// Reload re-reads the catalog from the store (on nodes that are not the active
	// coordinator, to follow its DDL).
	Reload(ctx context.Context) error
	// Takeover prepares the catalog for writes when this node becomes the active coordinator.
	Takeover(ctx context.Context) error
}

// Options configures a Control.
type Options struct {
	Store    *meta.EtcdStore
	Topology *cluster.Topology
	Catalog  Catalog
	Log      *slog.Logger

	// Tablet server role: Registration.ID is tablet-server.id. Replicas nil: no tablet role.
	Registration Registration
	Replicas     cluster.ReplicaManager
	TabletTTL    time.Duration

	// Coordinator role: Coordinator non-nil.
	Coordinator    *CoordinatorInfo
	CoordinatorTTL time.Duration

	// NotifyTimeout bounds the wait of a coordinator for a tablet server to apply a state
	// (default 10 s).
	NotifyTimeout time.Duration
	// MoveTimeout bounds one bucket move of a rebalance (default 2 min, as Fluss).
	MoveTimeout time.Duration
}

type stateEntry struct {
	state cluster.BucketState
	rev   int64 // mod revision of the key
}

// Control is one node's view of, and part in, the cluster's control plane.
type Control struct {
	opts  Options
	store *meta.EtcdStore
	cli   *clientv3.Client
	log   *slog.Logger

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu          sync.RWMutex
	live        map[int32]Registration
	coordinator CoordinatorInfo
	hasCoord    bool
	states      map[cluster.Bucket]stateEntry

	fenceMu sync.RWMutex
	fence   meta.Fence
	active  bool

	reconcileMu sync.Mutex // serialises the active coordinator's leader elections
	kick        chan struct{}
	catalogKick chan struct{}

	conns   *connPool
	abandon atomic.Bool
	lease   leaseClock // of this tablet server's registration (lease_clock.go)
	// pending are states concerning this server whose table or partition the local catalog
	// does not know yet (its reload lags the watch); retried after each reload.
	pendingMu sync.Mutex
	pending   map[cluster.Bucket]bool
	// mine are the buckets whose last state applied here listed this server: when a state
	// stops listing it, the replica is told so (and deletes its copy).
	mineMu sync.Mutex
	mine   map[cluster.Bucket]bool

	// Membership changes (rebalance.go). tags and rebalance are guarded by mu; memberMu
	// serialises the active coordinator's tag and rebalance changes; moveStarted is owned by
	// the holder of memberMu.
	tags          map[int32]ServerTag
	rebalance     *Rebalance
	memberMu      sync.Mutex
	rebalanceKick chan struct{}
	moveStarted   map[cluster.Bucket]time.Time
}

// New returns a Control; Start runs it.
func New(opts Options) *Control {
	if opts.NotifyTimeout == 0 {
		opts.NotifyTimeout = 10 * time.Second
	}
	if opts.TabletTTL == 0 {
		opts.TabletTTL = 5 * time.Second
	}
	if opts.CoordinatorTTL == 0 {
		opts.CoordinatorTTL = 5 * time.Second
	}
	return &Control{
		opts: opts, store: opts.Store, cli: opts.Store.Client(), log: opts.Log,
		live: map[int32]Registration{}, states: map[cluster.Bucket]stateEntry{},
		kick: make(chan struct{}, 1), catalogKick: make(chan struct{}, 1),
		rebalanceKick: make(chan struct{}, 1), mine: map[cluster.Bucket]bool{},
		conns: newConnPool(),
	}
}

// Start loads the cluster state, registers the tablet server, and starts the watch, the
// lease keepalive and the campaign. It returns once this node's view is loaded, its tablet
// server registered and the states concerning it applied.
func (c *Control) Start(ctx context.Context) error {
	c.ctx, c.cancel = context.WithCancel(context.Background())
	rev, kvs, err := c.loadKVs(ctx)
	if err != nil {
		return err
	}
	if c.opts.Replicas != nil {
		if err := c.register(ctx); err != nil {
			return err
		}
		states := c.snapshotStates()
		c.applyMine(ctx, states, nil, nil)
		c.removeStrays(ctx, states, catalogIDsOf(kvs))
	}
	c.wg.Add(2)
	go func() { defer c.wg.Done(); c.watchLoop(rev) }()
	go func() { defer c.wg.Done(); c.catalogLoop() }()
	if c.opts.Coordinator != nil {
		c.wg.Add(3)
		go func() { defer c.wg.Done(); c.campaignLoop() }()
		go func() { defer c.wg.Done(); c.reconcileLoop() }()
		go func() { defer c.wg.Done(); c.rebalanceLoop() }()
	}
	return nil
}

// Abandon makes the next Close leave the cluster as a killed process would: no lease is
// revoked, so the node stays registered (and a coordinator elected) until its leases
// expire. For tests of failure detection.
func (c *Control) Abandon() { c.abandon.Store(true) }

// Close resigns, deregisters and stops every loop.
func (c *Control) Close() {
	if c.cancel == nil {
		return
	}
	c.cancel()
	c.wg.Wait()
	c.conns.close()
}

// load reads the servers, the election and the bucket states at one revision.
func (c *Control) load(ctx context.Context) (int64, error) {
	rev, _, err := c.loadKVs(ctx)
	return rev, err
}

// loadKVs is load, and also returns every key it read (the catalog's among them), for Start.
func (c *Control) loadKVs(ctx context.Context) (int64, []*mvccpb.KeyValue, error) {
	resp, err := c.cli.Get(ctx, meta.KeyPrefix, clientv3.WithPrefix())
	if err != nil {
		return 0, nil, fmt.Errorf("load cluster state: %w", err)
	}
	c.mu.Lock()
	c.live = map[int32]Registration{}
	c.states = map[cluster.Bucket]stateEntry{}
	c.tags = map[int32]ServerTag{}
	if !c.Active() {
		c.rebalance = nil
	}
	for _, kv := range resp.Kvs {
		c.applyKVLocked(string(kv.Key), kv.Value, kv.ModRevision, false)
	}
	c.mu.Unlock()
	if err := c.refreshCoordinator(ctx); err != nil {
		return 0, nil, err
	}
	c.publishTopology()
	return resp.Header.Revision, resp.Kvs, nil
}

// applyKVLocked folds one key's new value (or deletion) into the view. It reports which
// kind of key changed.
func (c *Control) applyKVLocked(fullKey string, value []byte, rev int64, deleted bool) (kind string, b cluster.Bucket) {
	key := strings.TrimPrefix(fullKey, meta.KeyPrefix)
	if c.applyMembershipKVLocked(key, value, deleted) {
		return "membership", b
	}
	switch {
	case strings.HasPrefix(key, serversPrefix):
		id, err := strconv.ParseInt(strings.TrimPrefix(key, serversPrefix), 10, 32)
		if err != nil {
			return "", b
		}
		if deleted {
			delete(c.live, int32(id))
			return "servers", b
		}
		var reg Registration
		if err := json.Unmarshal(value, &reg); err != nil {
			c.log.Warn("ignoring a corrupt server registration", "key", key, "err", err)
			return "", b
		}
		c.live[int32(id)] = reg
		return "servers", b
	case strings.HasPrefix(key, electionPrefix):
		return "election", b
	case strings.HasPrefix(key, bucketsPrefix):
		bk, ok := parseBucketKey(key)
		if !ok {
			return "", b
		}
		if deleted {
			delete(c.states, bk)
			return "buckets", bk
		}
		var st cluster.BucketState
		if err := json.Unmarshal(value, &st); err != nil {
			c.log.Warn("ignoring a corrupt bucket state", "key", key, "err", err)
			return "", b
		}
		if cur, ok := c.states[bk]; !ok || rev > cur.rev {
			c.states[bk] = stateEntry{state: st, rev: rev}
		}
		return "buckets", bk
	case strings.HasPrefix(key, "databases/"), strings.HasPrefix(key, "tables/"), strings.HasPrefix(key, "schemas/"), strings.HasPrefix(key, "partitions/"):
		return "catalog", b
	}
	return "", b
}

// watchLoop follows every change under the key prefix, restarting from a fresh load when
// the watch breaks (a compacted revision, a lost member).
func (c *Control) watchLoop(rev int64) {
	for c.ctx.Err() == nil {
		wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(c.ctx))
		wch := c.cli.Watch(wctx, meta.KeyPrefix, clientv3.WithPrefix(), clientv3.WithRev(rev+1), clientv3.WithPrevKV())
		broken := false
		for wr := range wch {
			if err := wr.Err(); err != nil {
				if !errors.Is(err, rpctypes.ErrCompacted) {
					c.log.Warn("cluster watch failed; reloading", "err", err)
				}
				broken = true
				break
			}
			rev = wr.Header.Revision
			c.handleEvents(wr.Events)
		}
		cancel()
		if c.ctx.Err() != nil {
			return
		}
		if !broken {
			// The channel closed without an error: the member lost its leader, say.
			time.Sleep(100 * time.Millisecond)
		}
		for c.ctx.Err() == nil {
			lctx, lcancel := context.WithTimeout(c.ctx, 5*time.Second)
			r, err := c.load(lctx)
			lcancel()
			if err == nil {
				rev = r
				c.afterReload()
				break
			}
			c.log.Warn("cluster reload failed", "err", err)
			time.Sleep(500 * time.Millisecond)
		}
	}
}

func (c *Control) afterReload() {
	if c.opts.Replicas != nil {
		c.applyMine(c.ctx, c.snapshotStates(), nil, nil)
	}
	c.kickReconcile()
	c.kickCatalog()
}

func (c *Control) handleEvents(events []*clientv3.Event) {
	var servers, election, catalog bool
	var changed []cluster.Bucket
	var dropped []cluster.Bucket
	droppedTables := map[int64]bool{}
	c.mu.Lock()
	for _, ev := range events {
		deleted := ev.Type == clientv3.EventTypeDelete
		if id, ok := droppedTable(string(ev.Kv.Key)); ok && deleted {
			droppedTables[id] = true
		}
		kind, b := c.applyKVLocked(string(ev.Kv.Key), ev.Kv.Value, ev.Kv.ModRevision, deleted)
		switch kind {
		case "servers":
			servers = true
		case "election":
			election = true
		case "catalog":
			catalog = true
		case "buckets":
			if deleted {
				if ev.PrevKv != nil {
					var st cluster.BucketState
					if json.Unmarshal(ev.PrevKv.Value, &st) == nil && st.IsReplica(c.opts.Registration.ID) {
						dropped = append(dropped, b)
					}
				}
			} else {
				changed = append(changed, b)
			}
		}
	}
	c.mu.Unlock()
	if election {
		ctx, cancel := context.WithTimeout(c.ctx, 5*time.Second)
		if err := c.refreshCoordinator(ctx); err != nil {
			c.log.Warn("cannot read the coordinator election", "err", err)
		}
		cancel()
	}
	if servers || election {
		c.publishTopology()
	}
	if catalog {
		c.kickCatalog()
	}
	if servers {
		c.kickReconcile()
	}
	if c.opts.Replicas != nil && (len(changed) > 0 || len(dropped) > 0) {
		c.applyMine(c.ctx, c.statesOf(changed), dropped, droppedTables)
	}
	if len(changed) > 0 && c.opts.Coordinator != nil {
		c.kickRebalance()
	}
}

// droppedTable recognises the deletion of a table's schemas (which a table drop deletes in
// the same transaction as its bucket states) and returns the table id.
func droppedTable(fullKey string) (int64, bool) {
	rest, ok := strings.CutPrefix(fullKey, meta.KeyPrefix+"schemas/")
	if !ok {
		return 0, false
	}
	idStr, _, _ := strings.Cut(rest, "/")
	id, err := strconv.ParseInt(idStr, 10, 64)
	return id, err == nil
}

// refreshCoordinator reads the election: its leader is the key with the lowest create
// revision.
func (c *Control) refreshCoordinator(ctx context.Context) error {
	resp, err := c.cli.Get(ctx, meta.KeyPrefix+electionPrefix, clientv3.WithFirstCreate()...)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.hasCoord = false
	c.coordinator = CoordinatorInfo{}
	if len(resp.Kvs) == 0 {
		return nil
	}
	var info CoordinatorInfo
	if err := json.Unmarshal(resp.Kvs[0].Value, &info); err != nil {
		return fmt.Errorf("corrupt coordinator election value: %w", err)
	}
	c.coordinator, c.hasCoord = info, true
	return nil
}

// publishTopology hands the live tablet servers and the active coordinator to the
// listener topology that GET_METADATA answers from.
func (c *Control) publishTopology() {
	if c.opts.Topology == nil {
		return
	}
	c.mu.RLock()
	servers := make(map[int32][]cluster.Endpoint, len(c.live))
	for id, r := range c.live {
		servers[id] = r.Endpoints
	}
	var coord []cluster.Endpoint
	if c.hasCoord {
		coord = c.coordinator.Endpoints
	}
	c.mu.RUnlock()
	c.opts.Topology.ReplaceTabletServers(servers)
	c.opts.Topology.ReplaceCoordinator(coord)
}

func (c *Control) kickCatalog() {
	select {
	case c.catalogKick <- struct{}{}:
	default:
	}
}

func (c *Control) kickReconcile() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// catalogLoop keeps the catalog of a node that is not the active coordinator in step with
// etcd. (The active coordinator's catalog is written by itself.)
func (c *Control) catalogLoop() {
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-c.catalogKick:
		}
		if c.Active() || c.opts.Catalog == nil {
			continue
		}
		ctx, cancel := context.WithTimeout(c.ctx, 10*time.Second)
		err := c.opts.Catalog.Reload(ctx)
		cancel()
		if err != nil {
			c.log.Warn("cannot reload the catalog", "err", err)
			continue
		}
		if c.opts.Replicas != nil {
			c.retryPending()
		}
	}
}

// LiveServers returns the ids of the live tablet servers, sorted.
func (c *Control) LiveServers() []int32 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	ids := make([]int32, 0, len(c.live))
	for id := range c.live {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// IsLive reports whether tablet server id is registered.
func (c *Control) IsLive(id int32) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	_, ok := c.live[id]
	return ok
}

// BucketStates returns the states of the buckets of a table (partitionID NoPartition) or
// partition, by bucket id; ok false for a bucket with no stored state.
func (c *Control) BucketStates(tableID, partitionID int64, n int32) ([]cluster.BucketState, []bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]cluster.BucketState, n)
	ok := make([]bool, n)
	for i := int32(0); i < n; i++ {
		if e, found := c.states[cluster.Bucket{TableID: tableID, PartitionID: partitionID, Bucket: i}]; found {
			out[i], ok[i] = e.state, true
		}
	}
	return out, ok
}

// State returns the state of one bucket.
func (c *Control) State(b cluster.Bucket) (cluster.BucketState, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	e, ok := c.states[b]
	return e.state, ok
}

func (c *Control) snapshotStates() map[cluster.Bucket]cluster.BucketState {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make(map[cluster.Bucket]cluster.BucketState, len(c.states))
	for b, e := range c.states {
		out[b] = e.state
	}
	return out
}

func (c *Control) statesOf(bs []cluster.Bucket) map[cluster.Bucket]cluster.BucketState {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make(map[cluster.Bucket]cluster.BucketState, len(bs))
	for _, b := range bs {
		if e, ok := c.states[b]; ok {
			out[b] = e.state
		}
	}
	return out
}

// noteState records a state this node itself wrote at rev, ahead of the watch.
func (c *Control) noteState(b cluster.Bucket, st cluster.BucketState, rev int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cur, ok := c.states[b]; !ok || rev > cur.rev {
		c.states[b] = stateEntry{state: st, rev: rev}
	}
}

func (c *Control) forgetStates(tableID, partitionID int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for b := range c.states {
		if b.TableID == tableID && (partitionID == cluster.NoPartition || b.PartitionID == partitionID) {
			delete(c.states, b)
		}
	}
}

// SetCatalog sets the local catalog (before Start: it is built after the Control, since
// its store is fenced by the Control).
func (c *Control) SetCatalog(cat Catalog) { c.opts.Catalog = cat }

// SetTablet makes this node a tablet server of the cluster (before Start).
func (c *Control) SetTablet(reg Registration, replicas cluster.ReplicaManager) {
	c.opts.Registration, c.opts.Replicas = reg, replicas
}

// SetCoordinator makes this node campaign for the coordinator election (before Start).
func (c *Control) SetCoordinator(info CoordinatorInfo) { c.opts.Coordinator = &info }

// ActiveCoordinatorAddr returns HOST:PORT of the active coordinator's internal listener,
// where a standby forwards admin requests; ok false while none is elected or this node is
// the active one.
func (c *Control) ActiveCoordinatorAddr() (string, bool) {
	if c.Active() {
		return "", false
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	if !c.hasCoord || c.coordinator.Internal == "" {
		return "", false
	}
	return c.coordinator.Internal, true
}
