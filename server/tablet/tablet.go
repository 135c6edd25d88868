// Package tablet implements the tablet server role: it leads table buckets, stores their
// logs (and, for primary-key tables, their key-value state) and serves the data-plane APIs.
//
// The package is a set of services, each a type that owns its state and, where it serves
// APIs, its API table, and a thin Server that builds and wires them (docs/architecture.md,
// "The tablet server's services"):
//
//	replicaManager     replicas.go, tablet.go, replication.go, …  the buckets held, their storage and states
//	leadership         leader.go                                  HW, ISR, follower fetches, write admission
//	following          replication.go, fetcher.go                 follower setup and fetchers
//	fetchService       fetch_log.go, fetch_filter.go, projection.go  FETCH_LOG
//	produceService     produce_log.go, init_writer.go             PRODUCE_LOG, INIT_WRITER
//	kvService          put_kv.go, lookup.go, prefix_lookup.go, …  PUT_KV, LOOKUP, PREFIX_LOOKUP, LIMIT_SCAN
//	bucketInfoService  list_offsets.go, table_stats.go            LIST_OFFSETS, GET_TABLE_STATS
//	access             authz.go                                   authorization of every API
//
// Every API is one file named after it holding its handler and, in an init function, its
// entry in its service's table (apis.go). Services call each other through the narrow
// interfaces of services.go.
package tablet

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/cockroachdb/pebble"
	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/server/auth"
	"github.com/stromdb/strom/server/cluster"
	"github.com/stromdb/strom/server/config"
	"github.com/stromdb/strom/server/internalconn"
	"github.com/stromdb/strom/server/kvstore"
	"github.com/stromdb/strom/server/lakehost"
	"github.com/stromdb/strom/server/logstore"
)

// IDAllocator hands out cluster-unique ids (writer ids).
type IDAllocator interface {
	NextID(ctx context.Context, name string) (int64, error)
}

// IDRanges hands out ranges of a named counter's ids in the metadata store
// (meta.EtcdStore.AddID): AddID reserves prev+1 … prev+n and returns prev.
type IDRanges interface {
	AddID(ctx context.Context, name string, n int64) (prev int64, err error)
}

// Options configures a tablet server.
type Options struct {
	DataDir  string
	ServerID int32
	Catalog  cluster.Catalog
	IDs      IDAllocator
	// IDRanges gives the ids of auto-increment columns (sequences.go); without it, inserts
	// into tables with such a column fail.
	IDRanges IDRanges
	Config   config.Config
	Now      func() time.Time
	// Authorizer, when set, authorises every request that does not arrive on
	// InternalListener (see guard).
	Authorizer       *auth.Authorizer
	InternalListener string
	// InternalDial opens a follower's connection to its leader's internal listener with this
	// node's cluster credentials (server/internalconn); nil dials in the clear.
	InternalDial internalconn.Func
	// RetentionFloor, when set, gives per bucket the first offset log retention must keep
	// (the lake tiering's tiered offset); see logstore.Retention.SetRetentionFloor.
	RetentionFloor func(cluster.Bucket) int64
	// RemoteLog, when set, is the tiered part of the logs (remote.data.dir): FETCH_LOG below
	// the local log start answers with remote_log_fetch_info (remote_log.go).
	RemoteLog RemoteLog
	// Snapshots, when set, are the KV snapshots a primary-key follower behind its leader's log
	// start bootstraps from (snapshot_bootstrap.go).
	Snapshots SnapshotSource
	// Replication is the control plane of replicated buckets (ADJUST_ISR, lineages, the
	// internal addresses of leaders). Nil when every bucket runs standalone (the single node):
	// ApplyBucketStates then refuses states that name other servers.
	Replication cluster.ReplicationControl
	// MembershipValid, when set, reports whether this server's membership in the cluster is
	// certainly current (control.Control.MembershipValid: its registration lease cannot have
	// expired). While it is false a replicated leader answers reads and writes with
	// NOT_LEADER_OR_FOLLOWER: it may have been replaced without hearing of it, so its reads
	// could be stale and its acks=1 writes lost at its truncation.
	MembershipValid func() bool
	// MinInSyncReplicas and ReplicaMaxLag override log.replica.min-in-sync-replicas-number
	// and log.replica.max-lag-time of Config when non-zero.
	MinInSyncReplicas int
	ReplicaMaxLag     time.Duration
}

