package server

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/stromdb/strom/internal/clustertls"
	"github.com/stromdb/strom/server/cluster"
	"github.com/stromdb/strom/server/config"
	"github.com/stromdb/strom/server/control"
	"github.com/stromdb/strom/server/meta"
	"go.etcd.io/etcd/client/pkg/v3/transport"
)

// openStore opens the metadata store: the single node's private etcd, this process's member
// of an embedded etcd cluster, or an external etcd (docs/cluster.md).
// In a cluster with a secret it also returns this process's identity on the internal
// listener (nil otherwise).
func openStore(ctx context.Context, cfg config.Config, log *slog.Logger) (*meta.EtcdStore, *clustertls.Peer, error) {
	dir := filepath.Join(cfg.DataDir, "meta")
	peer, err := clusterIdentity(&cfg, log)
	if err != nil {
		return nil, nil, err
	}
	store, err := openEtcd(ctx, dir, cfg, log)
	return store, peer, err
}

func openEtcd(ctx context.Context, dir string, cfg config.Config, log *slog.Logger) (*meta.EtcdStore, error) {
	switch {
	case !cfg.Clustered():
		return meta.OpenEmbedded(ctx, dir, log)
	case !cfg.EmbeddedEtcd():
		return meta.OpenRemote(cfg.Cluster.Endpoints, tlsInfo(cfg.Cluster.ClientTLS))
	default:
		cl := cfg.Cluster
		return meta.OpenMember(ctx, dir, meta.Member{
			Name: cl.Name, InitialCluster: cl.InitialCluster, InitialClusterState: cl.InitialClusterState,
			ListenPeerURLs: cl.ListenPeerURLs, AdvertisePeerURLs: cl.AdvertisePeerURLs,
			ListenClientURLs: cl.ListenClientURLs, AdvertiseClientURLs: cl.AdvertiseClientURLs,
			JoinEndpoints: cl.JoinEndpoints,
			PeerTLS:       tlsInfo(cl.PeerTLS), ClientTLS: tlsInfo(cl.ClientTLS),
		}, log.With("role", "etcd"))
	}
}

// clusterIdentity issues this process's certificate from cluster.secret-file (into the data
// directory's cluster-tls/) and uses it for etcd's peer and client TLS (unless the etcd.*
// files set those) and for the internal listener, whose identity it returns. A lone first
// member without a secret generates one first (config.Cluster.GenerateSecret). A cluster run
// with cluster.allow-insecure is WARNed at every start.
func clusterIdentity(cfg *config.Config, log *slog.Logger) (*clustertls.Peer, error) {
	cl := &cfg.Cluster
	if !cfg.Clustered() {
		return nil, nil // the single node's etcd is on private unix sockets
	}
	if cl.SecretFile == "" {
		log.Warn("INSECURE: cluster traffic is not authenticated (cluster.allow-insecure): anyone who reaches the etcd ports can read and rewrite the metadata, and anyone who reaches the internal listener can pose as a server; set cluster.secret-file (docs/security.md, \"Cluster authentication\")")
		return nil, nil
	}
	if cl.GenerateSecret {
		created, err := clustertls.GenerateSecret(cl.SecretFile)
		if err != nil {
			return nil, err
		}
		if created {
			log.Warn("generated the cluster's secret: give this file to every other process of the cluster as cluster.secret-file (and keep it private)", "file", cl.SecretFile)
		} else {
			log.Info("cluster authentication from the secret this member generated at its first start", "file", cl.SecretFile)
		}
	}
	secret, err := clustertls.ReadSecret(cl.SecretFile)
	if err != nil {
		return nil, err
	}
	var hosts []string
	for _, us := range [][]url.URL{cl.ListenPeerURLs, cl.AdvertisePeerURLs, cl.ListenClientURLs, cl.AdvertiseClientURLs} {
		for _, u := range us {
			hosts = append(hosts, u.Hostname())
		}
	}
	if h, err := os.Hostname(); err == nil {
		hosts = append(hosts, h)
	}
	name := cl.Name
	if name == "" {
		name = "strom-" + strconv.Itoa(int(cfg.TabletServerID))
	}
	f, err := clustertls.Issue(secret, filepath.Join(cfg.DataDir, "cluster-tls"), name, hosts)
	if err != nil {
		return nil, err
	}
	peer, err := clustertls.LoadPeer(f)
	if err != nil {
		return nil, err
	}
	files := config.TLSFiles{CertFile: f.CertFile, KeyFile: f.KeyFile, TrustedCAFile: f.TrustedCAFile}
	if !cl.PeerTLS.Enabled() && !cl.ClientTLS.Enabled() {
		cl.PeerTLS, cl.ClientTLS = files, files
		log.Info("cluster authentication: etcd peer and client traffic and the internal listener over mutual TLS from cluster.secret-file", "certificate", f.CertFile)
	} else {
		log.Info("cluster authentication: the internal listener over mutual TLS from cluster.secret-file; etcd with the etcd.* certificate files", "certificate", f.CertFile)
	}
	return peer, nil
}

// tlsInfo turns configured TLS files into etcd's form; every TLS link of the cluster's etcd
// authenticates both sides.
func tlsInfo(f config.TLSFiles) transport.TLSInfo {
	if !f.Enabled() {
		return transport.TLSInfo{}
	}
	return transport.TLSInfo{CertFile: f.CertFile, KeyFile: f.KeyFile, TrustedCAFile: f.TrustedCAFile, ClientCertAuth: true}
}

// startControl joins the cluster: the tablet server registers its endpoints, the
// coordinator campaigns, and the node starts following the cluster's state.
func (n *Node) startControl(ctx context.Context, internalListener string, coordEPs, tabletEPs []cluster.Endpoint) error {
	n.control.SetCatalog(n.coordinator)
	if len(coordEPs) > 0 {
		n.control.SetCoordinator(control.CoordinatorInfo{Endpoints: coordEPs, Internal: internalAddr(coordEPs, internalListener)})
	}
	if len(tabletEPs) > 0 {
		internal := internalAddr(tabletEPs, internalListener)
		if internal == "" {
			return fmt.Errorf("no tablet server listener is named %s (internal.listener.name): the other servers replicate and send notifications over it", internalListener)
		}
		n.control.SetTablet(control.Registration{ID: n.cfg.TabletServerID, Endpoints: tabletEPs, Internal: internal, Rack: n.cfg.TabletServerRack,
			HTTP: advertisedHTTP(n.HTTPAddr())}, n.tablet)
	}
	if err := n.control.Start(ctx); err != nil {
		return fmt.Errorf("join the cluster: %w", err)
	}
	return nil
}

// internalAddr returns HOST:PORT of the endpoint on the internal listener. A wildcard bind
// address is advertised as the loopback address: bind the internal listener to a routable
// address on a multi-machine cluster (docs/cluster.md).
func internalAddr(eps []cluster.Endpoint, listener string) string {
	for _, e := range eps {
		if e.Listener != listener {
			continue
		}
		host := e.Host
		if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
			host = "127.0.0.1"
		}
		return net.JoinHostPort(host, strconv.Itoa(int(e.Port)))
	}
	return ""
}

// controlledShutdownTimeout bounds how long a stopping tablet server waits for the active
// coordinator to move its leaderships away.
const controlledShutdownTimeout = 5 * time.Second

// Control returns the node's control plane, nil on the single node.
func (n *Node) Control() *control.Control { return n.control }
