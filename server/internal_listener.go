package server

import (
	"crypto/tls"

	"github.com/stromdb/strom/internal/clustertls"
	"github.com/stromdb/strom/server/config"
)

// internalListenerTLS is how a role's internal listener authenticates the other servers
// (docs/security.md, "The internal listener").
type internalListenerTLS struct {
	name string      // internal.listener.name
	tls  *tls.Config // the members' mutual TLS (wire.ListenerConfig.PeerTLS)
	// peerOnly: the role has another Fluss listener for clients, so the internal one serves
	// only the servers and refuses plaintext connections (wire.ListenerConfig.PeerOnly).
	// When the internal listener is the role's only Fluss listener (the default FLUSS for
	// everything) its plaintext connections are clients, without server privileges.
	peerOnly bool
}

// internalTLSOf returns, per role, the PeerTLS settings of its internal listener: none
// without a cluster identity (a single node, or cluster.allow-insecure).
func internalTLSOf(peer *clustertls.Peer, internal string, isKafka func(string) bool, listeners map[string][]config.Listener) map[string]internalListenerTLS {
	if peer == nil {
		return nil
	}
	out := map[string]internalListenerTLS{}
	for role, ls := range listeners {
		it := internalListenerTLS{name: internal, tls: peer.ServerConfig()}
		for _, l := range ls {
			if l.Name != internal && !isKafka(l.Name) {
				it.peerOnly = true
			}
		}
		out[role] = it
	}
	return out
}
