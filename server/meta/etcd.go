package meta

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.etcd.io/etcd/server/v3/etcdserver/api/v3client"
	"go.uber.org/zap"
)

// keyPrefix namespaces Strom's keys so an external etcd can be shared.
const keyPrefix = "/strom/"

// EtcdStore is a Store backed by etcd.
type EtcdStore struct {
	cli      *clientv3.Client
	embedded *embed.Etcd
	log      *slog.Logger
	zlog     *zap.Logger // the embedded etcd's logger
	sockDir  string      // the embedded etcd's socket directory, removed on Close if temporary
	tempSock bool

	closing  atomic.Bool
	failOnce sync.Once
	failed   chan struct{}
	failErr  error
}

// MinFreeBytes is the free space the embedded etcd needs in its directory to start: its
// write-ahead log preallocates 64 MiB segments, and it must be able to cut the next one.
const MinFreeBytes = 128 << 20

// freeBytes reports the space available to this process in the file system holding dir.
var freeBytes = func(dir string) (uint64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return st.Bavail * uint64(st.Bsize), nil
}

// maxSocketPath is the longest unix socket path Linux accepts (sun_path is 108 bytes with
// its terminating NUL), with a margin.
const maxSocketPath = 100

// OpenEmbedded starts a single-member etcd whose data lives in dir and returns a store on it.
//
// The embedded etcd is reachable only by this process's user: it listens on unix sockets, mode
// 0600, in the directory dir/sock (mode 0700) — no TCP port — and Strom itself talks to it in
// process. (If dir is too long for a socket path, the sockets go to a private temporary
// directory instead.) It refuses to start with less than MinFreeBytes free. Its log goes to
// log at warn level and above; if it hits a fatal error (a full disk, say) the store reports it
// on Failed instead of the process exiting.
func OpenEmbedded(ctx context.Context, dir string, log *slog.Logger) (*EtcdStore, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create metadata directory: %w", err)
	}
	if free, err := freeBytes(dir); err == nil && free < MinFreeBytes {
		return nil, fmt.Errorf("not enough free space for the metadata store in %s: %d MiB free, the embedded etcd needs at least %d MiB (its write-ahead log preallocates 64 MiB segments)", dir, free>>20, MinFreeBytes>>20)
	}
	s := &EtcdStore{log: log, failed: make(chan struct{})}
	if err := s.makeSocketDir(dir); err != nil {
		return nil, err
	}
	s.zlog = etcdLogger(log, &s.closing, s.fail)

	cfg := embed.NewConfig()
	cfg.Name = "strom"
	cfg.Dir = dir
	cfg.LogLevel = "warn"
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(s.zlog)
	// The listen URLs carry the socket path in Host, which etcd uses as the address; the
	// advertised URLs are only names (a single member dials no one) that etcd can parse.
	peer := url.URL{Scheme: "unix", Host: filepath.Join(s.sockDir, "peer")}
	client := url.URL{Scheme: "unix", Host: filepath.Join(s.sockDir, "client")}
	cfg.ListenPeerUrls = []url.URL{peer}
	cfg.AdvertisePeerUrls = []url.URL{{Scheme: "unix", Host: "strom-peer"}}
	cfg.ListenClientUrls = []url.URL{client}
	cfg.AdvertiseClientUrls = []url.URL{{Scheme: "unix", Host: "strom-client"}}
	cfg.InitialCluster = cfg.Name + "=unix://strom-peer"
	// A single member elects itself; with etcd's defaults (100 ms ticks, a 1 s election
	// timeout) that wait was most of the server's start (startup 110–720 ms against 20–75 ms
	// with these). No other member exists whose missed heartbeats a short timeout could
	// misjudge, so the short ticks cost only a timer.
	cfg.TickMs, cfg.ElectionMs = 10, 100
	return s.start(ctx, cfg, []string{peer.Host, client.Host}, 30*time.Second)
}

// Member is an embedded etcd member of a multi-member cluster (the etcd.* options of
// docs/cluster.md). URLs are http://HOST:PORT.
type Member struct {
	Name                string
	InitialCluster      string // name=http://host:port,...
	InitialClusterState string // "new" or "existing"
	ListenPeerURLs      []url.URL
	AdvertisePeerURLs   []url.URL
	ListenClientURLs    []url.URL
	AdvertiseClientURLs []url.URL
	// JoinEndpoints (etcd.join-endpoints) are client URLs of running members: a member
	// without etcd data joins through them (join.go) instead of bootstrapping.
	JoinEndpoints []string
	// PeerTLS secures the traffic between members, ClientTLS the member's client URLs and
	// this process's own dials of other members' client URLs (a join). Empty: plain HTTP.
	PeerTLS, ClientTLS transport.TLSInfo
}

