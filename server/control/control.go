// Package control is the control plane of a Strom cluster (docs/cluster.md). Each concern
// is a subpackage with its own state and its decisions as pure functions, as etcd's server/
// draws its lines:
//
//	membership   tablet-server registrations under leases; the live servers
//	election     the coordinator election, the coordinator epoch and fenced writes
//	bucketstate  the bucket states as this node follows them, and their etcd keys
//	assign       assignment and ISR: placement, leader election (failover), ISR changes,
//	             the coordinator's serialised state writes, the leader's etcd records
//	notify       NOTIFY_LEADER_AND_ISR and the hand-over of states to the local tablet server
//	shutdown     CONTROLLED_SHUTDOWN: moving a stopping server's leaderships
//	rebalance    server tags, the rebalance plan and its moves
//	strays       which copies a returning server deletes
//	peers        connections to the other servers' internal listeners
//
// Every node runs one Control, which wires them: one etcd watch (follower.go) feeds each
// concern the keys it owns, the listener topology the live servers and the active
// coordinator, and the local tablet server (if any) the states that concern it. A node with
// the coordinator role campaigns; while it is the active coordinator it writes through its
// fence, so a deposed coordinator's writes fail. Control's methods are the narrow face the
// rest of the server uses: the coordinator's Cluster and Membership, the tablet server's
// cluster.ReplicationControl, KV snapshots' leader fence.
package control

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/stromdb/strom/server/cluster"
	"github.com/stromdb/strom/server/control/assign"
	"github.com/stromdb/strom/server/control/bucketstate"
	"github.com/stromdb/strom/server/control/election"
	"github.com/stromdb/strom/server/control/membership"
	"github.com/stromdb/strom/server/control/notify"
	"github.com/stromdb/strom/server/control/peers"
	"github.com/stromdb/strom/server/control/rebalance"
	"github.com/stromdb/strom/server/control/shutdown"
	"github.com/stromdb/strom/server/control/strays"
	"github.com/stromdb/strom/server/internalconn"
	"github.com/stromdb/strom/server/meta"
)

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
	// DiskStallTimeout is log.flush.max-stall-time: a tablet server whose log fdatasync has
	// not returned for this long leaves the cluster until it does (disk_fence.go); 0: never.
	DiskStallTimeout time.Duration
	// LivenessProbeInterval is coordinator.liveness-probe.interval: how often the active
	// coordinator dials every tablet server to find dead ones (liveness.go); 0: never.
	LivenessProbeInterval time.Duration
	// HeartbeatInterval is coordinator.heartbeat.interval and HeartbeatFenceAfter
	// coordinator.heartbeat.fence-after: how often the active coordinator sends every tablet
	// server a heartbeat, and how long one may go unanswered before the server is fenced
	// (heartbeats.go); 0: no heartbeats.
	HeartbeatInterval   time.Duration
	HeartbeatFenceAfter time.Duration
	// HeartbeatStandbys is coordinator.heartbeat.standbys: standby coordinators beat the
	// active one and depose it when a majority of them find it silent (coord_watch.go).
	HeartbeatStandbys bool
	// FenceCheckInterval is tablet-server.fence-check.interval and FenceCheckGrace
	// tablet-server.fence-check.grace: how often this tablet server reads its fence from
	// etcd, and how long one read without a fence vouches for it (fence_check.go); grace 0:
	// no checks, and no coordinator fences this server by heartbeats.
	FenceCheckInterval time.Duration
	FenceCheckGrace    time.Duration
	// InternalDial opens this node's connections to other servers' internal listeners
	// (NOTIFY_LEADER_AND_ISR, CONTROLLED_SHUTDOWN) with its cluster credentials
	// (server/internalconn); nil dials in the clear.
	InternalDial internalconn.Func
}

