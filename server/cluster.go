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
func openStore(ctx context.Context, cfg config.Config, log *slog.Logger) (*meta.EtcdStore, error) {
	dir := filepath.Join(cfg.DataDir, "meta")
	if err := clusterIdentity(&cfg, log); err != nil {
		return nil, err
	}
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
// directory's cluster-tls/) and uses it for etcd's peer and client TLS; without a secret or
// etcd TLS files a cluster's etcd traffic is unauthenticated, which is WARNed.
func clusterIdentity(cfg *config.Config, log *slog.Logger) error {
	cl := &cfg.Cluster
	if !cfg.Clustered() {
		return nil // the single node's etcd is on private unix sockets
	}
	if cl.SecretFile == "" {
		if !cl.PeerTLS.Enabled() && !cl.ClientTLS.Enabled() {
			log.Warn("INSECURE: cluster traffic is not authenticated: anyone who reaches the etcd ports can read and rewrite the metadata; set cluster.secret-file (docs/security.md, \"Cluster authentication\")")
		}
		return nil
	}
	secret, err := clustertls.ReadSecret(cl.SecretFile)
	if err != nil {
		return err
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
		return err
	}
	files := config.TLSFiles{CertFile: f.CertFile, KeyFile: f.KeyFile, TrustedCAFile: f.TrustedCAFile}
	cl.PeerTLS, cl.ClientTLS = files, files
	log.Info("cluster authentication: etcd peer and client traffic over mutual TLS from cluster.secret-file", "certificate", f.CertFile)
	return nil
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
