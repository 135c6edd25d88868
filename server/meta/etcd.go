package meta

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strconv"
	"time"

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
}

// OpenEmbedded starts a single-member etcd whose data lives in dir and returns a store on it.
// The embedded server listens on two free loopback ports chosen at start; Strom talks to it
// in process, so nothing outside needs to know them.
func OpenEmbedded(ctx context.Context, dir string, log *slog.Logger) (*EtcdStore, error) {
	cfg := embed.NewConfig()
	cfg.Name = "strom"
	cfg.Dir = dir
	cfg.LogLevel = "error"
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	peer, err := freeLoopbackURL()
	if err != nil {
		return nil, err
	}
	client, err := freeLoopbackURL()
	if err != nil {
		return nil, err
	}
	cfg.ListenPeerUrls = []url.URL{peer}
	cfg.AdvertisePeerUrls = []url.URL{peer}
	cfg.ListenClientUrls = []url.URL{client}
	cfg.AdvertiseClientUrls = []url.URL{client}
	cfg.InitialCluster = cfg.Name + "=" + peer.String()
	cfg.AutoCompactionMode = embed.CompactorModeRevision
	cfg.AutoCompactionRetention = "1000"
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, fmt.Errorf("start embedded etcd in %s: %w", dir, err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(30 * time.Second):
		e.Close()
		return nil, fmt.Errorf("embedded etcd in %s did not become ready", dir)
	case <-ctx.Done():
		e.Close()
		return nil, ctx.Err()
	}
	log.Debug("embedded etcd ready", "dir", dir)
	return &EtcdStore{cli: v3client.New(e.Server), embedded: e}, nil
}

// OpenRemote returns a store on an existing etcd cluster.
func OpenRemote(endpoints []string) (*EtcdStore, error) {
	cli, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 5 * time.Second})
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
	cmps := make([]clientv3.Cmp, 0, len(conds))
	for _, c := range conds {
		if c.Exists {
			cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(keyPrefix+c.Key), ">", 0))
		} else {
			cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(keyPrefix+c.Key), "=", 0))
		}
	}
	eops := make([]clientv3.Op, 0, len(ops))
	for _, o := range ops {
		switch {
		case o.Delete && o.Prefix:
			eops = append(eops, clientv3.OpDelete(keyPrefix+o.Key, clientv3.WithPrefix()))
		case o.Delete:
			eops = append(eops, clientv3.OpDelete(keyPrefix+o.Key))
		default:
			eops = append(eops, clientv3.OpPut(keyPrefix+o.Key, string(o.Value)))
		}
	}
	resp, err := s.cli.Txn(ctx).If(cmps...).Then(eops...).Commit()
	if err != nil {
		return false, fmt.Errorf("meta txn: %w", err)
	}
	return resp.Succeeded, nil
}

// NextID implements Store.
func (s *EtcdStore) NextID(ctx context.Context, name string) (int64, error) {
	key := keyPrefix + "seq/" + name
	for {
		resp, err := s.cli.Get(ctx, key)
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
		tr, err := s.cli.Txn(ctx).If(cmp).Then(clientv3.OpPut(key, strconv.FormatInt(cur+1, 10))).Commit()
		if err != nil {
			return 0, fmt.Errorf("meta counter %s: %w", name, err)
		}
		if tr.Succeeded {
			return cur, nil
		}
	}
}

// Close stops the client and, for an embedded store, the etcd server.
func (s *EtcdStore) Close() error {
	err := s.cli.Close()
	if s.embedded != nil {
		// The in-process client's Close reports the cancellation of its own context.
		if errors.Is(err, context.Canceled) {
			err = nil
		}
		s.embedded.Close()
	}
	return err
}

// freeLoopbackURL picks a free 127.0.0.1 port.
func freeLoopbackURL() (url.URL, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return url.URL{}, fmt.Errorf("pick a port for embedded etcd: %w", err)
	}
	defer ln.Close()
	return url.URL{Scheme: "http", Host: ln.Addr().String()}, nil
}
