package clustertest

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// Node is one `strom serve` process of a Cluster: a coordinator, a tablet server and an
// embedded etcd member, each on its own loopback port.
type Node struct {
	*Process
	ID              int32 // tablet-server.id
	DataDir         string
	CoordinatorAddr string
	TabletAddr      string
	PeerURL         string // the etcd member's peer URL
	ClientURL       string // the etcd member's client URL
	// ReplicationProxy, with ClusterOptions.ProxyReplication, stands in front of the node's
	// internal tablet listener, which the node advertises at the proxy's address: every
	// follower fetching from this node, and every notification to it, goes through it, while
	// clients use the node's CLIENT listeners directly.
	ReplicationProxy *Proxy
	// InternalCoordinatorAddr, with ClusterOptions.ProxyReplication, is the coordinator's
	// internal listener (clients use CoordinatorAddr, its CLIENT listener); "" otherwise.
	InternalCoordinatorAddr string
	// KafkaAddr is the node's Kafka listener (ClusterOptions.Kafka), "" without one.
	KafkaAddr string
	// HTTPAddr is the node's HTTP listener (ClusterOptions.HTTP: metrics, REST API,
	// console), "" without one.
	HTTPAddr string
}

// Cluster is a multi-node Strom cluster on loopback, as docs/cluster.md starts one.
type Cluster struct {
	t     testing.TB
	Nodes []*Node
	// SecretFile is the cluster.secret-file every node has ("" with ClusterOptions.Insecure).
	SecretFile string
}

// ClusterOptions configures StartCluster.
type ClusterOptions struct {
	// Nodes is the number of nodes (default 3).
	Nodes int
	// Set holds extra server options (KEY=VALUE as for `strom serve --set`), for every node.
	Set map[string]string
	// ReadyTimeout bounds each node's start (default 60 s).
	ReadyTimeout time.Duration
	// ProxyReplication puts a Proxy in front of each node's internal tablet listener (see
	// Node.ReplicationProxy); clients then connect to separate CLIENT listeners.
	ProxyReplication bool
	// Kafka gives each node's tablet server a Kafka listener (docs/kafka.md) at
	// Node.KafkaAddr. It cannot be combined with ProxyReplication.
	Kafka bool
	// HTTP gives each node an HTTP listener (http.listen) at Node.HTTPAddr.
	HTTP bool
	// SecretFile is every node's cluster.secret-file: the members' etcd peer and client URLs
	// are https:// with mutual TLS derived from it, and so is the internal listener
	// (docs/security.md, "Cluster authentication"). Empty: a secret generated for the
	// cluster, as a cluster needs one by default.
	SecretFile string
	// Insecure runs the cluster without a secret (cluster.allow-insecure): plain HTTP etcd
	// and a plaintext internal listener.
	Insecure bool
}