// memberReadyTimeout bounds the wait of a member for its cluster: it is ready only once a
// quorum of the initial cluster runs, so the other members may still be starting.
const memberReadyTimeout = 2 * time.Minute

// OpenMember starts this process's member of a multi-member etcd cluster, with its data in
// dir, and returns a store on it. Members talk over TCP on the peer URLs; the client URLs
// serve tablet-server-only nodes and operators (etcdctl). It returns once the member has
// joined a quorum.
func OpenMember(ctx context.Context, dir string, m Member, log *slog.Logger) (*EtcdStore, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create metadata directory: %w", err)
	}
	if free, err := freeBytes(dir); err == nil && free < MinFreeBytes {
		return nil, fmt.Errorf("not enough free space for the metadata store in %s: %d MiB free, the embedded etcd needs at least %d MiB (its write-ahead log preallocates 64 MiB segments)", dir, free>>20, MinFreeBytes>>20)
	}
	if len(m.JoinEndpoints) > 0 {
		has, err := hasMemberData(dir)
		if err != nil {
			return nil, err
		}
		if !has {
			if m.InitialCluster, err = joinCluster(ctx, m, log); err != nil {
				return nil, err
			}
			m.InitialClusterState = embed.ClusterStateFlagExisting
		}
	}
	s := &EtcdStore{log: log, failed: make(chan struct{})}
	s.zlog = etcdLogger(log, &s.closing, s.fail)
	cfg := embed.NewConfig()
	cfg.Name = m.Name
	cfg.Dir = dir
	cfg.LogLevel = "warn"
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(s.zlog)
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = m.ListenPeerURLs, m.AdvertisePeerURLs
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = m.ListenClientURLs, m.AdvertiseClientURLs
	cfg.InitialCluster = m.InitialCluster
	cfg.ClusterState = m.InitialClusterState
	if cfg.ClusterState == "" {
		cfg.ClusterState = embed.ClusterStateFlagNew
	}
	cfg.InitialClusterToken = "strom"
	cfg.PeerTLSInfo, cfg.ClientTLSInfo = m.PeerTLS, m.ClientTLS
	// Members on one machine or a LAN: etcd's default 100 ms heartbeat and 1 s election
	// timeout, so a dead etcd leader is replaced in about a second.
	return s.start(ctx, cfg, nil, memberReadyTimeout)
}

// Limits of the embedded etcd above its defaults (128 operations, 1.5 MiB per request): a
// table of up to EmbeddedMaxTxnOps-2 buckets is created in one transaction (about 130 bytes
// per bucket state). An external etcd needs --max-txn-ops and --max-request-bytes as large.
const (
	EmbeddedMaxTxnOps       = 8192
	EmbeddedMaxRequestBytes = 4 << 20
)

// start runs the configured etcd and waits until it serves; private lists unix sockets to
// restrict to this user.
func (s *EtcdStore) start(ctx context.Context, cfg *embed.Config, private []string, readyTimeout time.Duration) (*EtcdStore, error) {
	dir := cfg.Dir
	log := s.log
	cfg.AutoCompactionMode = embed.CompactorModeRevision
	cfg.AutoCompactionRetention = "1000"
	// CREATE_TABLE writes a table's bucket states in the transaction that registers it, one
	// operation per bucket: etcd's default of 128 operations refused every table of more
	// than ~126 buckets in a cluster (docs/cluster.md, "Scale").
	cfg.MaxTxnOps = EmbeddedMaxTxnOps
	cfg.MaxRequestBytes = EmbeddedMaxRequestBytes
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		s.removeSocketDir()
		return nil, fmt.Errorf("start embedded etcd in %s: %w", dir, err)
	}
	s.embedded = e
	for _, sock := range private {
		if err := os.Chmod(sock, 0o600); err != nil {
			s.Close()
			return nil, fmt.Errorf("restrict embedded etcd socket: %w", err)
		}
	}
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(readyTimeout):
		s.Close()
		return nil, fmt.Errorf("embedded etcd in %s did not become ready within %s (a member waits for a quorum of etcd.initial-cluster)", dir, readyTimeout)
	case <-ctx.Done():
		s.Close()
		return nil, ctx.Err()
	case <-s.failed:
		s.Close()
		return nil, fmt.Errorf("embedded etcd in %s: %w", dir, s.failErr)
	}
	go s.watch()
	log.Debug("embedded etcd ready", "dir", dir, "name", cfg.Name)
	s.cli = v3client.New(e.Server)
	return s, nil
}

