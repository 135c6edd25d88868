// Package server assembles a single Strom node: the metadata store, the coordinator and the
// tablet server, each role on its own listeners.
package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/stromdb/strom/internal/clustertls"
	"github.com/stromdb/strom/internal/fdbudget"
	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/internal/options"
	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/server/auth"
	"github.com/stromdb/strom/server/cluster"
	"github.com/stromdb/strom/server/config"
	"github.com/stromdb/strom/server/control"
	"github.com/stromdb/strom/server/coordinator"
	"github.com/stromdb/strom/server/internalconn"
	"github.com/stromdb/strom/server/kafka"
	"github.com/stromdb/strom/server/kvsnap"
	"github.com/stromdb/strom/server/lakeconf"
	"github.com/stromdb/strom/server/lakehost"
	"github.com/stromdb/strom/server/meta"
	"github.com/stromdb/strom/server/metrics"
	"github.com/stromdb/strom/server/remote"
	"github.com/stromdb/strom/server/remotelog"
	"github.com/stromdb/strom/server/tablet"
)

// Node is a running single-node Strom server.
type Node struct {
	cfg  config.Config
	log  *slog.Logger
	lock *os.File

	store *meta.EtcdStore
	// peer is this process's cluster identity on the internal listener (cluster.secret-file);
	// nil on the single node and in a cluster run with cluster.allow-insecure.
	peer *clustertls.Peer
	// internalTLS maps a role ("coordinator", "tablet-server") to the PeerTLS settings of
	// its internal listener (set by bindListeners; empty without peer).
	internalTLS map[string]internalListenerTLS
	control     *control.Control // nil on the single node
	coordinator *coordinator.Coordinator
	tablet      *tablet.Server
	tierer      *lakehost.Host // the tiering process; nil without datalake.format
	kvSnapshots *kvsnap.Manager
	remote      *remote.Storage    // remote.data.dir: KV snapshots and tiered logs
	remoteLog   *remotelog.Manager // log tiering; nil without remote.data.dir

	listeners   []boundListener
	limits      *wire.Limits     // shared by every listener; see nodeLimits
	fds         fdbudget.Budget  // the file-descriptor budget (applyFDBudget)
	metrics     *metrics.Metrics // nil unless the HTTP listener is enabled
	http        *metrics.Server
	httpMux     *http.ServeMux // the HTTP listener's routes; HandleHTTP adds to it
	httpMu      sync.Mutex
	httpClosers []func() // guarded by httpMu; run by Close before the listener stops

	// The client for other nodes' HTTP listeners (replica_status.go), made once.
	peerOnce   sync.Once
	peerClient *http.Client
	peerScheme string
	peerErr    error

	storeFailed <-chan struct{}
	wg          sync.WaitGroup
	closeOnce   sync.Once
	closeErr    error
	cancel      context.CancelFunc
	serveErr    chan error
}

type boundListener struct {
	role string
	cfg  wire.ListenerConfig
	ln   net.Listener
	svc  *wire.Service
	// kafka serves the listener instead of svc (a Kafka listener of the tablet server).
	kafka *kafka.Server
}

// ErrDataDirLocked is returned when another server owns the data directory.
var ErrDataDirLocked = errors.New("data directory is in use by another strom server")

// Start opens the data directory, starts every role and begins accepting connections. The
// node serves until ctx is cancelled or Close is called. Each step is a method below, in the
// order it runs; a failed step closes what the earlier ones opened.
func Start(ctx context.Context, cfg config.Config, log *slog.Logger) (*Node, error) {
	n, err := prepare(cfg, log)
	if err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			n.Close()
		}
	}()
	st := &startState{topo: cluster.NewTopology()}
	if err := n.openStorage(ctx, st); err != nil {
		return nil, err
	}
	if err := n.openCatalog(ctx, st); err != nil {
		return nil, err
	}
	if err := n.openTablet(ctx, st); err != nil {
		return nil, err
	}
	n.openMetrics()
	if err := n.bindListeners(st); err != nil {
		return nil, err
	}
	if err := n.publish(ctx, st); err != nil {
		return nil, err
	}
	n.serve(ctx)
	ok = true
	return n, nil
}