// Server is a tablet server: the composition of its services (docs/architecture.md, "The
// tablet server's services"). It builds them and wires each to the narrow interfaces of the
// others it calls (services.go), installs their APIs (apis.go), runs the periodic
// maintenance, and answers for the buckets to the rest of the node (cluster.ReplicaManager,
// cluster.BucketStateApplier, the KV snapshots, tiering, metrics and the Kafka listener).
type Server struct {
	opts  Options
	lapse *membershipLapse // ends acks=all waits when the membership lapses (membership_lapse.go)
	// handover refuses client requests to this server's leaderships once a controlled
	// shutdown starts handing them over (handover.go)
	handover *handover

	buckets   *replicaManager // the buckets held, their storage and states (replicas.go)
	leaders   *leadership     // the leader side of replication (leader.go)
	followers *following      // the follower side of replication (replication.go, fetcher.go)

	access      *access            // authorization of every API (authz.go)
	fetch       *fetchService      // FETCH_LOG (fetch_log.go)
	produce     *produceService    // PRODUCE_LOG, INIT_WRITER (produce_log.go)
	primaryKeys *kvService         // PUT_KV, LOOKUP, PREFIX_LOOKUP, LIMIT_SCAN (put_kv.go)
	bucketInfo  *bucketInfoService // LIST_OFFSETS, GET_TABLE_STATS (list_offsets.go)

	stopBg context.CancelFunc
	bgDone chan struct{}
}

// Replica is one bucket led by this server.
type Replica struct {
	Bucket cluster.Bucket
	Table  *cluster.TableInfo
	Log    *logstore.Log
	// KV is the primary-key state of the bucket (nil for log tables); Log is its changelog.
	KV *kvstore.Tablet
	// Partition is the bucket's partition (nil for non-partitioned tables or when unknown).
	Partition *cluster.PartitionInfo

	// repl is the replication state of a bucket replicated to other servers; nil for a
	// standalone bucket (replicas exactly [this server]), whose hot path never looks further.
	// Shared by the copies UpdateTable makes.
	repl *replState
}