// Control is one node's view of, and part in, the cluster's control plane.
type Control struct {
	opts Options
	cli  *clientv3.Client
	log  *slog.Logger

	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	abandon atomic.Bool
	lease   leaseClock  // of this tablet server's registration (lease_clock.go)
	disk    *diskFence  // this tablet server's disk stalls (disk_fence.go)
	fcheck  *fenceCheck // this tablet server's fence reads (fence_check.go); nil: none

	members    *membership.Members
	states     *bucketstate.Cache
	elector    *election.Elector
	pool       *peers.Pool
	notifier   *notify.Notifier
	writer     *assign.Writer
	reconciler *assign.Reconciler
	repl       *assign.Replication
	rebalancer *rebalance.Rebalancer
	shutdown   *shutdown.Shutdown
	follower   *follower
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
	c := &Control{opts: opts, cli: opts.Store.Client(), log: opts.Log,
		members: membership.NewMembers(), states: bucketstate.NewCache(), pool: peers.NewPoolDialing(opts.InternalDial)}
	c.elector = election.New(c.cli, c.log)
	c.notifier = &notify.Notifier{Self: opts.Registration.ID, Replicas: opts.Replicas, States: c.states, Members: c.members,
		Pool: c.pool, Epoch: c.elector.Epoch, Timeout: opts.NotifyTimeout, Log: c.log}
	if opts.Catalog != nil {
		c.notifier.Catalog = opts.Catalog
	}
	c.writer = &assign.Writer{Fence: c.elector, States: c.states}
	c.reconciler = &assign.Reconciler{Writer: c.writer, States: c.states, Live: c.members.IsLive, Notify: c.notifier, Log: c.log}
	c.repl = &assign.Replication{Store: opts.Store, States: c.states, Self: opts.Registration.ID}
	c.rebalancer = &rebalance.Rebalancer{Client: c.cli, Coordinator: c.elector, States: c.states, Live: c.members.IsLive,
		LiveIDs: c.members.IDs, Racks: c.members.Racks, Writer: c.writer, Notify: c.notifier, Log: c.log, MoveTimeout: opts.MoveTimeout}
	c.shutdown = &shutdown.Shutdown{Writer: c.writer, States: c.states, Live: c.members.IsLive, Notify: c.notifier,
		Coordinator: c.elector, Pool: c.pool, Log: c.log}
	c.follower = &follower{opts: &c.opts, cli: c.cli, log: c.log, members: c.members, states: c.states, elector: c.elector,
		rebalancer: c.rebalancer, notifier: c.notifier, reconciler: c.reconciler, catalogKick: make(chan struct{}, 1)}
	return c
}

// SetCatalog sets the local catalog (before Start: it is built after the Control, since
// its store is fenced by the Control).
func (c *Control) SetCatalog(cat Catalog) {
	c.opts.Catalog = cat
	c.notifier.Catalog = cat
}

// SetTablet makes this node a tablet server of the cluster (before Start).
func (c *Control) SetTablet(reg Registration, replicas cluster.ReplicaManager) {
	c.opts.Registration, c.opts.Replicas = reg, replicas
	c.notifier.Self, c.notifier.Replicas = reg.ID, replicas
	c.repl.Self = reg.ID
}

// SetCoordinator makes this node campaign for the coordinator election (before Start).
func (c *Control) SetCoordinator(info CoordinatorInfo) { c.opts.Coordinator = &info }

