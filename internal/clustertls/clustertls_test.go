package clustertls

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"os"
	"testing"
)

func loadCert(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	blk, _ := pem.Decode(b)
	c, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Two members with the same secret trust each other's certificates; a member with another
// secret is trusted by neither.
func TestMembersOfOneSecretTrustEachOther(t *testing.T) {
	secret := []byte("0123456789abcdef0123456789abcdef")
	a, err := Issue(secret, t.TempDir(), "a", []string{"10.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Issue(secret, t.TempDir(), "b", []string{"node-b.example"})
	if err != nil {
		t.Fatal(err)
	}
	other, err := Issue([]byte("another secret, not the cluster's"), t.TempDir(), "x", nil)
	if err != nil {
		t.Fatal(err)
	}
	caA, _ := os.ReadFile(a.TrustedCAFile)
	caB, _ := os.ReadFile(b.TrustedCAFile)
	if !bytes.Equal(caA, caB) {
		t.Fatal("one secret gave two CAs")
	}
	roots := x509.NewCertPool()
	roots.AddCert(loadCert(t, a.TrustedCAFile))
	opts := x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}
	for _, f := range []Files{a, b} {
		if _, err := loadCert(t, f.CertFile).Verify(opts); err != nil {
			t.Fatalf("%s not trusted by the cluster CA: %v", f.CertFile, err)
		}
	}
	if _, err := loadCert(t, other.CertFile).Verify(opts); err == nil {
		t.Fatal("a certificate of another secret is trusted")
	}
	if err := loadCert(t, b.CertFile).VerifyHostname("node-b.example"); err != nil {
		t.Fatal(err)
	}
}

func TestShortSecretIsRefused(t *testing.T) {
	p := t.TempDir() + "/secret"
	os.WriteFile(p, []byte("short\n"), 0o600)
	if _, err := ReadSecret(p); err == nil {
		t.Fatal("a 5-byte secret was accepted")
	}
}