// makeSocketDir creates the private directory for the etcd sockets.
func (s *EtcdStore) makeSocketDir(dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	s.sockDir = filepath.Join(abs, "sock")
	if len(s.sockDir)+len("/client") > maxSocketPath {
		if s.sockDir, err = os.MkdirTemp("", "strom-etcd-"); err != nil {
			return fmt.Errorf("create embedded etcd socket directory: %w", err)
		}
		s.tempSock = true
	} else if err := os.MkdirAll(s.sockDir, 0o700); err != nil {
		return fmt.Errorf("create embedded etcd socket directory: %w", err)
	}
	// MkdirAll keeps the mode of an existing directory; the sockets' privacy rests on it.
	return os.Chmod(s.sockDir, 0o700)
}

func (s *EtcdStore) removeSocketDir() {
	if s.tempSock {
		os.RemoveAll(s.sockDir)
	}
}

// watch reports the embedded server stopping, or one of its listeners failing, while the
// store is open.
func (s *EtcdStore) watch() {
	select {
	case <-s.embedded.Server.StopNotify():
		if !s.closing.Load() {
			s.fail(errors.New("the embedded etcd server stopped"))
		}
	case err := <-s.embedded.Err():
		if !s.closing.Load() && err != nil {
			s.fail(fmt.Errorf("embedded etcd: %w", err))
		}
	case <-s.failed:
	}
}

// fail records the first fatal error of the embedded etcd.
func (s *EtcdStore) fail(err error) {
	s.failOnce.Do(func() {
		s.failErr = err
		s.log.Error("metadata store failed", "err", err)
		close(s.failed)
	})
}

// Failed is closed when the embedded etcd hit an error it cannot continue after; Err then
// says which. The store must be closed and the node stopped.
func (s *EtcdStore) Failed() <-chan struct{} { return s.failed }

// Err returns the error that closed Failed, or nil.
func (s *EtcdStore) Err() error {
	select {
	case <-s.failed:
		return s.failErr
	default:
		return nil
	}
}

// clientTLS is the TLS configuration of a client presenting info; nil without TLS.
func clientTLS(info transport.TLSInfo) (*tls.Config, error) {
	if info.Empty() {
		return nil, nil
	}
	tc, err := info.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("etcd client TLS: %w", err)
	}
	return tc, nil
}

// OpenRemote returns a store on an existing etcd cluster; tls is the client identity to
// present (empty for plain HTTP).
func OpenRemote(endpoints []string, tls transport.TLSInfo) (*EtcdStore, error) {
	tc, err := clientTLS(tls)
	if err != nil {
		return nil, err
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 5 * time.Second, TLS: tc})
	if err != nil {
		return nil, fmt.Errorf("connect to etcd %v: %w", endpoints, err)
	}
	return &EtcdStore{cli: cli}, nil
}

// Get implements Store.
func (s *EtcdStore) Get(ctx context.Context, key string) ([]byte, error) {
	resp, err := s.cli.Get(ctx, keyPrefix+key)
	if err != nil {
		return nil, fmt.Errorf("meta get %s: %w", key, err)
	}
	if len(resp.Kvs) == 0 {
		return nil, ErrNotFound
	}
	return resp.Kvs[0].Value, nil
}

// List implements Store.
func (s *EtcdStore) List(ctx context.Context, prefix string) ([]KV, error) {
	resp, err := s.cli.Get(ctx, keyPrefix+prefix, clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByKey, clientv3.SortAscend))
	if err != nil {
		return nil, fmt.Errorf("meta list %s: %w", prefix, err)
	}
	out := make([]KV, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		out = append(out, KV{Key: string(kv.Key[len(keyPrefix):]), Value: kv.Value})
	}
	return out, nil
}

// Txn implements Store.
func (s *EtcdStore) Txn(ctx context.Context, conds []Cond, ops []Op) (bool, error) {
	resp, err := s.cli.Txn(ctx).If(etcdCmps(conds)...).Then(etcdOps(ops)...).Commit()
	if err != nil {
		return false, fmt.Errorf("meta txn: %w", err)
	}
	return resp.Succeeded, nil
}

func etcdCmps(conds []Cond) []clientv3.Cmp {
	cmps := make([]clientv3.Cmp, 0, len(conds))
	for _, c := range conds {
		switch {
		case c.CreateRevision != 0:
			cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(keyPrefix+c.Key), "=", c.CreateRevision))
		case c.Exists:
			cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(keyPrefix+c.Key), ">", 0))
		default:
			cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(keyPrefix+c.Key), "=", 0))
		}
	}
	return cmps
}

