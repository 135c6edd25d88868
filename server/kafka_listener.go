package server

import (
	"fmt"
	"net"

	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/server/auth"
	"github.com/stromdb/strom/server/cluster"
	"github.com/stromdb/strom/server/config"
	"github.com/stromdb/strom/server/kafka"
)

// The Kafka listeners of the tablet server (kafka.enabled, kafka.listener.names): server/kafka
// on the node's catalog, the tablet server's data path and the cluster's bucket states.

// kafkaServer builds the Kafka protocol server of this node.
func (n *Node) kafkaServer(kc kafka.Config, topo *cluster.Topology, authz *auth.Authorizer) *kafka.Server {
	return kafka.New(kafka.Options{
		Config: kc, NodeID: n.cfg.TabletServerID, Catalog: n.coordinator, Log: n.tablet,
		Cluster: kafkaCluster{n: n, topo: topo}, IDs: n.store, Store: n.store, Authorizer: authz,
		MaxFrameSize: n.cfg.MaxRequestSize, DefaultBuckets: n.cfg.DefaultBucketNumber,
		DefaultReplication: n.cfg.DefaultReplicationFactor,
		// The node's budgets and SASL timeout, as on its Fluss listeners.
		Limits: n.nodeLimits(), AuthTimeout: n.cfg.AuthTimeout,
	}, n.log.With("role", "kafka"))
}

// listenKafka binds a Kafka listener; its users are the listener's SASL users when
// security.protocol.map names it sasl.
func (n *Node) listenKafka(l config.Listener, ks *kafka.Server) (cluster.Endpoint, error) {
	if n.cfg.IsSASL(l.Name) {
		jaas := n.cfg.ListenerJAASConfig[l.Name]
		if jaas == "" {
			jaas = n.cfg.PlainJAASConfig
		}
		users, err := auth.ParseJAAS(jaas)
		if err != nil {
			return cluster.Endpoint{}, fmt.Errorf("SASL listener %s: security.sasl.plain.jaas.config: %w", l.Name, err)
		}
		ks.SetUsers(l.Name, users)
	}
	ln, err := net.Listen("tcp", l.Addr())
	if err != nil {
		return cluster.Endpoint{}, fmt.Errorf("kafka listener %s on %s: %w", l.Name, l.Addr(), err)
	}
	// Counted against the node's connection limit, EMFILE retried: the same admission as the
	// Fluss listeners (wire.Serve).
	ln = wire.LimitedListener(ln, n.nodeLimits(), n.log.With("role", "kafka", "listener", l.Name))
	n.listeners = append(n.listeners, boundListener{role: "kafka", cfg: wire.ListenerConfig{Name: l.Name}, ln: ln, kafka: ks})
	ep := cluster.EndpointFromAddr(l.Name, ln.Addr())
	if l.Host != "" && l.Host != "0.0.0.0" && l.Host != "::" {
		ep.Host = l.Host
	}
	if a, ok := config.Advertised(n.cfg.TabletAdvertised, l.Name); ok {
		ep.Host, ep.Port = a.Host, int32(a.Port)
	}
	n.log.Info("listening", "role", "kafka", "listener", l.Name, "addr", ln.Addr().String())
	return ep, nil
}

// kafkaCluster answers where brokers and bucket leaders are.
type kafkaCluster struct {
	n    *Node
	topo *cluster.Topology
}

func (k kafkaCluster) Brokers(listener, localHost string) map[int32]cluster.Endpoint {
	_, _, tablets := k.topo.Resolve(listener, localHost)
	return tablets
}

func (k kafkaCluster) Buckets(t *cluster.TableInfo) ([]cluster.BucketState, []bool) {
	if k.n.control != nil {
		return k.n.control.BucketStates(t.ID, cluster.NoPartition, t.NumBuckets())
	}
	id := k.n.cfg.TabletServerID
	states := make([]cluster.BucketState, t.NumBuckets())
	known := make([]bool, len(states))
	for i := range states {
		states[i] = cluster.BucketState{Leader: id, Replicas: []int32{id}, ISR: []int32{id}}
		known[i] = true
	}
	return states, known
}

func (k kafkaCluster) Controller() int32 { return k.n.cfg.TabletServerID }
