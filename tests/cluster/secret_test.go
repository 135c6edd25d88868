package cluster_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/clustertls"
	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
	"github.com/stromdb/strom/server/meta"
	"github.com/stromdb/strom/tests/clustertest"
	"go.etcd.io/etcd/client/pkg/v3/transport"
)

// writeSecret writes a cluster secret file, as an operator would with
// `head -c 32 /dev/urandom | base64`.
func writeSecret(t *testing.T, secret string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "cluster-secret")
	if err := os.WriteFile(p, []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestClusterSecretAuthenticatesEtcd starts three processes sharing cluster.secret-file: they
// form their etcd cluster over mutual TLS and serve clients. A process without the secret —
// no certificate, a certificate derived from another secret, or plain HTTP — can neither read
// nor write etcd keys, nor send server-to-server requests, and a member with another secret
// cannot join.
func TestClusterSecretAuthenticatesEtcd(t *testing.T) {
	secretFile := writeSecret(t, "the cluster's secret: 0123456789abcdef")
	c := clustertest.StartCluster(t, stromBin, clustertest.ClusterOptions{SecretFile: secretFile})

	cc, err := wire.Dial(context.Background(), c.Nodes[0].CoordinatorAddr, wire.ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// The first DDL right after start: a node is ready before the coordinator election
	// settles, and its coordinator waits for the election instead of failing the request.
	if err := cc.Call(ctx, wire.CreateDatabase, &flusspb.CreateDatabaseRequest{DatabaseName: proto.String("secure_db"), IgnoreIfExists: proto.Bool(false)}, &flusspb.CreateDatabaseResponse{}); err != nil {
		t.Fatalf("create a database on the secure cluster: %v", err)
	}

	// The default listeners: FLUSS is both the client and the internal listener. A plaintext
	// connection there is a client: server-to-server requests get AUTHORIZATION_EXCEPTION;
	// with the secret's certificate they are served.
	for _, sc := range serverOnlyCalls {
		name, call, addr := sc.name, sc.call, c.Nodes[0].TabletAddr
		if sc.coordinator {
			addr = c.Nodes[0].CoordinatorAddr
		}
		if dialErr, callErr := dialAndCall(addr, nil, call); dialErr != nil || ferr.CodeOf(callErr) != ferr.AuthorizationException {
			t.Errorf("%s in the clear on the shared internal listener: dial %v, call %v; want AUTHORIZATION_EXCEPTION", name, dialErr, callErr)
		}
		if dialErr, callErr := dialAndCall(addr, peerTLS(t, secretFile), call); dialErr != nil || ferr.CodeOf(callErr) == ferr.AuthorizationException {
			t.Errorf("%s with the secret on the shared internal listener: dial %v, call %v", name, dialErr, callErr)
		}
	}

	endpoints := []string{c.Nodes[1].ClientURL}
	// With the cluster's secret a process gets in: the probe below can succeed.
	insider, err := clustertls.Issue(mustSecret(t, secretFile), t.TempDir(), "insider", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := etcdProbe(endpoints, tlsInfo(insider)); err != nil {
		t.Fatalf("a process with the cluster's secret cannot use etcd: %v", err)
	}
	// Without it, nothing.
	stranger, err := clustertls.Issue([]byte("some other cluster's secret 0123"), t.TempDir(), "stranger", nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, try := range map[string]func() error{
		"a certificate of another secret": func() error { return etcdProbe(endpoints, tlsInfo(stranger)) },
		"TLS without a certificate": func() error {
			return etcdProbe(endpoints, transport.TLSInfo{TrustedCAFile: insider.TrustedCAFile})
		},
		"plain HTTP": func() error {
			return etcdProbe([]string{strings.Replace(endpoints[0], "https://", "http://", 1)}, transport.TLSInfo{})
		},
	} {
		if err := try(); err == nil {
			t.Errorf("%s: read and wrote etcd keys", name)
		}
	}
	if err := etcdProbePeer(c.Nodes[1].PeerURL, stranger); err == nil {
		t.Error("a certificate of another secret was accepted on the peer URL")
	}

	// A member with another secret cannot join through the running members.
	ports := clustertest.FreePorts(t, 4)
	peer, client := fmt.Sprintf("https://127.0.0.1:%d", ports[0]), fmt.Sprintf("https://127.0.0.1:%d", ports[1])
	var initial []string
	for _, n := range c.Nodes {
		initial = append(initial, fmt.Sprintf("node%d=%s", n.ID, n.PeerURL))
	}
	intruder := clustertest.NewProcess(t, "intruder", stromBin, "serve", "--data-dir", t.TempDir(),
		"--coordinator-listen", fmt.Sprintf("127.0.0.1:%d", ports[2]), "--tablet-listen", fmt.Sprintf("127.0.0.1:%d", ports[3]),
		"--set", "tablet-server.id=9", "--set", "etcd.name=node9",
		"--set", "etcd.initial-cluster="+strings.Join(append(initial, "node9="+peer), ","),
		"--set", "etcd.initial-cluster-state=existing",
		"--set", "etcd.listen-peer-urls="+peer, "--set", "etcd.listen-client-urls="+client,
		"--set", "etcd.join-endpoints="+strings.Join(endpoints, ","),
		"--set", "cluster.secret-file="+writeSecret(t, "not the cluster's secret at all!"))
	intruder.Start()
	for intruder.Running() { // the join is bounded (meta.joinTimeout): it fails and the process exits
		time.Sleep(100 * time.Millisecond)
	}
	probeStore, err := meta.OpenRemote(endpoints, tlsInfo(insider))
	if err != nil {
		t.Fatal(err)
	}
	defer probeStore.Close()
	members, err := probeStore.Client().MemberList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range members.Members {
		if m.Name == "node9" || strings.Contains(strings.Join(m.PeerURLs, ","), peer) {
			t.Fatalf("the intruder joined: member %v", m)
		}
	}
	if len(members.Members) != len(c.Nodes) {
		t.Fatalf("%d etcd members after the intruder's attempt, want %d", len(members.Members), len(c.Nodes))
	}
}

func mustSecret(t *testing.T, path string) []byte {
	t.Helper()
	s, err := clustertls.ReadSecret(path)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func tlsInfo(f clustertls.Files) transport.TLSInfo {
	return transport.TLSInfo{CertFile: f.CertFile, KeyFile: f.KeyFile, TrustedCAFile: f.TrustedCAFile}
}

// etcdProbe writes and reads a key through endpoints with the given identity.
func etcdProbe(endpoints []string, id transport.TLSInfo) error {
	s, err := meta.OpenRemote(endpoints, id)
	if err != nil {
		return err
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := s.Txn(ctx, nil, []meta.Op{meta.Put("probe", []byte("x"))}); err != nil {
		return err
	}
	_, err = s.Get(ctx, "probe")
	return err
}

// etcdProbePeer completes a TLS handshake with a member's peer URL presenting id.
func etcdProbePeer(peerURL string, id clustertls.Files) error {
	cert, err := tls.LoadX509KeyPair(id.CertFile, id.KeyFile)
	if err != nil {
		return err
	}
	conn, err := tls.Dial("tcp", strings.TrimPrefix(peerURL, "https://"), &tls.Config{Certificates: []tls.Certificate{cert}, InsecureSkipVerify: true})
	if err != nil {
		return err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	// TLS 1.3 reports a refused client certificate on the first read.
	if _, err := conn.Write([]byte("GET /version HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
		return err
	}
	buf := make([]byte, 1)
	_, err = conn.Read(buf)
	return err
}