// startState carries what one step of Start hands to the later ones.
type startState struct {
	topo             *cluster.Topology
	lakeCfg          lakeconf.Config
	kafkaCfg         kafka.Config
	authz            *auth.Authorizer
	internalListener string
	catalogStore     meta.Store // the store the coordinator writes through (fenced in a cluster)
	coordEPs         []cluster.Endpoint
	tabletEPs        []cluster.Endpoint
}

// prepare checks the configuration and takes the data directory's lock.
func prepare(cfg config.Config, log *slog.Logger) (*Node, error) {
	if err := cfg.Finish(); err != nil {
		return nil, err
	}
	for _, w := range cfg.Warnings() { // unknown and unserved options (internal/options)
		log.Warn(w)
	}
	n := &Node{cfg: cfg, log: log, serveErr: make(chan error, 8)}
	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		return nil, fmt.Errorf("create data directory: %w", err)
	}
	lock, err := lockDir(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	n.lock = lock
	if err := n.applyFDBudget(); err != nil {
		n.Close()
		return nil, err
	}
	return n, nil
}

// openStorage starts the lake tiering process and opens the metadata store and remote storage.
func (n *Node) openStorage(ctx context.Context, st *startState) error {
	cfg, log := n.cfg, n.log
	var err error
	if st.lakeCfg, err = lakeconf.ConfigFrom(cfg.Raw, cfg.DataDir); err != nil {
		return err
	}
	if st.lakeCfg.Enabled() {
		// Started first: the tiering process opens the lake catalog while this node opens
		// its stores; openTablet joins it.
		if n.tierer, err = lakehost.New(lakehost.Options{Config: st.lakeCfg, Binary: cfg.Raw[options.TieringBinary.Key],
			Logger: log.With("role", "lake")}); err != nil {
			return fmt.Errorf("open data lake: %w", err)
		}
	}
	if n.store, n.peer, err = openStore(ctx, cfg, log); err != nil {
		return err
	}
	if err = meta.CheckFormat(ctx, n.store); err != nil {
		return err
	}
	if n.remote, err = openRemote(ctx, cfg, log.With("role", "remote")); err != nil {
		return err
	}
	return nil
}

// openCatalog opens the authorizer, the control plane (in a cluster) and the coordinator.
func (n *Node) openCatalog(ctx context.Context, st *startState) error {
	cfg, log := n.cfg, n.log
	var err error
	if st.kafkaCfg, err = kafka.ConfigFrom(cfg.Raw); err != nil { // checked by cfg.Finish
		return err
	}
	if st.authz, st.internalListener, err = openAuthorizer(ctx, cfg, n.store); err != nil {
		return err
	}
	// In a cluster the coordinator writes through a store fenced by its election (a standby's
	// or a deposed coordinator's writes fail), and the control plane places the buckets.
	st.catalogStore = n.store
	var clusterCtl coordinator.Cluster
	if cfg.Clustered() {
		stallTimeout, err := options.LogFlushMaxStallTime.Get(cfg.Raw)
		if err != nil {
			return err
		}
		probeInterval, err := options.LivenessProbeInterval.Get(cfg.Raw)
		if err != nil {
			return err
		}
		ctlOpts := control.Options{
			Store: n.store, Topology: st.topo, Log: log.With("role", "control"),
			TabletTTL: cfg.Cluster.TabletServerLeaseTTL, CoordinatorTTL: cfg.Cluster.CoordinatorLeaseTTL,
			DiskStallTimeout: stallTimeout, LivenessProbeInterval: probeInterval,
			InternalDial: internalconn.New(n.peer).Func(),
		}
		if err := control.ReadHeartbeatOptions(cfg.Raw, &ctlOpts); err != nil {
			return err
		}
		n.control = control.New(ctlOpts)
		st.catalogStore = meta.NewFencedStore(n.store, n.control.Fence)
		clusterCtl = n.control
	}
	producerTTL, err := options.ProducerOffsetsTTL.Get(cfg.Raw)
	if err != nil {
		return err
	}
	lakeTables, err := lakeTablesEnabled(cfg, st.lakeCfg)
	if err != nil {
		return err
	}
	allowLog, err := options.AllowCreateLogTables.Get(cfg.Raw)
	if err != nil {
		return err
	}
	allowKv, err := options.AllowCreateKvTables.Get(cfg.Raw)
	if err != nil {
		return err
	}
	n.coordinator, err = coordinator.Open(ctx, st.catalogStore, st.topo, coordinator.Options{Defaults: metadata.ClusterDefaults{
		BucketNumber: cfg.DefaultBucketNumber, ReplicationFactor: cfg.DefaultReplicationFactor, MaxBucketNum: cfg.MaxBucketNum,
		DataLakeFormat: st.lakeCfg.Format, DataLakeEnabled: lakeTables,
		DisallowLogTables: !allowLog, DisallowKvTables: !allowKv,
	}, MaxPartitionNum: cfg.MaxPartitionNum, AutoPartitionInterval: cfg.AutoPartitionInterval,
		Authorizer: st.authz, InternalListener: st.internalListener, InternalDial: internalconn.New(n.peer).Func(), StaticConfigs: cfg.Raw,
		ProducerOffsetsTTL: producerTTL, Cluster: clusterCtl, LakeTableOptions: st.lakeCfg.ReaderTableOptions(),
		Remote: n.remote}, log.With("role", "coordinator"))
	if err != nil {
		return fmt.Errorf("open catalog: %w", err)
	}
	return nil
}

