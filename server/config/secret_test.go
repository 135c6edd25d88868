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
		{"secret and TLS files", append([]string{"cluster.secret-file", good, "etcd.peer-cert-file", "/dev/null", "etcd.peer-key-file", "/dev/null", "etcd.peer-trusted-ca-file", "/dev/null"}, https...), "set one or the other"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := clusterConfig(t, tc.kv...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one containing %q", err, tc.want)
			}
		})
	}
}