// New opens a tablet server over dataDir. Buckets are opened by BecomeLeader.
func New(opts Options, log *slog.Logger) (*Server, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if err := os.MkdirAll(opts.DataDir, 0o755); err != nil {
		return nil, fmt.Errorf("create tablet data directory: %w", err)
	}
	kvOpts := kvstore.Options{Logger: log, CacheBytes: opts.Config.KvBlockCacheSize, MemTableBytes: opts.Config.KvWriteBufferSize,
		RowCacheBytes: rowCacheBytes(opts.Config.KvRowCacheSize)}
	if opts.IDRanges != nil {
		kvOpts.Sequences = sequences{opts.IDRanges}
	}
	// The journal hands what an earlier process left to the bucket directories before any
	// log opens (server/journal); it is always opened when a previous run may have used it.
	jnl, err := openJournal(opts, log)
	if err != nil {
		return nil, err
	}
	kv, err := kvstore.Open(filepath.Join(opts.DataDir, "kv"), kvOpts)
	if err != nil {
		return nil, errors.Join(err, closeJournal(jnl))
	}
	minISR, maxLag, err := replicaOptions(opts)
	if err != nil {
		return nil, errors.Join(err, kv.Close())
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{opts: opts, stopBg: cancel, bgDone: make(chan struct{})}
	tiered := tieredLog{opts: tieredLogOptions{RemoteLog: opts.RemoteLog, Catalog: opts.Catalog}}
	s.lapse = &membershipLapse{}
	s.handover = &handover{}
	member := membership{opts: membershipOptions{ServerID: opts.ServerID, MembershipValid: opts.MembershipValid}, lapse: s.lapse, handover: s.handover}
	limit := responseLimit{opts: responseLimitOptions{Config: opts.Config}}

	s.buckets = &replicaManager{opts: replicaManagerOptions{DataDir: opts.DataDir, ServerID: opts.ServerID, Catalog: opts.Catalog,
		Config: opts.Config, Now: opts.Now, RetentionFloor: opts.RetentionFloor, Snapshots: opts.Snapshots, Replication: opts.Replication},
		log: log, kv: kv, journal: jnl, replicas: map[cluster.Bucket]*Replica{}, standalone: map[cluster.Bucket]cluster.BucketState{}}
	s.leaders = &leadership{opts: leadershipOptions{ServerID: opts.ServerID, Now: opts.Now, Replication: opts.Replication,
		InternalListener: opts.InternalListener}, log: log, minISR: minISR, maxLag: maxLag,
		membership: member, responseLimit: limit, replicaHolder: s.buckets}
	s.followers = &following{opts: followingOptions{ServerID: opts.ServerID, Replication: opts.Replication, InternalDial: opts.InternalDial, MaxLag: maxLag},
		log: log, kv: kv, fetchers: map[int32]*fetcher{}, lineages: newLineageWaiter(opts.Replication, log),
		leadingControl: s.leaders, lagRecovery: s.buckets}
	s.leaders.followingControl = s.followers
	s.buckets.bucketRoles = roles{s.leaders, s.followers}

	s.access = &access{opts: accessOptions{Authorizer: opts.Authorizer, InternalListener: opts.InternalListener,
		Catalog: opts.Catalog, ServerID: opts.ServerID}}
	s.fetch = &fetchService{opts: fetchOptions{Catalog: opts.Catalog}, log: log, responseLimit: limit,
		tieredLog: tiered, replicaLookup: s.buckets, followerFetches: s.leaders}
	s.produce = &produceService{opts: produceOptions{Now: opts.Now, Catalog: opts.Catalog, IDs: opts.IDs},
		replicaLookup: s.buckets, writeAdmission: s.leaders, statsRecorder: s.fetch, lapse: s.lapse}
	s.primaryKeys = &kvService{opts: kvOptions{Now: opts.Now, ServerID: opts.ServerID}, membership: member,
		replicaLookup: s.buckets, writeAdmission: s.leaders}
	s.bucketInfo = &bucketInfoService{opts: bucketInfoOptions{Now: opts.Now}, tieredLog: tiered, replicaLookup: s.buckets}
	go s.background(ctx)
	return s, nil
}

func bucketDir(root string, b cluster.Bucket) string {
	if b.PartitionID == cluster.NoPartition {
		return filepath.Join(root, fmt.Sprintf("table-%d", b.TableID), fmt.Sprintf("bucket-%d", b.Bucket))
	}
	return filepath.Join(root, fmt.Sprintf("table-%d", b.TableID), fmt.Sprintf("partition-%d", b.PartitionID), fmt.Sprintf("bucket-%d", b.Bucket))
}

func tableDir(root string, tableID, partitionID int64) string {
	if partitionID == cluster.NoPartition {
		return filepath.Join(root, fmt.Sprintf("table-%d", tableID))
	}
	return filepath.Join(root, fmt.Sprintf("table-%d", tableID), fmt.Sprintf("partition-%d", partitionID))
}

func (s *replicaManager) logOptions(t *cluster.TableInfo) logstore.Options {
	o := logstore.Options{
		SegmentBytes:     s.opts.Config.LogSegmentBytes,
		WriterExpiration: s.opts.Config.WriterIDExpiration,
		TTL:              t.Descriptor.Properties.LogTTL(),
		Logger:           s.log,
		Now:              s.opts.Now,
		OnOffline:        s.repairs.kick,
	}
	if s.opts.Config.LogFlushInterval > 0 {
		o.FlushPolicy = logstore.FlushInterval(s.opts.Config.LogFlushInterval)
	} else if s.journal != nil && s.opts.Config.LogJournal {
		o.Journal, o.JournalMaxBytes, o.JournalMinInFlight = s.journal, s.opts.Config.LogJournalMaxBytes, s.opts.Config.LogJournalMinInFlight
	}
	return o
}

// BecomeLeader implements cluster.ReplicaManager for the single node: it applies, for every
// bucket of the table (or partition), the state "replicas [this server], leader this server",
// which opens the bucket standalone. Its epochs are -1, below any state the control plane
// stores, so a real state for the bucket always supersedes it. A bucket already held is left
// as it is.
func (s *replicaManager) BecomeLeader(ctx context.Context, t *cluster.TableInfo, p *cluster.PartitionInfo) error {
	pid := cluster.NoPartition
	if p != nil {
		pid = p.ID
	}
	self := []int32{s.opts.ServerID}
	updates := make([]cluster.BucketUpdate, 0, t.NumBuckets())
	for b := int32(0); b < t.NumBuckets(); b++ {
		updates = append(updates, cluster.BucketUpdate{Table: t, Partition: p,
			Bucket: cluster.Bucket{TableID: t.ID, PartitionID: pid, Bucket: b},
			State:  cluster.BucketState{Replicas: self, Leader: s.opts.ServerID, ISR: self, LeaderEpoch: -1, BucketEpoch: -1}})
	}
	return s.ApplyBucketStates(ctx, updates)
}

// openReplica opens (creating if needed) the storage of bucket key. A replicated bucket's log
// runs with an external high watermark (docs/cluster.md); it serves nothing until it is made
// leader or follower.
func (s *replicaManager) openReplica(ctx context.Context, key cluster.Bucket, t *cluster.TableInfo, p *cluster.PartitionInfo, replicated bool, initialOffset int64) (*Replica, error) {
	opts := s.logOptions(t)
	opts.ExternalHighWatermark = replicated
	opts.InitialOffset = initialOffset
	l, err := logstore.Open(ctx, bucketDir(s.opts.DataDir, key), opts)
	if err != nil {
		return nil, fmt.Errorf("open log of %s: %w", key, err)
	}
	if floor := s.opts.RetentionFloor; floor != nil {
		l.Retention().SetRetentionFloor(func() int64 { return floor(key) })
	}
	r := &Replica{Bucket: key, Table: t, Log: l, Partition: p}
	if replicated {
		r.repl = newReplState()
	}
	if t.HasPrimaryKey() {
		if r.KV, err = s.openKV(ctx, key, t, l); err != nil {
			return nil, errors.Join(fmt.Errorf("open kv state of %s: %w", key, err), l.Close())
		}
	}
	s.mu.Lock()
	s.replicas[key] = r
	s.mu.Unlock()
	return r, nil
}

// StopReplicas implements cluster.ReplicaManager: it closes and deletes the buckets of a
// dropped table or partition.
func (s *replicaManager) StopReplicas(ctx context.Context, tableID, partitionID int64) error {
	s.leadMu.Lock()
	defer s.leadMu.Unlock()
	s.mu.Lock()
	var victims []*Replica
	for k, r := range s.replicas {
		if k.TableID == tableID && (partitionID == cluster.NoPartition || k.PartitionID == partitionID) {
			victims = append(victims, r)
			delete(s.replicas, k)
		}
	}
	s.mu.Unlock()
	for k := range s.standalone {
		if k.TableID == tableID && (partitionID == cluster.NoPartition || k.PartitionID == partitionID) {
			delete(s.standalone, k)
			s.standaloneEpochs.Delete(k)
		}
	}
	var errs []error
	for _, r := range victims {
		s.stopReplication(r)
		errs = append(errs, r.Log.Close())
		if r.KV != nil {
			errs = append(errs, r.KV.Drop())
		}
	}
	errs = append(errs, os.RemoveAll(tableDir(s.opts.DataDir, tableID, partitionID)))
	return errors.Join(errs...)
}

// replica returns the bucket's replica for a client's data request. As Fluss's
// getReplicaOrException: NOT_LEADER_OR_FOLLOWER when this server holds the bucket but does
// not lead it, or does not hold a bucket that exists in the catalog (its leader is elsewhere);
// UNKNOWN_TABLE_OR_BUCKET for a bucket the catalog does not know. Both make clients refresh
// their metadata.
func (s *replicaManager) replica(b cluster.Bucket) (*Replica, error) {
	s.mu.RLock()
	r, ok := s.replicas[b]
	s.mu.RUnlock()
	if !ok {
		if s.bucketExists(b) {
			return nil, ferr.New(ferr.NotLeaderOrFollower, "tablet server %d is not leader or follower for %s", s.opts.ServerID, b)
		}
		return nil, ferr.New(ferr.UnknownTableOrBucketException, "Unknown table or bucket: %s", b)
	}
	if r.repl != nil && !r.repl.leading.Load() {
		return nil, ferr.New(ferr.NotLeaderOrFollower, "Leader not local for bucket %s on tablet server %d", b, s.opts.ServerID)
	}
	return r, nil
}

// bucketExists reports whether the catalog has bucket b (its table, its partition, and a
// bucket number below the table's bucket count).
func (s *replicaManager) bucketExists(b cluster.Bucket) bool {
	t, ok := s.opts.Catalog.TableByID(b.TableID)
	if !ok || b.Bucket < 0 || b.Bucket >= t.NumBuckets() {
		return false
	}
	if b.PartitionID == cluster.NoPartition {
		return !t.Partitioned()
	}
	p, ok := s.opts.Catalog.PartitionByID(b.PartitionID)
	return ok && p.TableID == b.TableID
}

// hosted returns the bucket's replica whatever its role, nil if this server holds none.
func (s *replicaManager) hosted(b cluster.Bucket) *Replica {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.replicas[b]
}

// hwCheckpointInterval is how often replicated logs checkpoint their high watermark.
const hwCheckpointInterval = 5 * time.Second

// background runs periodic maintenance: log retention, ISR shrink, HW checkpoints.
func (s *Server) background(ctx context.Context) {
	defer close(s.bgDone)
	scrubDone := make(chan struct{})
	go func() { defer close(scrubDone); s.buckets.runScrubber(ctx) }()
	defer func() { <-scrubDone }()
	repairsDone := make(chan struct{})
	go func() { defer close(repairsDone); s.buckets.runRepairs(ctx) }()
	defer func() { <-repairsDone }()
	kvMediaDone := make(chan struct{})
	go func() { defer close(kvMediaDone); s.buckets.runKVMediaWatch(ctx) }()
	defer func() { <-kvMediaDone }()
	every := s.opts.Config.LogRetentionCheck
	if every <= 0 {
		every = 5 * time.Minute
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	// ISR shrink runs every half lag time (as Kafka's isr-expiration task); the HW
	// checkpoint of replicated logs every 5 s (Kafka's replica.high.watermark.checkpoint.interval.ms).
	isrTick := time.NewTicker(max(s.leaders.maxLag/2, time.Millisecond))
	defer isrTick.Stop()
	hwTick := time.NewTicker(hwCheckpointInterval)
	defer hwTick.Stop()
	s.lapse.check(s.opts.MembershipValid)
	lapseTick := time.NewTicker(membershipCheckInterval)
	defer lapseTick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-lapseTick.C:
			s.lapse.check(s.opts.MembershipValid)
		case <-isrTick.C:
			if s.opts.Replication != nil {
				s.leaders.shrinkISRs()
			}
		case <-hwTick.C:
			s.buckets.checkpointHighWatermarks()
		case <-tick.C:
			s.buckets.enforceRetention()
		}
	}
}