func etcdOps(ops []Op) []clientv3.Op {
	eops := make([]clientv3.Op, 0, len(ops))
	for _, o := range ops {
		switch {
		case o.Delete && o.Prefix:
			eops = append(eops, clientv3.OpDelete(keyPrefix+o.Key, clientv3.WithPrefix()))
		case o.Delete:
			eops = append(eops, clientv3.OpDelete(keyPrefix+o.Key))
		case o.LeaseID != 0:
			eops = append(eops, clientv3.OpPut(keyPrefix+o.Key, string(o.Value), clientv3.WithLease(clientv3.LeaseID(o.LeaseID))))
		default:
			eops = append(eops, clientv3.OpPut(keyPrefix+o.Key, string(o.Value)))
		}
	}
	return eops
}

// Client returns the etcd client of the store, for leases, watches and elections. Keys it
// sees carry KeyPrefix.
func (s *EtcdStore) Client() *clientv3.Client { return s.cli }

// KeyPrefix namespaces every key of the store in etcd; Store methods take keys without it.
const KeyPrefix = keyPrefix

// NextID implements Store.
func (s *EtcdStore) NextID(ctx context.Context, name string) (int64, error) {
	return s.AddID(ctx, name, 1)
}

// AddID atomically adds n (at least 1) to the named counter and returns its previous value:
// the caller owns the ids prev+1 … prev+n. It is the counter NextID steps by one, so the two
// share names. Auto-increment columns take their ranges from it (docs/primary-keys.md).
func (s *EtcdStore) AddID(ctx context.Context, name string, n int64) (int64, error) {
	if n < 1 {
		return 0, fmt.Errorf("meta counter %s: cannot add %d", name, n)
	}
	key := keyPrefix + "seq/" + name
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			// A transient failure below (an etcd leader election, typically the member a
			// killed node hosted): the compare-and-swap makes a retry safe, since a Txn that
			// was applied although its answer was lost only leaves a gap.
			select {
			case <-ctx.Done():
				return 0, fmt.Errorf("meta counter %s: %w", name, context.Cause(ctx))
			case <-time.After(min(time.Duration(attempt)*50*time.Millisecond, time.Second)):
			}
		}
		resp, err := s.cli.Get(ctx, key)
		if transientEtcd(err) {
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("meta counter %s: %w", name, err)
		}
		var cur int64
		var cmp clientv3.Cmp
		if len(resp.Kvs) == 0 {
			cmp = clientv3.Compare(clientv3.CreateRevision(key), "=", 0)
		} else {
			cur, err = strconv.ParseInt(string(resp.Kvs[0].Value), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("meta counter %s holds %q: %w", name, resp.Kvs[0].Value, err)
			}
			cmp = clientv3.Compare(clientv3.ModRevision(key), "=", resp.Kvs[0].ModRevision)
		}
		if cur > math.MaxInt64-n {
			return 0, fmt.Errorf("meta counter %s: %d + %d overflows", name, cur, n)
		}
		tr, err := s.cli.Txn(ctx).If(cmp).Then(clientv3.OpPut(key, strconv.FormatInt(cur+n, 10))).Commit()
		if transientEtcd(err) {
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("meta counter %s: %w", name, err)
		}
		if tr.Succeeded {
			return cur, nil
		}
	}
}

// transientEtcd reports whether err is one a retry of the same request may not get: the
// etcd cluster is electing a leader (the client itself retries reads on an unreachable
// member, not transactions).
func transientEtcd(err error) bool {
	return err != nil && (errors.Is(err, rpctypes.ErrLeaderChanged) || errors.Is(err, rpctypes.ErrNoLeader) ||
		errors.Is(err, rpctypes.ErrTimeout) || errors.Is(err, rpctypes.ErrTimeoutDueToLeaderFail) ||
		errors.Is(err, rpctypes.ErrTimeoutDueToConnectionLost))
}

// embeddedCloseTimeout bounds the wait for a failed embedded etcd to stop: after a fatal
// error some of its goroutines are gone and it may never finish.
const embeddedCloseTimeout = 10 * time.Second

// Close stops the client and, for an embedded store, the etcd server.
func (s *EtcdStore) Close() error {
	if s.closing.Swap(true) {
		return nil // closed already: a second Close is a no-op
	}
	var err error
	if s.cli != nil {
		err = s.cli.Close()
	}
	if s.embedded != nil {
		// The in-process client's Close reports the cancellation of its own context.
		if errors.Is(err, context.Canceled) {
			err = nil
		}
		done := make(chan struct{})
		go func() { s.embedded.Close(); close(done) }()
		wait := embeddedCloseTimeout
		if s.Err() == nil {
			wait = time.Hour // a healthy etcd always stops
		}
		select {
		case <-done:
		case <-time.After(wait):
			s.log.Error("embedded etcd did not stop after its failure; abandoning it", "timeout", wait)
		}
	}
	s.removeSocketDir()
	if ferr := s.Err(); ferr != nil {
		err = errors.Join(err, fmt.Errorf("metadata store failed: %w", ferr))
	}
	return err
}