// StartCluster starts opts.Nodes nodes of bin (the strom binary), each running every role,
// whose embedded etcd members form one etcd cluster, and waits until every node is ready.
// The processes are killed when t ends.
func StartCluster(t testing.TB, bin string, opts ClusterOptions) *Cluster {
	t.Helper()
	if opts.Nodes == 0 {
		opts.Nodes = 3
	}
	if opts.ReadyTimeout == 0 {
		opts.ReadyTimeout = 60 * time.Second
	}
	if opts.Kafka && opts.ProxyReplication {
		t.Fatal("clustertest: Kafka and ProxyReplication cannot be combined")
	}
	const perNode = 8
	ports := FreePorts(t, perNode*opts.Nodes)
	c := &Cluster{t: t}
	// KV snapshots live under remote.data.dir, which the nodes of a cluster must share.
	remote := filepath.Join(t.TempDir(), "remote")
	var initial []string
	scheme := "https"
	switch {
	case opts.Insecure:
		scheme = "http"
	case opts.SecretFile == "":
		opts.SecretFile = WriteSecret(t)
	}
	c.SecretFile = opts.SecretFile
	for i := range opts.Nodes {
		p := ports[perNode*i:]
		n := &Node{
			ID:              int32(i + 1),
			DataDir:         filepath.Join(t.TempDir(), fmt.Sprintf("node%d", i+1)),
			CoordinatorAddr: fmt.Sprintf("127.0.0.1:%d", p[0]),
			TabletAddr:      fmt.Sprintf("127.0.0.1:%d", p[1]),
			PeerURL:         fmt.Sprintf("%s://127.0.0.1:%d", scheme, p[2]),
			ClientURL:       fmt.Sprintf("%s://127.0.0.1:%d", scheme, p[3]),
		}
		c.Nodes = append(c.Nodes, n)
		initial = append(initial, fmt.Sprintf("node%d=%s", n.ID, n.PeerURL))
	}
	for _, n := range c.Nodes {
		set := map[string]string{
			"tablet-server.id":           fmt.Sprint(n.ID),
			"etcd.name":                  fmt.Sprintf("node%d", n.ID),
			"etcd.initial-cluster":       strings.Join(initial, ","),
			"etcd.listen-peer-urls":      n.PeerURL,
			"etcd.advertise-peer-urls":   n.PeerURL,
			"etcd.listen-client-urls":    n.ClientURL,
			"etcd.advertise-client-urls": n.ClientURL,
			"remote.data.dir":            remote,
		}
		if opts.HTTP {
			n.HTTPAddr = fmt.Sprintf("127.0.0.1:%d", ports[perNode*(n.ID-1)+7])
			set["http.listen"] = n.HTTPAddr
		}
		if opts.Insecure {
			set["cluster.allow-insecure"] = "true"
		} else {
			set["cluster.secret-file"] = opts.SecretFile
		}
		for k, v := range opts.Set {
			set[k] = v
		}
		args := []string{"serve", "--data-dir", n.DataDir, "--coordinator-listen", n.CoordinatorAddr, "--tablet-listen", n.TabletAddr}
		if opts.ProxyReplication {
			// FLUSS (the internal listener) for the servers, CLIENT for the clients.
			p := ports[perNode*(n.ID-1):]
			internalCoord, internalTablet := n.CoordinatorAddr, n.TabletAddr
			n.CoordinatorAddr = fmt.Sprintf("127.0.0.1:%d", p[4])
			n.TabletAddr = fmt.Sprintf("127.0.0.1:%d", p[5])
			n.ReplicationProxy = NewProxy(t, internalTablet)
			n.InternalCoordinatorAddr = internalCoord
			set["bind.listeners"] = fmt.Sprintf("FLUSS://%s, CLIENT://%s", internalCoord, n.CoordinatorAddr)
			set["tablet-server.bind.listeners"] = fmt.Sprintf("FLUSS://%s, CLIENT://%s", internalTablet, n.TabletAddr)
			set["tablet-server.advertised.listeners"] = "FLUSS://" + n.ReplicationProxy.Addr()
			args = []string{"serve", "--data-dir", n.DataDir}
		}
		if opts.Kafka {
			// --tablet-listen would replace the listeners, so they are set as options.
			n.KafkaAddr = fmt.Sprintf("127.0.0.1:%d", ports[perNode*(n.ID-1)+6])
			set["tablet-server.bind.listeners"] = fmt.Sprintf("FLUSS://%s, KAFKA://%s", n.TabletAddr, n.KafkaAddr)
			set["kafka.enabled"] = "true"
			args = []string{"serve", "--data-dir", n.DataDir, "--coordinator-listen", n.CoordinatorAddr}
		}
		keys := make([]string, 0, len(set))
		for k := range set {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			args = append(args, "--set", k+"="+set[k])
		}
		n.Process = NewProcess(t, fmt.Sprintf("node%d", n.ID), bin, args...)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, n := range c.Nodes {
				t.Logf("clustertest: last lines of node %d's log (%s):\n%s", n.ID, n.LogPath(), n.tail(40))
			}
		}
	})
	// The members wait for each other's quorum, so they start together.
	for _, n := range c.Nodes {
		n.Start()
	}
	var wg sync.WaitGroup
	for _, n := range c.Nodes {
		wg.Add(1)
		go func() { defer wg.Done(); n.WaitReady(opts.ReadyTimeout) }()
	}
	wg.Wait()
	return c
}

