package server

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"regexp"
)

// HandleHTTP mounts h at pattern (net/http's ServeMux syntax) on the node's HTTP listener,
// next to /metrics, /healthz and /readyz. closer, if not nil, runs when the node closes,
// before the listener stops, so that handlers with long-lived responses (streams) can end
// them. The REST gateway and the console are mounted this way by `strom serve`
// (server/rest.Mount), so that this package does not depend on them.
func (n *Node) HandleHTTP(pattern string, h http.Handler, closer func()) error {
	if n.httpMux == nil {
		return errors.New("the HTTP listener is not enabled (http.listen or metrics.reporters: prometheus)")
	}
	n.httpMux.Handle(pattern, h)
	if closer != nil {
		n.httpMu.Lock()
		n.httpClosers = append(n.httpClosers, closer)
		n.httpMu.Unlock()
	}
	return nil
}

// GatewayListener returns the bound address of the Fluss listener an in-process gateway is
// to connect to, and whether it authenticates with SASL: a coordinator listener (a tablet
// server's on a node without the coordinator role), preferring one that is not
// internal.listener.name, so that the ACLs of client listeners apply. "" when there is none.
func (n *Node) GatewayListener() (addr string, sasl bool) {
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
			return pick.ln.Addr().String(), pick.cfg.Auth != nil
		}
	}
	return "", false
}

// GatewayPassword returns the password of a SASL/PLAIN user of the gateway's listener, from
// the listener's JAAS configuration: what lets the gateway log in as the user a bearer token
// stands for (http.rest.tokens) without the token holder knowing the password.
func (n *Node) GatewayPassword(user string) (string, bool) {
	addr, sasl := n.GatewayListener()
	if !sasl {
		return "", false
	}
	for _, bl := range n.listeners {
		if bl.ln.Addr().String() != addr {
			continue
		}
		jaas := n.cfg.ListenerJAASConfig[bl.cfg.Name]
		if jaas == "" {
			jaas = n.cfg.PlainJAASConfig
		}
		for _, m := range jaasUser.FindAllStringSubmatch(jaas, -1) {
			if m[1] == user {
				return m[2], true
			}
		}
	}
	return "", false
}

// jaasUser matches the user_NAME="PASSWORD" entries of a PlainLoginModule configuration, as
// server/auth.ParseJAAS reads them.
var jaasUser = regexp.MustCompile(`user_([^\s=]+)\s*=\s*"([^"]*)"`)

// closeHTTPMounts runs the closers of HandleHTTP.
func (n *Node) closeHTTPMounts() {
	n.httpMu.Lock()
	closers := n.httpClosers
	n.httpClosers = nil
	n.httpMu.Unlock()
	for _, c := range closers {
		c()
	}
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
