// Package cluster_test runs fault scenarios against multi-process Strom clusters on loopback
// (docs/cluster.md, "Fault tests"): it builds the strom binary, starts three nodes, drives them
// with the Go client and kills, pauses and restarts processes while writes stream in. After
// each fault it checks that every acknowledged write is present exactly once and that the
// replicas agree. The partition scenarios run each node and each client in a network
// namespace of its own (tests/netns) and check the clients' histories (tests/history).
//
// The short scenarios run with `go test ./...`; CLUSTER_LONG=1 (`make test-cluster`) repeats
// them with more rows and more faults.
package cluster_test

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stromdb/strom/tests/clustertest"
	"github.com/stromdb/strom/tests/netns"
)

var stromBin string

func TestMain(m *testing.M) {
	// A partition test's clients run as this binary inside network namespaces.
	netns.RunWorkerIfAsked()
	dir, err := os.MkdirTemp("", "strom-cluster-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	_, file, _, _ := runtime.Caller(0)
	stromBin, err = clustertest.BuildStrom(filepath.Join(filepath.Dir(file), "..", ".."), dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// long reports whether the long versions of the scenarios were asked for.
func long() bool { return os.Getenv("CLUSTER_LONG") != "" }

// faultOptions are the server options every scenario runs with: replication factor 3, two
// in-sync replicas for an acknowledged write, and short leases so that a killed server is
// noticed quickly.
var faultOptions = map[string]string{
	"default.replication.factor":              "3",
	"default.bucket.number":                   "2",
	"log.replica.min-in-sync-replicas-number": "2",
	"log.replica.max-lag-time":                "3s",
	"tablet-server.lease-ttl":                 "2s",
	"coordinator.lease-ttl":                   "2s",
}

func startCluster(t *testing.T) *clustertest.Cluster {
	t.Helper()
	if testing.Short() {
		t.Skip("multi-process cluster test (-short)")
	}
	set := faultOptions
	if m := os.Getenv("CLUSTER_JOURNAL"); m != "" {
		// CLUSTER_JOURNAL=auto runs the scenarios with the server-wide journal
		// (docs/durability.md, "The journal"), taking every small append whatever the
		// concurrency, so that the scenarios exercise it.
		set = maps.Clone(faultOptions)
		set["log.journal.mode"] = m
		set["log.journal.min-in-flight"] = "1"
	}
	return clustertest.StartCluster(t, stromBin, clustertest.ClusterOptions{Set: set})
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	return ctx
}
