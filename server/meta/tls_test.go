package meta

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
)

// writeCA creates a CA and one certificate it signs for 127.0.0.1 (usable as server and
// client), and returns their TLS files in etcd's form.
func writeCA(t *testing.T, name string) transport.TLSInfo {
	t.Helper()
	dir := t.TempDir()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name + " CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: name + " node"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	write := func(file, typ string, b []byte) string {
		p := filepath.Join(dir, file)
		if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: b}), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	return transport.TLSInfo{CertFile: write("node.pem", "CERTIFICATE", der), KeyFile: write("node-key.pem", "EC PRIVATE KEY", keyDER),
		TrustedCAFile: write("ca.pem", "CERTIFICATE", caDER), ClientCertAuth: true}
}

// Members with etcd.peer-* and etcd.client-* TLS replicate over mutually authenticated TLS;
// a process dialing their client URLs with a certificate of the cluster's CA gets in, one
// with a certificate of another CA does not.
func TestMembersOverMutualTLS(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	id := writeCA(t, "cluster")
	members := make([]Member, 3)
	var initial []string
	for i := range members {
		peer := url.URL{Scheme: "https", Host: fmt.Sprintf("127.0.0.1:%d", freePort(t))}
		client := url.URL{Scheme: "https", Host: fmt.Sprintf("127.0.0.1:%d", freePort(t))}
		members[i] = Member{Name: fmt.Sprintf("t%d", i), ListenPeerURLs: []url.URL{peer}, AdvertisePeerURLs: []url.URL{peer},
			ListenClientURLs: []url.URL{client}, AdvertiseClientURLs: []url.URL{client}, PeerTLS: id, ClientTLS: id}
		initial = append(initial, members[i].Name+"="+peer.String())
	}
	stores := make([]*EtcdStore, 3)
	errs := make([]error, 3)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	var wg sync.WaitGroup
	for i := range members {
		members[i].InitialCluster = strings.Join(initial, ",")
		wg.Add(1)
		go func() {
			defer wg.Done()
			stores[i], errs[i] = OpenMember(ctx, t.TempDir(), members[i], log)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("member %d: %v", i, err)
		}
		t.Cleanup(func() { stores[i].Close() })
	}
	if ok, err := stores[0].Txn(ctx, nil, []Op{Put("k", []byte("v"))}); err != nil || !ok {
		t.Fatalf("put: %v %v", ok, err)
	}
	if v, err := stores[2].Get(ctx, "k"); err != nil || string(v) != "v" {
		t.Fatalf("read on another member over peer TLS: %q %v", v, err)
	}
	endpoints := []string{members[1].AdvertiseClientURLs[0].String()}
	remote, err := OpenRemote(endpoints, id)
	if err != nil {
		t.Fatal(err)
	}
	defer remote.Close()
	if v, err := remote.Get(ctx, "k"); err != nil || string(v) != "v" {
		t.Fatalf("read through the client URL with the cluster's certificate: %q %v", v, err)
	}
	stranger, err := OpenRemote(endpoints, writeCA(t, "other"))
	if err != nil {
		t.Fatal(err)
	}
	defer stranger.Close()
	sctx, scancel := context.WithTimeout(ctx, 3*time.Second)
	defer scancel()
	if v, err := stranger.Get(sctx, "k"); err == nil {
		t.Fatalf("a client with another CA's certificate read %q", v)
	}
}