// openTablet opens the KV snapshots, log tiering and the tablet server, and starts the
// coordinator on it.
func (n *Node) openTablet(ctx context.Context, st *startState) error {
	cfg, log := n.cfg, n.log
	tabletOpts := tablet.Options{
		DataDir: filepath.Join(cfg.DataDir, "tablet"), ServerID: cfg.TabletServerID, Catalog: n.coordinator, IDs: n.store, IDRanges: n.store,
		Config: cfg, Authorizer: st.authz, InternalListener: st.internalListener, InternalDial: internalconn.New(n.peer).Func(),
		// Parsed once, by config through the registry (internal/options); the tablet server
		// reads its raw keys only when these are zero.
		MinInSyncReplicas: int(cfg.Cluster.MinInSyncReplicas), ReplicaMaxLag: cfg.Cluster.ReplicaMaxLagTime,
	}
	if n.control != nil {
		tabletOpts.Replication = n.control
		tabletOpts.MembershipValid = n.control.MembershipValid
	}
	if n.tierer != nil {
		if err := n.tierer.WaitReady(ctx); err != nil {
			return fmt.Errorf("open data lake: %w", err)
		}
		tabletOpts.RetentionFloor = n.tierer.Floor
	}
	var err error
	if n.kvSnapshots, err = openKvSnapshots(ctx, cfg, n.remote, n.store, st.catalogStore, n.control, n.coordinator, func() *tablet.Server { return n.tablet }, log.With("role", "kv-snapshots")); err != nil {
		return err
	}
	tabletOpts.RetentionFloor = retentionFloor(n.kvSnapshots, tabletOpts.RetentionFloor)
	tabletOpts.Snapshots = n.kvSnapshots
	var lakeFloor func(cluster.Bucket) int64
	if n.tierer != nil {
		lakeFloor = n.tierer.Floor
	}
	if n.remoteLog, err = openRemoteLog(cfg, n.remote, n.store, n.control, n.coordinator, func() *tablet.Server { return n.tablet }, lakeFloor, log.With("role", "remote-log")); err != nil {
		return err
	}
	if n.remoteLog != nil {
		tabletOpts.RemoteLog = n.remoteLog
	}
	if n.tablet, err = tablet.New(tabletOpts, log.With("role", "tablet")); err != nil {
		return err
	}
	if err := n.coordinator.Start(ctx, n.tablet); err != nil {
		return err
	}
	n.coordinator.SetKvSnapshots(n.kvSnapshots)
	if n.tierer != nil {
		n.coordinator.SetLakeSnapshots(n.tierer)
		n.tierer.Start(n.tablet, n.coordinator)
	}
	return nil
}

