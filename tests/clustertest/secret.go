package clustertest

import (
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"os"
	"path/filepath"
	"testing"

	"github.com/stromdb/strom/internal/clustertls"
)

// WriteSecret writes a fresh cluster secret file, as an operator would with
// `head -c 32 /dev/urandom | base64`, and returns its path.
func WriteSecret(t testing.TB) string {
	t.Helper()
	raw := make([]byte, 32)
	rand.Read(raw)
	p := filepath.Join(t.TempDir(), "cluster-secret")
	if err := os.WriteFile(p, []byte(base64.StdEncoding.EncodeToString(raw)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// EtcdTLS is the TLS configuration a test's own etcd client presents to the cluster's etcd
// (a certificate issued from the cluster's secret); nil for an insecure cluster.
func (c *Cluster) EtcdTLS() *tls.Config {
	c.t.Helper()
	if c.SecretFile == "" {
		return nil
	}
	secret, err := clustertls.ReadSecret(c.SecretFile)
	if err != nil {
		c.t.Fatal(err)
	}
	f, err := clustertls.Issue(secret, c.t.TempDir(), "test-client", nil)
	if err != nil {
		c.t.Fatal(err)
	}
	cert, err := tls.LoadX509KeyPair(f.CertFile, f.KeyFile)
	if err != nil {
		c.t.Fatal(err)
	}
	ca, err := os.ReadFile(f.TrustedCAFile)
	if err != nil {
		c.t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca)
	return &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: roots, MinVersion: tls.VersionTLS12}
}