// Start loads the cluster state, registers the tablet server, and starts the watch, the
// lease keepalive and the campaign. It returns once this node's view is loaded, its tablet
// server registered and the states concerning it applied.
func (c *Control) Start(ctx context.Context) error {
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.reconciler.Life = c.ctx
	rev, kvs, err := c.follower.load(ctx)
	if err != nil {
		return err
	}
	c.follower.noteSeen(rev)
	if c.opts.Replicas != nil {
		c.disk = newDiskFence(c.opts.DiskStallTimeout, c.log)
		if c.opts.FenceCheckGrace > 0 && c.opts.FenceCheckInterval > 0 {
			c.fcheck = &fenceCheck{cli: c.cli, log: c.log, id: c.opts.Registration.ID,
				interval: c.opts.FenceCheckInterval, grace: c.opts.FenceCheckGrace}
			c.opts.Registration.FenceGraceMs = c.opts.FenceCheckGrace.Milliseconds()
		}
		reg := &membership.Registrar{Client: c.cli, Reg: c.opts.Registration, TTL: c.opts.TabletTTL, Log: c.log, Abandoned: c.abandon.Load,
			Renewed: c.lease.renewed, Sick: c.disk.isStalled, Kick: c.disk.kick, Left: c.lease.gaveUp,
			CaughtUp: c.follower.caughtUp, Fenced: c.fcheck.isFenced}
		lease, err := reg.Register(ctx)
		if err != nil {
			return err
		}
		if c.fcheck != nil {
			c.fcheck.check(ctx)
			c.wg.Add(1)
			go func() { defer c.wg.Done(); c.fcheck.run(c.ctx) }()
		}
		c.wg.Add(1)
		go func() { defer c.wg.Done(); reg.Keep(c.ctx, lease) }()
		c.wg.Add(1)
		go func() { defer c.wg.Done(); c.disk.run(c.ctx) }()
		states := c.states.Snapshot()
		c.notifier.ApplyMine(ctx, states, nil, nil)
		strays.Remove(ctx, c.opts.Replicas, c.opts.Registration.ID, states, strays.IDsOf(kvs), c.log)
	}
	c.wg.Add(2)
	go func() { defer c.wg.Done(); c.follower.run(c.ctx, rev) }()
	go func() { defer c.wg.Done(); c.follower.catalogLoop(c.ctx) }()
	if c.opts.Coordinator != nil {
		if c.opts.Replicas != nil {
			id := c.opts.Registration.ID
			c.opts.Coordinator.TabletServer = &id
		}
		c.wg.Add(3)
		go func() {
			defer c.wg.Done()
			c.elector.Campaign(c.ctx, *c.opts.Coordinator, c.opts.CoordinatorTTL, c.takeover, c.abandon.Load)
		}()
		go func() { defer c.wg.Done(); c.reconciler.Run(c.ctx, c.elector.Active) }()
		go func() { defer c.wg.Done(); c.rebalancer.Run(c.ctx) }()
		c.wg.Add(1)
		probe := &livenessProbe{cli: c.cli, log: c.log, interval: c.opts.LivenessProbeInterval, active: c.elector.Active,
			members: c.members, self: -1, coordinator: c.opts.Coordinator.Internal}
		if c.opts.Replicas != nil {
			probe.self = c.opts.Registration.ID
		}
		go func() { defer c.wg.Done(); probe.run(c.ctx) }()
		beats := &heartbeats{cli: c.cli, log: c.log, elector: c.elector, members: c.members, pool: peers.NewPool(), self: probe.self,
			interval: c.opts.HeartbeatInterval, fenceAfter: c.opts.HeartbeatFenceAfter,
			selfInternal: c.opts.Coordinator.Internal, standbys: c.opts.HeartbeatStandbys}
		c.wg.Add(1)
		go func() { defer c.wg.Done(); defer beats.pool.Close(); beats.run(c.ctx) }()
	}
	return nil
}

// takeover makes a newly active coordinator's catalog current and reconciles every bucket:
// leaders on dead servers are replaced, leaderless buckets with a live ISR member get one,
// and every replica is told the states; then a rebalance in progress continues.
func (c *Control) takeover(ctx context.Context) error {
	if c.opts.Catalog != nil {
		if err := c.opts.Catalog.Takeover(ctx); err != nil {
			return err
		}
	}
	if err := c.rebalancer.Load(ctx); err != nil {
		return err
	}
	c.reconciler.Reconcile(ctx, true)
	c.rebalancer.Kick()
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
	c.pool.Close()
}