// openMetrics builds the metrics registry when the HTTP listener is enabled.
func (n *Node) openMetrics() {
	cfg := n.cfg
	if !cfg.HTTPEnabled() {
		return
	}
	src := metrics.Sources{Host: cfg.CoordinatorListeners[0].Host, ServerID: cfg.TabletServerID, Catalog: n.coordinator, Tablet: n.tablet, Meta: n.store}
	if n.control != nil { // not a nil *Control in the interface
		src.Cluster = n.control
	}
	n.metrics = metrics.New(src)
	labels := prometheus.Labels{"host": cfg.CoordinatorListeners[0].Host, "server_id": strconv.Itoa(int(cfg.TabletServerID))}
	if n.tierer != nil {
		// The lake tiering's metrics, with Fluss's server variables as on every fluss_* metric.
		prometheus.WrapRegistererWith(labels, n.metrics.Registry).MustRegister(n.tierer)
	}
	if n.remoteLog != nil {
		prometheus.WrapRegistererWith(labels, n.metrics.Registry).MustRegister(n.remoteLog)
	}
	prometheus.WrapRegistererWith(labels, n.metrics.Registry).MustRegister(fdCollector{n})
}

// bindListeners registers the roles' APIs and binds every listener of the node's roles.
func (n *Node) bindListeners(st *startState) error {
	cfg := n.cfg
	n.internalTLS = internalTLSOf(n.peer, st.internalListener, st.kafkaCfg.IsListener, map[string][]config.Listener{
		"coordinator": cfg.CoordinatorListeners, "tablet-server": cfg.TabletListeners})
	coordSvc := wire.NewService(1)
	n.coordinator.RegisterReadOnly(coordSvc)
	n.coordinator.RegisterAdmin(coordSvc)
	if n.control != nil {
		n.control.RegisterCoordinator(coordSvc, st.internalListener)
	}
	tabletSvc := wire.NewService(2)
	n.coordinator.RegisterReadOnly(tabletSvc)
	n.tablet.Register(tabletSvc)
	if n.control != nil {
		n.control.RegisterTablet(tabletSvc, st.internalListener)
	}
	if cfg.HasRole(config.RoleCoordinator) {
		for _, l := range cfg.CoordinatorListeners {
			if st.kafkaCfg.IsListener(l.Name) {
				continue // Kafka is served by tablet servers only
			}
			ep, err := n.listen("coordinator", l, coordSvc)
			if err != nil {
				return err
			}
			st.coordEPs = append(st.coordEPs, ep)
		}
	}
	if cfg.HasRole(config.RoleTabletServer) {
		var ks *kafka.Server
		for _, l := range cfg.TabletListeners {
			var ep cluster.Endpoint
			var err error
			if st.kafkaCfg.IsListener(l.Name) {
				if ks == nil {
					ks = n.kafkaServer(st.kafkaCfg, st.topo, st.authz)
				}
				ep, err = n.listenKafka(l, ks)
			} else {
				ep, err = n.listen("tablet-server", l, tabletSvc)
			}
			if err != nil {
				return err
			}
			st.tabletEPs = append(st.tabletEPs, ep)
		}
	}
	return nil
}

// publish starts the HTTP listener and makes the node's endpoints known (the topology on the
// single node, the cluster's registration otherwise).
func (n *Node) publish(ctx context.Context, st *startState) error {
	cfg := n.cfg
	// The HTTP listener is bound before the node joins the cluster, so that its address is
	// in the node's registration (the other nodes' gateways read replica progress there).
	if n.metrics != nil {
		if err := n.serveHTTP(); err != nil {
			return err
		}
	}
	if n.control == nil {
		for _, ep := range st.coordEPs {
			st.topo.SetCoordinator(ep)
		}
		for _, ep := range st.tabletEPs {
			st.topo.SetTabletServer(cfg.TabletServerID, ep)
		}
		st.topo.SetRack(cfg.TabletServerID, cfg.TabletServerRack)
	} else if err := n.startControl(ctx, st.internalListener, st.coordEPs, st.tabletEPs); err != nil {
		return err
	}
	return nil
}

// serve starts accepting on every listener and the background loops, and ties the node's
// life to ctx and to the metadata store.
func (n *Node) serve(ctx context.Context) {
	log := n.log
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	n.cancel = cancel
	for _, bl := range n.listeners {
		n.wg.Add(1)
		go func() {
			defer n.wg.Done()
			if bl.kafka != nil {
				if err := bl.kafka.Serve(sctx, bl.ln, bl.cfg.Name); err != nil {
					n.serveErr <- err
				}
				return
			}
			if err := wire.Serve(sctx, bl.ln, bl.svc, bl.cfg, log.With("role", bl.role)); err != nil {
				n.serveErr <- err
			}
		}()
	}
	n.wg.Add(1)
	go func() { defer n.wg.Done(); n.kvSnapshots.Run(sctx) }()
	if n.remoteLog != nil {
		n.wg.Add(1)
		go func() { defer n.wg.Done(); n.remoteLog.Run(sctx) }()
	}
	n.wg.Add(1)
	go func() { defer n.wg.Done(); n.watchFDs(sctx) }()
	context.AfterFunc(ctx, func() { n.Close() })
	store := n.store
	n.storeFailed = store.Failed()
	go func() {
		// The metadata store cannot continue (its disk is full, say): stop serving rather than
		// answer from a catalog that can no longer change.
		select {
		case <-store.Failed():
			log.Error("shutting down: the metadata store failed", "err", store.Err())
			n.Close()
		case <-sctx.Done():
		}
	}()
}

