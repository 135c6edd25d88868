package netns

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stromdb/strom/tests/clustertest"
)

// The ports every node listens on inside its own namespace (each namespace has its own port
// space, so they are fixed).
const (
	CoordinatorPort = 9123
	TabletPort      = 9124
	EtcdClientPort  = 2379
	EtcdPeerPort    = 2380
)

// Node is one `strom serve` process running in its own namespace: coordinator, tablet server
// and embedded etcd member, on the host's address.
type Node struct {
	*clustertest.Process
	Host    *Host
	ID      int32 // tablet-server.id
	DataDir string
}

// Cluster is a Strom cluster whose nodes each run in a namespace of a Net.
type Cluster struct {
	Net   *Net
	Nodes []*Node
}

// StartCluster starts nodes `strom serve` processes of bin, node i (from 1) on a new host
// "n<i>" of net, forming one embedded etcd cluster; set holds extra options for every node.
// It waits until every node is ready; the processes are killed when t ends.
func StartCluster(t testing.TB, net *Net, bin string, nodes int, set map[string]string) *Cluster {
	t.Helper()
	c := &Cluster{Net: net}
	remote := filepath.Join(t.TempDir(), "remote") // KV snapshots: shared by every node
	var initial []string
	for i := 1; i <= nodes; i++ {
		h := net.AddHost(fmt.Sprintf("n%d", i))
		c.Nodes = append(c.Nodes, &Node{Host: h, ID: int32(i), DataDir: filepath.Join(t.TempDir(), fmt.Sprintf("node%d", i))})
		initial = append(initial, fmt.Sprintf("node%d=http://%s:%d", i, h.IP, EtcdPeerPort))
	}
	for _, n := range c.Nodes {
		opts := map[string]string{
			"tablet-server.id":        fmt.Sprint(n.ID),
			"etcd.name":               fmt.Sprintf("node%d", n.ID),
			"etcd.initial-cluster":    strings.Join(initial, ","),
			"etcd.listen-peer-urls":   fmt.Sprintf("http://%s:%d", n.Host.IP, EtcdPeerPort),
			"etcd.listen-client-urls": fmt.Sprintf("http://%s:%d", n.Host.IP, EtcdClientPort),
			"remote.data.dir":         remote,
			// The partition suite's workers read etcd in the clear from their own
			// namespaces; authentication is tested in tests/cluster (secret_test.go).
			"cluster.allow-insecure": "true",
		}
		for k, v := range set {
			opts[k] = v
		}
		args := []string{"serve", "--data-dir", n.DataDir,
			"--coordinator-listen", fmt.Sprintf("%s:%d", n.Host.IP, CoordinatorPort),
			"--tablet-listen", fmt.Sprintf("%s:%d", n.Host.IP, TabletPort)}
		keys := make([]string, 0, len(opts))
		for k := range opts {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			args = append(args, "--set", k+"="+opts[k])
		}
		ip, ipArgs := n.Host.Command(bin, args...)
		n.Process = clustertest.NewProcess(t, fmt.Sprintf("node%d", n.ID), ip, ipArgs...)
	}
	for _, n := range c.Nodes {
		n.Start()
	}
	var wg sync.WaitGroup
	for _, n := range c.Nodes {
		wg.Add(1)
		go func() { defer wg.Done(); n.WaitReady(90 * time.Second) }()
	}
	wg.Wait()
	return c
}

// Bootstrap is the bootstrap.servers of every node's coordinator listener.
func (c *Cluster) Bootstrap() string {
	addrs := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		addrs[i] = fmt.Sprintf("%s:%d", n.Host.IP, CoordinatorPort)
	}
	return strings.Join(addrs, ",")
}

// EtcdEndpoints are the client URLs of every node's etcd member.
func (c *Cluster) EtcdEndpoints() []string {
	out := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		out[i] = fmt.Sprintf("http://%s:%d", n.Host.IP, EtcdClientPort)
	}
	return out
}

// Node returns the node with tablet-server.id id, nil if none.
func (c *Cluster) Node(id int32) *Node {
	for _, n := range c.Nodes {
		if n.ID == id {
			return n
		}
	}
	return nil
}

// NodeByIP returns the node on address ip, nil if none.
func (c *Cluster) NodeByIP(ip string) *Node {
	for _, n := range c.Nodes {
		if n.Host.IP == ip {
			return n
		}
	}
	return nil
}

// Hosts are the nodes' hosts.
func (c *Cluster) Hosts() []*Host {
	out := make([]*Host, len(c.Nodes))
	for i, n := range c.Nodes {
		out[i] = n.Host
	}
	return out
}

// AsClustertest returns the nodes as a clustertest.Cluster, for helpers that read data
// directories (replica comparisons).
func (c *Cluster) AsClustertest() *clustertest.Cluster {
	cc := &clustertest.Cluster{}
	for _, n := range c.Nodes {
		cc.Nodes = append(cc.Nodes, &clustertest.Node{Process: n.Process, ID: n.ID, DataDir: n.DataDir})
	}
	return cc
}
