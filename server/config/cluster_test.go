package config

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// clusterConfig applies kv and finishes the configuration. The tests of other cluster
// options run it insecure (cluster.allow-insecure) unless kv has a secret; secureConfig
// does not.
func clusterConfig(t *testing.T, kv ...string) (Config, error) {
	t.Helper()
	if !slices.Contains(kv, "cluster.secret-file") {
		kv = append([]string{"cluster.allow-insecure", "true"}, kv...)
	}
	return secureConfig(t, kv...)
}

func secureConfig(t *testing.T, kv ...string) (Config, error) {
	t.Helper()
	c := Default()
	for i := 0; i < len(kv); i += 2 {
		if err := c.Set(kv[i], kv[i+1]); err != nil {
			return c, err
		}
	}
	return c, c.Finish()
}

func TestSingleNodeIsNotClustered(t *testing.T) {
	c, err := clusterConfig(t)
	if err != nil {
		t.Fatal(err)
	}
	if c.Clustered() || !c.HasRole(RoleCoordinator) || !c.HasRole(RoleTabletServer) {
		t.Fatalf("default config: clustered %v, roles %v", c.Clustered(), c.Cluster.Roles)
	}
	if c.Cluster.TabletServerLeaseTTL != DefaultTabletServerLeaseTTL || c.Cluster.MinInSyncReplicas != 1 || c.Cluster.ReplicaMaxLagTime != 30*time.Second {
		t.Fatalf("defaults: %+v", c.Cluster)
	}
}

func TestEmbeddedMemberConfig(t *testing.T) {
	c, err := clusterConfig(t,
		"tablet-server.id", "2",
		"etcd.name", "n2",
		"etcd.initial-cluster", "n1=http://127.0.0.1:2380,n2=http://127.0.0.1:2382,n3=http://127.0.0.1:2384",
		"etcd.listen-peer-urls", "http://127.0.0.1:2382",
		"etcd.listen-client-urls", "http://127.0.0.1:2381",
		"tablet-server.lease-ttl", "3s",
		"log.replica.min-in-sync-replicas-number", "2")
	if err != nil {
		t.Fatal(err)
	}
	if !c.Clustered() || !c.EmbeddedEtcd() || c.Cluster.AdvertisePeerURLs[0].Host != "127.0.0.1:2382" || c.Cluster.TabletServerLeaseTTL != 3*time.Second || c.Cluster.MinInSyncReplicas != 2 {
		t.Fatalf("cluster: %+v", c.Cluster)
	}
}

func TestClusterConfigErrors(t *testing.T) {
	member := []string{"etcd.name", "n1", "etcd.listen-peer-urls", "http://127.0.0.1:2380", "etcd.listen-client-urls", "http://127.0.0.1:2379"}
	for _, tc := range []struct {
		name string
		kv   []string
		want string
	}{
		{"bad role", []string{"server.roles", "coordinator,broker"}, "unknown role"},
		{"role without etcd", []string{"server.roles", "tablet-server"}, "shared metadata store"},
		{"no server id", member, "tablet-server.id is required"},
		{"unknown etcd key", []string{"etcd.peer", "x"}, "unknown etcd option"},
		{"bad endpoint", []string{"etcd.endpoints", "127.0.0.1:2379"}, "want http://HOST:PORT"},
		{"endpoints and member", append([]string{"tablet-server.id", "1", "etcd.endpoints", "http://127.0.0.1:2379"}, member...), "embedded etcd member, but etcd.endpoints"},
		{"bad join endpoint", append([]string{"tablet-server.id", "1", "etcd.join-endpoints", "10.0.0.1:2379"}, member...), "want http://HOST:PORT"},
		{"join endpoints with an external etcd", []string{"tablet-server.id", "1", "etcd.endpoints", "http://127.0.0.1:2379", "etcd.join-endpoints", "http://127.0.0.1:2380"}, "etcd.join-endpoints is for an embedded etcd member"},
		{"no name", []string{"tablet-server.id", "1", "etcd.listen-peer-urls", "http://127.0.0.1:2380"}, "etcd.name is required"},
		{"https without TLS files", []string{"tablet-server.id", "1", "etcd.name", "n1", "etcd.listen-peer-urls", "https://127.0.0.1:2380", "etcd.listen-client-urls", "http://127.0.0.1:2379"}, "is https:// but no etcd.peer-cert-file"},
		{"incomplete TLS", append([]string{"tablet-server.id", "1", "etcd.peer-cert-file", "/dev/null"}, member...), "etcd.peer-key-file is required"},
		{"missing TLS file", append([]string{"tablet-server.id", "1", "etcd.client-cert-file", "/nonexistent/c.pem", "etcd.client-key-file", "/dev/null", "etcd.client-trusted-ca-file", "/dev/null"}, member...), "etcd.client-cert-file"},
		{"http with TLS files", append([]string{"tablet-server.id", "1", "etcd.peer-cert-file", "/dev/null", "etcd.peer-key-file", "/dev/null", "etcd.peer-trusted-ca-file", "/dev/null"}, member...), "must be https://"},
		{"not in initial cluster", append([]string{"tablet-server.id", "1", "etcd.initial-cluster", "n2=http://127.0.0.1:2380"}, member...), "does not list"},
		{"bad initial cluster", []string{"etcd.initial-cluster", "n1"}, "NAME=http"},
		{"wildcard advertise", append([]string{"tablet-server.id", "1", "etcd.advertise-client-urls", "http://0.0.0.0:2379"}, member...), "wildcard"},
		{"fractional lease", []string{"tablet-server.lease-ttl", "1500ms"}, "whole number of seconds"},
		{"min isr zero", []string{"log.replica.min-in-sync-replicas-number", "0"}, "at least 1"},
		{"state", []string{"etcd.initial-cluster-state", "old"}, "new or existing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := clusterConfig(t, tc.kv...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestExternalEtcdTabletOnly(t *testing.T) {
	c, err := clusterConfig(t, "server.roles", "tablet-server", "tablet-server.id", "4", "etcd.endpoints", "http://10.0.0.1:2379, http://10.0.0.2:2379")
	if err != nil {
		t.Fatal(err)
	}
	if c.EmbeddedEtcd() || c.HasRole(RoleCoordinator) || len(c.Cluster.Endpoints) != 2 {
		t.Fatalf("cluster: %+v", c.Cluster)
	}
}