func (n *Node) listen(role string, l config.Listener, svc *wire.Service) (cluster.Endpoint, error) {
	ln, err := net.Listen("tcp", l.Addr())
	if err != nil {
		return cluster.Endpoint{}, fmt.Errorf("%s listener %s on %s: %w", role, l.Name, l.Addr(), err)
	}
	lc := n.listenerConfig(l.Name)
	if it, ok := n.internalTLS[role]; ok && it.name == l.Name {
		lc.PeerTLS, lc.PeerOnly = it.tls, it.peerOnly
	}
	if n.cfg.IsSASL(l.Name) {
		jaas := n.cfg.ListenerJAASConfig[l.Name]
		if jaas == "" {
			jaas = n.cfg.PlainJAASConfig
		}
		a, err := auth.ParseJAAS(jaas)
		if err != nil {
			ln.Close()
			return cluster.Endpoint{}, fmt.Errorf("SASL listener %s: security.sasl.plain.jaas.config: %w", l.Name, err)
		}
		lc.Auth = a
	}
	if n.metrics != nil {
		lc.Observer = n.metrics.TabletServer
		if role == "coordinator" {
			lc.Observer = n.metrics.Coordinator
		}
	}
	n.listeners = append(n.listeners, boundListener{role: role, cfg: lc, ln: ln, svc: svc})
	ep := cluster.EndpointFromAddr(l.Name, ln.Addr())
	if l.Host != "" && l.Host != "0.0.0.0" && l.Host != "::" {
		ep.Host = l.Host
	}
	adv := n.cfg.CoordinatorAdvertised
	if role == "tablet-server" {
		adv = n.cfg.TabletAdvertised
	}
	if a, ok := config.Advertised(adv, l.Name); ok {
		ep.Host, ep.Port = a.Host, int32(a.Port)
	}
	n.log.Info("listening", "role", role, "listener", l.Name, "addr", ln.Addr().String(), "sasl", lc.Auth != nil,
		"cluster_tls", lc.PeerTLS != nil, "servers_only", lc.PeerOnly)
	return ep, nil
}

// serveHTTP starts the HTTP listener (metrics, health, pprof): on http.listen if set, else
// on the coordinator's host and metrics.reporter.prometheus.port.
func (n *Node) serveHTTP() error {
	host, lo, hi := n.cfg.CoordinatorListeners[0].Host, 0, 0
	var err error
	if n.cfg.HTTPListen != "" {
		l, _ := config.ParseHostPort(n.cfg.HTTPListen) // validated by config.Set
		host, lo, hi = l.Host, l.Port, l.Port
	} else if lo, hi, err = config.ParsePortRange(n.cfg.PrometheusPort); err != nil {
		return fmt.Errorf("metrics.reporter.prometheus.port: %w", err)
	}
	ln, err := metrics.Listen(host, lo, hi)
	if err != nil {
		return err
	}
	tlsCfg, err := n.httpTLS()
	if err != nil {
		ln.Close()
		return err
	}
	if tlsCfg != nil {
		ln = tls.NewListener(ln, tlsCfg)
	}
	n.httpMux = http.NewServeMux()
	n.httpMux.Handle("/", n.metrics.Handler(metrics.HandlerOptions{Pprof: n.cfg.PprofEnabled}))
	n.httpMux.HandleFunc("GET "+ReplicaStatusPath, n.serveReplicaStatus)
	n.http = metrics.Serve(ln, n.httpMux, n.log.With("role", "http"))
	n.log.Info("listening", "role", "http", "addr", n.http.Addr(), "pprof", n.cfg.PprofEnabled, "tls", tlsCfg != nil)
	return nil
}