// Close stops background work and closes every bucket.
func (s *Server) Close() error {
	s.stopBg()
	<-s.bgDone
	return s.buckets.close()
}

func bucketOf(tableID int64, partitionID *int64, bucket int32) cluster.Bucket {
	b := cluster.Bucket{TableID: tableID, PartitionID: cluster.NoPartition, Bucket: bucket}
	if partitionID != nil {
		b.PartitionID = *partitionID
	}
	return b
}

// setBucketError fills a per-bucket error_code/error_message pair from err.
func setBucketError(code **int32, msg **string, err error) {
	*code = proto.Int32(int32(ferr.CodeOf(err)))
	if m := ferr.MessageOf(err); m != "" {
		*msg = proto.String(wire.Sanitize(m))
	}
}

// rowCacheBytes maps kv.row-cache-size to kvstore.Options.RowCacheBytes, where 0 means the
// default: the option's 0 turns the row cache off.
func rowCacheBytes(n int64) int64 {
	if n == 0 {
		return -1
	}
	return n
}

// BecomeLeader implements cluster.ReplicaManager for the single node
// (replicaManager.BecomeLeader).
func (s *Server) BecomeLeader(ctx context.Context, t *cluster.TableInfo, p *cluster.PartitionInfo) error {
	return s.buckets.BecomeLeader(ctx, t, p)
}

