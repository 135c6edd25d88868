// Package clustertls derives a cluster's mutual-TLS identity from a shared secret
// (cluster.secret-file): every member computes the same certificate authority from the secret
// and issues its own certificate at start, so members authenticate each other without an
// operator running a CA. A process without the secret can present no certificate the members
// accept. docs/security.md, "Cluster authentication" states what it protects.
//
// Invariants: the CA (key and certificate) is a pure function of the secret — an Ed25519 key
// from an HKDF of it, a certificate with fixed fields, and Ed25519 signatures are
// deterministic — so every member trusts exactly the certificates the others issue; a node's
// own key is fresh at every start and never leaves its data directory.
package clustertls

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// MinSecretLen is the shortest secret accepted, in bytes (after trimming white space).
const MinSecretLen = 16

// caInfo labels the HKDF output the CA key is derived from; changing it changes every CA.
const caInfo = "strom cluster CA v1"

// Files are the PEM files of a member's identity, in the form etcd's TLS options take.
type Files struct {
	CertFile, KeyFile, TrustedCAFile string
}

// ReadSecret reads a secret file: its content less surrounding white space, at least
// MinSecretLen bytes.
func ReadSecret(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cluster.secret-file: %w", err)
	}
	b = bytes.TrimSpace(b)
	if len(b) < MinSecretLen {
		return nil, fmt.Errorf("cluster.secret-file %s: the secret has %d bytes, at least %d are needed (e.g. head -c 32 /dev/urandom | base64 > %s)", path, len(b), MinSecretLen, path)
	}
	return b, nil
}

// CA returns the certificate authority of secret: its certificate (DER) and key.
func CA(secret []byte) ([]byte, ed25519.PrivateKey, error) {
	seed, err := hkdf.Key(sha256.New, secret, nil, caInfo, ed25519.SeedSize)
	if err != nil {
		return nil, nil, fmt.Errorf("derive the cluster CA: %w", err)
	}
	key := ed25519.NewKeyFromSeed(seed)
	pub := key.Public().(ed25519.PublicKey)
	skid := sha256.Sum256(pub)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "strom cluster CA", Organization: []string{"strom"}},
		NotBefore:    time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC),
		NotAfter:     time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC),
		IsCA:         true, BasicConstraintsValid: true, MaxPathLenZero: true,
		KeyUsage:     x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		SubjectKeyId: skid[:20],
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, pub, key)
	if err != nil {
		return nil, nil, fmt.Errorf("derive the cluster CA: %w", err)
	}
	return der, key, nil
}

// Issue writes into dir (created 0700) the cluster's CA certificate and a fresh certificate
// and key for this member, named name, valid for hosts (IP addresses or DNS names) as both
// server and client. Files already there are replaced.
func Issue(secret []byte, dir, name string, hosts []string) (Files, error) {
	caDER, caKey, err := CA(secret)
	if err != nil {
		return Files{}, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return Files{}, fmt.Errorf("derive the cluster CA: %w", err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Files{}, fmt.Errorf("member key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return Files{}, fmt.Errorf("member certificate serial: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: name, Organization: []string{"strom"}},
		NotBefore:    time.Now().Add(-time.Hour), // clock skew between members
		NotAfter:     time.Now().AddDate(10, 0, 0),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	seen := map[string]bool{}
	for _, h := range append([]string{"127.0.0.1", "::1", "localhost"}, hosts...) {
		if h == "" || seen[h] {
			continue
		}
		seen[h] = true
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return Files{}, fmt.Errorf("member certificate: %w", err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return Files{}, fmt.Errorf("member key: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return Files{}, fmt.Errorf("cluster TLS directory: %w", err)
	}
	f := Files{CertFile: filepath.Join(dir, "member.pem"), KeyFile: filepath.Join(dir, "member-key.pem"), TrustedCAFile: filepath.Join(dir, "ca.pem")}
	for _, w := range []struct {
		path, typ string
		der       []byte
	}{{f.TrustedCAFile, "CERTIFICATE", caDER}, {f.CertFile, "CERTIFICATE", der}, {f.KeyFile, "EC PRIVATE KEY", keyDER}} {
		if err := writeFileAtomic(w.path, pem.EncodeToMemory(&pem.Block{Type: w.typ, Bytes: w.der})); err != nil {
			return Files{}, err
		}
	}
	return f, nil
}

// writeFileAtomic replaces path with data (0600) through a rename, so a reader sees the old
// file or the new one.
func writeFileAtomic(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return errors.Join(fmt.Errorf("write %s: %w", path, err), os.Remove(tmp))
	}
	return nil
}

// GenerateSecret creates path (0600) holding a fresh random secret (32 bytes, base64) unless
// it exists already; created says which. The file is written through a rename, so a crash
// leaves either no secret or a whole one.
func GenerateSecret(path string) (created bool, err error) {
	if _, err := os.Stat(path); err == nil {
		return false, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return false, fmt.Errorf("cluster secret: %w", err)
	}
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return false, fmt.Errorf("cluster secret: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return false, fmt.Errorf("cluster secret: %w", err)
	}
	if err := writeFileAtomic(path, []byte(base64.StdEncoding.EncodeToString(raw)+"\n")); err != nil {
		return false, fmt.Errorf("cluster secret: %w", err)
	}
	return true, nil
}