// HTTPAddr returns the bound address of the HTTP listener, or "" when it is disabled.
func (n *Node) HTTPAddr() string {
	if n.http == nil {
		return ""
	}
	return n.http.Addr()
}

// listenerConfig maps the client limits of the configuration onto a listener's. In the
// configuration 0 disables the idle timeout and the failure delay (as Fluss's 0 idle time
// does); in wire 0 means the default, so they become negative.
func (n *Node) listenerConfig(name string) wire.ListenerConfig {
	c := &n.cfg
	disabledIfZero := func(d time.Duration) time.Duration {
		if d == 0 {
			return -1
		}
		return d
	}
	return wire.ListenerConfig{
		Name: name, MaxFrameSize: c.MaxRequestSize, PreAuthMaxFrameSize: c.PreAuthMaxRequestSize,
		AuthTimeout: c.AuthTimeout, AuthFailureDelay: disabledIfZero(c.AuthFailureDelay), MaxAuthFailures: c.AuthMaxFailures,
		IdleTimeout: disabledIfZero(c.ConnectionMaxIdleTime), Limits: n.nodeLimits(),
		ZeroCopy: c.FetchZeroCopy,
	}
}

// Addr returns the bound address of the first listener of a role ("coordinator" or
// "tablet-server").
func (n *Node) Addr(role string) string {
	for _, bl := range n.listeners {
		if bl.role == role {
			return bl.ln.Addr().String()
		}
	}
	return ""
}

// Failed is closed when the node stopped on its own because the metadata store failed; Close
// then returns why.
func (n *Node) Failed() <-chan struct{} { return n.storeFailed }

// Wait blocks until the node stops serving and returns the first serving error.
func (n *Node) Wait() error {
	n.wg.Wait()
	select {
	case err := <-n.serveErr:
		return err
	default:
		return nil
	}
}

// Close stops accepting, waits for connections to finish, and closes storage and metadata.
// It is safe to call more than once and concurrently; every call returns the first call's
// result once the node is fully closed.
func (n *Node) Close() error {
	n.closeOnce.Do(func() { n.closeErr = n.close() })
	return n.closeErr
}

func (n *Node) close() error {
	if n.control != nil {
		// While the listeners still answer, hand this server's leaderships to other
		// in-sync replicas, so clients find new leaders at once. It refuses its clients
		// first, so no read it answers can miss a write of a successor (the hand-over fence,
		// docs/cluster.md, "Controlled shutdown").
		if n.tablet != nil {
			n.tablet.HandOverLeaderships()
		}
		if err := n.control.ControlledShutdown(context.Background(), controlledShutdownTimeout); err != nil {
			n.log.Warn("controlled shutdown incomplete", "err", err)
		}
	}
	if n.cancel != nil {
		n.cancel()
	}
	if n.http != nil {
		n.closeHTTPMounts() // ends streaming responses, which would hold the shutdown
		n.http.Close()
	}
	for _, bl := range n.listeners {
		bl.ln.Close()
	}
	n.wg.Wait()
	var errs []error
	if n.control != nil {
		// Leaves the cluster: resigns the election and revokes the registration lease, so
		// the other nodes move this node's roles at once instead of after the lease TTL.
		n.control.Close()
	}
	if n.coordinator != nil {
		n.coordinator.Close()
	}
	if n.tierer != nil {
		errs = append(errs, n.tierer.Close())
		n.tierer = nil
	}
	if n.tablet != nil {
		errs = append(errs, n.tablet.Close())
		n.tablet = nil
	}
	n.remoteLog = nil // its storage is n.remote
	if n.remote != nil {
		errs = append(errs, n.remote.Close())
		n.remote = nil
	}
	if n.store != nil {
		errs = append(errs, n.store.Close())
		n.store = nil
	}
	if n.lock != nil {
		n.lock.Close()
		n.lock = nil
	}
	return errors.Join(errs...)
}

// lockDir takes an exclusive lock on dir/LOCK, held for the life of the process.
func lockDir(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, "LOCK"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open lock file: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: %s (stop the other server or use another --data-dir)", ErrDataDirLocked, dir)
		}
		return nil, fmt.Errorf("lock %s: %w", dir, err)
	}
	return f, nil
}