// StopReplicas implements cluster.ReplicaManager: it closes and deletes the buckets of a
// dropped table or partition.
func (s *Server) StopReplicas(ctx context.Context, tableID, partitionID int64) error {
	return s.buckets.StopReplicas(ctx, tableID, partitionID)
}

// ApplyBucketStates implements cluster.BucketStateApplier (replicaManager.ApplyBucketStates).
func (s *Server) ApplyBucketStates(ctx context.Context, updates []cluster.BucketUpdate) error {
	return s.buckets.ApplyBucketStates(ctx, updates)
}

// UpdateTable applies an altered table to every open bucket of it
// (replicaManager.UpdateTable).
func (s *Server) UpdateTable(ctx context.Context, t *cluster.TableInfo) error {
	return s.buckets.UpdateTable(ctx, t)
}

// RemoveStrayReplicas deletes the copies of buckets this server keeps on disk but no longer
// holds (replicaManager.RemoveStrayReplicas).
func (s *Server) RemoveStrayReplicas(ctx context.Context, stray func(cluster.Bucket) bool) ([]cluster.Bucket, error) {
	return s.buckets.RemoveStrayReplicas(ctx, stray)
}

// Replicas returns the buckets this server holds (leads or follows), ordered by table,
// partition and bucket.
func (s *Server) Replicas() []*Replica { return s.buckets.Replicas() }

// Leads reports whether the server leads bucket b (GET_CLUSTER_HEALTH).
func (s *Server) Leads(b cluster.Bucket) bool { return s.buckets.Leads(b) }

// LeaderEpoch returns the leader epoch at which this server leads b; leading is false when it
// does not lead b.
func (s *Server) LeaderEpoch(b cluster.Bucket) (epoch int32, leading bool) {
	return s.buckets.LeaderEpoch(b)
}

// ReplicaNeedsSnapshotBootstrap reports, on b's leader, whether a replica of b whose log ends
// at replicaLogEnd needs a snapshot bootstrap to follow this leader.
func (s *Server) ReplicaNeedsSnapshotBootstrap(b cluster.Bucket, replicaLogEnd int64) (bool, error) {
	return s.buckets.ReplicaNeedsSnapshotBootstrap(b, replicaLogEnd)
}

// PebbleMetrics returns the metrics of the Pebble instance holding every primary-key
// bucket's state.
func (s *Server) PebbleMetrics() *pebble.Metrics { return s.buckets.PebbleMetrics() }

// LakeBuckets implements lakehost.Source (replicaManager.LakeBuckets).
func (s *Server) LakeBuckets() []lakehost.Bucket { return s.buckets.LakeBuckets() }
