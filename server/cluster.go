package server

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"strconv"
	"time"

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