// Bootstrap is the bootstrap.servers of every node's coordinator listener.
func (c *Cluster) Bootstrap() string {
	addrs := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		addrs[i] = n.CoordinatorAddr
	}
	return strings.Join(addrs, ",")
}

// Node returns the node with tablet-server.id id.
func (c *Cluster) Node(id int32) *Node {
	for _, n := range c.Nodes {
		if n.ID == id {
			return n
		}
	}
	c.t.Fatalf("clustertest: no node %d", id)
	return nil
}

// FreePorts returns n distinct loopback ports that were free a moment ago.
func FreePorts(t testing.TB, n int) []int {
	t.Helper()
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			ln.Close()
		}
	}()
	ports := make([]int, n)
	for i := range ports {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("clustertest: free port: %v", err)
		}
		lns = append(lns, ln)
		ports[i] = ln.Addr().(*net.TCPAddr).Port
	}
	return ports
}

// BuildStrom builds ./cmd/strom of the module at moduleDir into dir, with ./cmd/strom-lake next
// to it (where a lake-enabled server looks for its tiering process), and returns strom's path;
// STROM_BIN, when set, is used instead.
func BuildStrom(moduleDir, dir string) (string, error) {
	if bin := os.Getenv("STROM_BIN"); bin != "" {
		return bin, nil
	}
	bin := filepath.Join(dir, "strom")
	cmd := exec.Command("go", "build", "-o", dir+string(filepath.Separator), "./cmd/strom", "./cmd/strom-lake")
	cmd.Dir = moduleDir
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build strom: %v\n%s", err, out)
	}
	return bin, nil
}

// AddTabletServer starts a new node running only a tablet server with tablet-server.id id,
// a client of the cluster's embedded etcd (etcd.endpoints), as docs/cluster.md adds servers
// to a running cluster; set holds extra options. It waits until the node is ready.
func (c *Cluster) AddTabletServer(id int32, set map[string]string) *Node {
	c.t.Helper()
	ports := FreePorts(c.t, 2)
	n := &Node{
		ID:              id,
		DataDir:         filepath.Join(c.t.TempDir(), fmt.Sprintf("node%d", id)),
		CoordinatorAddr: fmt.Sprintf("127.0.0.1:%d", ports[0]),
		TabletAddr:      fmt.Sprintf("127.0.0.1:%d", ports[1]),
	}
	var endpoints []string
	for _, m := range c.Nodes {
		if m.ClientURL != "" {
			endpoints = append(endpoints, m.ClientURL)
		}
	}
	opts := map[string]string{
		"server.roles":     "tablet-server",
		"tablet-server.id": fmt.Sprint(id),
		"etcd.endpoints":   strings.Join(endpoints, ","),
	}
	if c.SecretFile != "" {
		opts["cluster.secret-file"] = c.SecretFile
	} else {
		opts["cluster.allow-insecure"] = "true"
	}
	for k, v := range set {
		opts[k] = v
	}
	keys := make([]string, 0, len(opts))
	for k := range opts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	args := []string{"serve", "--data-dir", n.DataDir, "--coordinator-listen", n.CoordinatorAddr, "--tablet-listen", n.TabletAddr}
	for _, k := range keys {
		args = append(args, "--set", k+"="+opts[k])
	}
	n.Process = NewProcess(c.t, fmt.Sprintf("node%d", id), c.Nodes[0].bin, args...)
	c.Nodes = append(c.Nodes, n)
	n.Start()
	n.WaitReady(60 * time.Second)
	return n
}
