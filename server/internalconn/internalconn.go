// Package internalconn dials another server's internal listener with this node's cluster
// credentials: the one place every server-to-server client (follower fetchers, the
// coordinator's notifications and probes, forwarded admin requests, controlled shutdown)
// gets its connection from, so none of them can forget to authenticate.
// docs/security.md, "The internal listener" says what the credentials prove.
//
// Invariant: with a cluster identity every connection a Dialer returns has completed mutual
// TLS against the cluster CA before its first request; a nil Dialer (a single node, or a
// cluster run insecure on purpose) dials in the clear.
package internalconn

import (
	"context"
	"crypto/tls"

	"github.com/stromdb/strom/internal/clustertls"
	"github.com/stromdb/strom/internal/wire"
)

// Dialer opens authenticated connections to internal listeners. The zero of *Dialer (nil)
// dials plaintext.
type Dialer struct {
	tls *tls.Config
}

// New returns the Dialer of peer's identity; a nil peer gives a nil Dialer (plaintext).
func New(peer *clustertls.Peer) *Dialer {
	if peer == nil {
		return nil
	}
	return &Dialer{tls: peer.ClientConfig()}
}

// Dial connects to the internal listener at addr, completes the cluster's mutual TLS (with an
// identity) and the Fluss handshake, all bounded by ctx. software names the caller in
// API_VERSIONS (e.g. "strom-follower").
func (d *Dialer) Dial(ctx context.Context, addr, software string) (*wire.ClientConn, error) {
	cfg := wire.ClientConfig{SoftwareName: software}
	if d != nil {
		cfg.TLS = d.tls
	}
	return wire.Dial(ctx, addr, cfg)
}

// Func is Dial as a function value, the form the tablet server, coordinator and control plane
// options take.
type Func func(ctx context.Context, addr, software string) (*wire.ClientConn, error)

// Func returns d.Dial (plaintext for a nil d).
func (d *Dialer) Func() Func { return d.Dial }
