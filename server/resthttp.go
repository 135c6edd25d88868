package server

import (
	"crypto/tls"
	"fmt"
	"net/http"

	"github.com/stromdb/strom/server/rest"
	"github.com/stromdb/strom/server/rest/console"
)

// restGateway builds the REST gateway of the HTTP listener: a Fluss client of this node's own
// listener (docs/rest.md). It prefers a coordinator listener, and one that is not the
// internal listener, so that the ACLs of client listeners apply to REST requests.
func (n *Node) restGateway() *rest.Gateway {
	internal := n.cfg.Raw["internal.listener.name"]
	if internal == "" {
		internal = "FLUSS"
	}
	var pick *boundListener
	for _, role := range []string{"coordinator", "tablet-server"} {
		for i := range n.listeners {
			bl := &n.listeners[i]
			if bl.role == role && (pick == nil || pick.cfg.Name == internal) {
				pick = bl
			}
		}
		if pick != nil {
			break
		}
	}
	if pick == nil {
		return nil
	}
	n.log.Info("REST gateway", "listener", pick.cfg.Name, "addr", pick.ln.Addr().String(), "sasl", pick.cfg.Auth != nil)
	return rest.New(rest.Options{
		Bootstrap: pick.ln.Addr().String(), SASL: pick.cfg.Auth != nil,
		MaxBodyBytes: n.cfg.HTTP.RestMaxRequestSize, Log: n.log.With("role", "rest"),
	})
}

// withREST mounts the REST API at /api/v1/ and the console at /console/ next to h (the
// metrics handler), unless http.rest.enabled is false.
func (n *Node) withREST(h http.Handler) http.Handler {
	if n.cfg.HTTP.RestDisabled {
		return h
	}
	n.rest = n.restGateway()
	if n.rest == nil {
		return h
	}
	mux := http.NewServeMux()
	mux.Handle(rest.Prefix+"/", n.rest.Handler())
	mux.Handle(console.Path, console.Handler())
	mux.Handle("/", h)
	return mux
}

// httpTLS loads http.tls.cert-file and http.tls.key-file, or returns nil without them.
func (n *Node) httpTLS() (*tls.Config, error) {
	h := n.cfg.HTTP
	if !h.TLS() {
		return nil, nil
	}
	if h.TLSCertFile == "" || h.TLSKeyFile == "" {
		return nil, fmt.Errorf("http.tls.cert-file and http.tls.key-file must be set together")
	}
	cert, err := tls.LoadX509KeyPair(h.TLSCertFile, h.TLSKeyFile)
	if err != nil {
		return nil, fmt.Errorf("http.tls: %w", err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}
