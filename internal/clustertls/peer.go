package clustertls

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
)

// Peer is a member's TLS identity on the cluster's internal listener: the certificate Issue
// wrote and the CA every member derives from the secret.
//
// Invariant: both configurations verify the other side's certificate against the cluster CA
// alone and require TLS 1.3; neither checks host names. Every holder of the secret is a
// member, and the internal addresses a server dials are read from etcd (itself behind the same
// CA), so a host name would add no proof a chain to the CA does not already give.
type Peer struct {
	cert  tls.Certificate
	roots *x509.CertPool
}

// LoadPeer reads the identity Issue wrote.
func LoadPeer(f Files) (*Peer, error) {
	cert, err := tls.LoadX509KeyPair(f.CertFile, f.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("cluster TLS identity: %w", err)
	}
	ca, err := os.ReadFile(f.TrustedCAFile)
	if err != nil {
		return nil, fmt.Errorf("cluster TLS identity: %w", err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(ca) {
		return nil, fmt.Errorf("cluster TLS identity: no certificate in %s", f.TrustedCAFile)
	}
	return &Peer{cert: cert, roots: roots}, nil
}

// ServerConfig is the internal listener's side: a client must present a certificate of the
// cluster CA, or the handshake fails.
func (p *Peer) ServerConfig() *tls.Config {
	return &tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{p.cert},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    p.roots,
	}
}

// ClientConfig is a server dialing another's internal listener: it presents its certificate
// and accepts only a server certificate of the cluster CA.
func (p *Peer) ClientConfig() *tls.Config {
	return &tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{p.cert},
		// Host names are not checked (see Peer); VerifyConnection checks the chain instead.
		InsecureSkipVerify: true,
		VerifyConnection: func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("the server presented no certificate")
			}
			inter := x509.NewCertPool()
			for _, c := range cs.PeerCertificates[1:] {
				inter.AddCert(c)
			}
			_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{Roots: p.roots, Intermediates: inter,
				KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
			if err != nil {
				return fmt.Errorf("the server's certificate is not of this cluster: %w", err)
			}
			return nil
		},
	}
}
