package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestClusterSecretFileConfig(t *testing.T) {
	dir := t.TempDir()
	good, short := filepath.Join(dir, "secret"), filepath.Join(dir, "short")
	os.WriteFile(good, []byte("0123456789abcdef0123456789abcdef\n"), 0o600)
	os.WriteFile(short, []byte("tiny\n"), 0o600)
	https := []string{"tablet-server.id", "1", "etcd.name", "n1", "etcd.listen-peer-urls", "https://127.0.0.1:2380", "etcd.listen-client-urls", "https://127.0.0.1:2379"}
	if c, err := clusterConfig(t, append([]string{"cluster.secret-file", good}, https...)...); err != nil {
		t.Fatalf("https member with a secret: %v", err)
	} else if c.Cluster.SecretFile != good {
		t.Fatalf("SecretFile = %q", c.Cluster.SecretFile)
	}
	for _, tc := range []struct {
		name string
		kv   []string
		want string
	}{
		{"http URLs", []string{"cluster.secret-file", good, "tablet-server.id", "1", "etcd.name", "n1", "etcd.listen-peer-urls", "http://127.0.0.1:2380", "etcd.listen-client-urls", "http://127.0.0.1:2379"}, "must be https://"},
		{"short secret", append([]string{"cluster.secret-file", short}, https...), "at least 16"},
		{"missing secret", append([]string{"cluster.secret-file", filepath.Join(dir, "none")}, https...), "cluster.secret-file"},
		{"secret and allow-insecure", append([]string{"cluster.secret-file", good, "cluster.allow-insecure", "true"}, https...), "set one or the other"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := clusterConfig(t, tc.kv...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// A cluster is authenticated by default: a lone first member without a secret is given one
// to generate in its data directory; any other process without one is refused with a
// message naming cluster.secret-file and cluster.allow-insecure; the opt-out is explicit.
func TestClusterIsSecureByDefault(t *testing.T) {
	dataDir := t.TempDir()
	lone := []string{"data.dir", dataDir, "tablet-server.id", "1", "etcd.name", "n1",
		"etcd.listen-peer-urls", "https://127.0.0.1:2380", "etcd.listen-client-urls", "https://127.0.0.1:2379"}
	c, err := secureConfig(t, lone...)
	if err != nil {
		t.Fatalf("a lone first member: %v", err)
	}
	if !c.Cluster.GenerateSecret || c.Cluster.SecretFile != filepath.Join(dataDir, SecretFileName) {
		t.Fatalf("a lone first member generates no secret: %+v", c.Cluster)
	}
	if _, err := secureConfig(t, "data.dir", dataDir, "tablet-server.id", "1", "etcd.name", "n1",
		"etcd.listen-peer-urls", "http://127.0.0.1:2380", "etcd.listen-client-urls", "http://127.0.0.1:2379"); err == nil || !strings.Contains(err.Error(), "cluster.allow-insecure") {
		t.Fatalf("a lone first member on http:// URLs: err = %v, want the https:// requirement and the opt-out", err)
	}
	for name, kv := range map[string][]string{
		"a member of three": {"tablet-server.id", "1", "etcd.name", "n1", "etcd.initial-cluster", "n1=http://127.0.0.1:2380,n2=http://127.0.0.1:2382,n3=http://127.0.0.1:2384",
			"etcd.listen-peer-urls", "http://127.0.0.1:2380", "etcd.listen-client-urls", "http://127.0.0.1:2379"},
		"a joiner": {"tablet-server.id", "1", "etcd.name", "n1", "etcd.listen-peer-urls", "http://127.0.0.1:2380", "etcd.listen-client-urls", "http://127.0.0.1:2379",
			"etcd.join-endpoints", "http://127.0.0.1:2381", "etcd.initial-cluster-state", "existing"},
		"a tablet server of an existing cluster": {"server.roles", "tablet-server", "tablet-server.id", "4", "etcd.endpoints", "http://127.0.0.1:2379"},
	} {
		_, err := secureConfig(t, kv...)
		if err == nil || !strings.Contains(err.Error(), "cluster.secret-file is required") || !strings.Contains(err.Error(), "cluster.allow-insecure") {
			t.Errorf("%s without a secret: err = %v", name, err)
		}
		kv = append([]string{"cluster.allow-insecure", "true"}, kv...)
		if c, err := secureConfig(t, kv...); err != nil || !c.Cluster.Insecure {
			t.Errorf("%s with cluster.allow-insecure: err = %v", name, err)
		}
	}
}
