package clustertls

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"net"
	"os"
	"testing"
	"time"
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

// Over a real TLS connection, members of one secret complete the mutual handshake; a client
// or a server of another secret fails it.
func TestPeerConfigsAuthenticateBothSides(t *testing.T) {
	load := func(secret string) *Peer {
		f, err := Issue([]byte(secret), t.TempDir(), "m", nil)
		if err != nil {
			t.Fatal(err)
		}
		p, err := LoadPeer(f)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	member, other := load("0123456789abcdef0123456789abcdef"), load("another secret, not the cluster's")
	member2 := load("0123456789abcdef0123456789abcdef")
	// handshake runs both sides over loopback TCP; in TLS 1.3 a client learns that the
	// server refused its certificate on its first read, so it reads the server's greeting.
	handshake := func(server, client *tls.Config) error {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		errc := make(chan error, 1)
		go func() {
			a, err := ln.Accept()
			if err != nil {
				errc <- err
				return
			}
			defer a.Close()
			a.SetDeadline(time.Now().Add(10 * time.Second))
			sc := tls.Server(a, server)
			if err := sc.Handshake(); err != nil {
				errc <- err
				return
			}
			_, err = sc.Write([]byte{1})
			errc <- err
		}()
		b, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		b.SetDeadline(time.Now().Add(10 * time.Second))
		cc := tls.Client(b, client)
		cerr := cc.Handshake()
		if cerr == nil {
			_, cerr = cc.Read(make([]byte, 1))
		}
		return errors.Join(cerr, <-errc)
	}
	if err := handshake(member.ServerConfig(), member2.ClientConfig()); err != nil {
		t.Fatalf("two members of one secret: %v", err)
	}
	if err := handshake(member.ServerConfig(), other.ClientConfig()); err == nil {
		t.Fatal("a client of another secret completed the handshake")
	}
	if err := handshake(other.ServerConfig(), member.ClientConfig()); err == nil {
		t.Fatal("a member accepted a server of another secret")
	}
	if err := handshake(member.ServerConfig(), &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS13}); err == nil {
		t.Fatal("a client without a certificate completed the handshake")
	}
}
