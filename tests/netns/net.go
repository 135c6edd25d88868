package netns

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
)

// Subnet is the private range every Net uses; each Net lives behind its own bridge, so two
// Nets (two tests at once) never see each other's addresses.
const Subnet = "10.231.0.0/24"

// Net is a bridge and the hosts attached to it.
type Net struct {
	t      testing.TB
	prefix string // of every namespace name of this Net
	bridge string // the bridge's namespace

	mu    sync.Mutex
	hosts []*Host
	drops map[*Host][]Drop // per sending host: the drop rules in force
}

// Host is a network namespace on the Net's bridge with one address.
type Host struct {
	Name string // short name given to AddHost
	NS   string // the namespace
	IP   string
	net  *Net
}

// Drop is one rule: packets From → To are dropped; with Ports, only TCP packets whose source
// or destination port is one of them (servers listen on fixed ports in each namespace, and
// clients' ports are ephemeral, so this selects one service's traffic in both directions of
// its connections from the sender's side).
type Drop struct {
	From, To *Host
	Ports    []int
}

// nsPrefix starts every namespace name: nsPrefix<pid>-<net>-<host>.
const nsPrefix = "stromnt"

var netCount atomic.Int64

// Available says why network namespaces cannot be used here, or nil.
func Available() error {
	if os.Geteuid() != 0 {
		return errors.New("network namespaces need root")
	}
	for _, tool := range []string{"ip", "nft"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("%s not found (apt-get install -y iproute2 nftables): %w", tool, err)
		}
	}
	return nil
}

// New creates a Net: a namespace holding a bridge. It skips the test when namespaces are not
// available (see Available) or cannot be created; everything is deleted when t ends.
func New(t testing.TB) *Net {
	t.Helper()
	if err := Available(); err != nil {
		t.Skipf("netns: %v", err)
	}
	removeStale()
	prefix := fmt.Sprintf("%s%d-%d-", nsPrefix, os.Getpid(), netCount.Add(1))
	n := &Net{t: t, prefix: prefix, bridge: prefix + "br", drops: map[*Host][]Drop{}}
	if err := run("ip", "netns", "add", n.bridge); err != nil {
		t.Skipf("netns: cannot create a network namespace here: %v", err)
	}
	t.Cleanup(n.Close)
	n.must("ip", "-n", n.bridge, "link", "set", "lo", "up")
	n.must("ip", "-n", n.bridge, "link", "add", "br0", "type", "bridge")
	n.must("ip", "-n", n.bridge, "link", "set", "br0", "up")
	return n
}

// AddHost creates a namespace attached to the bridge, with address 10.231.0.(10+i) for the
// i-th host, loopback up, and an empty nftables table that Cut fills.
func (n *Net) AddHost(name string) *Host {
	n.t.Helper()
	n.mu.Lock()
	i := len(n.hosts)
	h := &Host{Name: name, NS: n.prefix + name, IP: fmt.Sprintf("10.231.0.%d", 10+i), net: n}
	n.hosts = append(n.hosts, h)
	n.mu.Unlock()
	veth := fmt.Sprintf("v%d", i)
	n.must("ip", "netns", "add", h.NS)
	n.must("ip", "-n", h.NS, "link", "set", "lo", "up")
	n.must("ip", "-n", n.bridge, "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", h.NS)
	n.must("ip", "-n", n.bridge, "link", "set", veth, "master", "br0", "up")
	n.must("ip", "-n", h.NS, "addr", "add", h.IP+"/24", "dev", "eth0")
	n.must("ip", "-n", h.NS, "link", "set", "eth0", "up")
	if err := h.applyRules(nil); err != nil {
		n.t.Fatalf("netns: %v", err)
	}
	return h
}

// Hosts returns the hosts in the order they were added.
func (n *Net) Hosts() []*Host {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]*Host(nil), n.hosts...)
}

// Command returns the command line that runs bin with args inside h's namespace. `ip netns
// exec` execs bin in place, so the process id is bin's own and signals reach it directly.
func (h *Host) Command(bin string, args ...string) (string, []string) {
	return "ip", append([]string{"netns", "exec", h.NS, bin}, args...)
}

// Cut adds drop rules; each takes effect at once for packets already in flight too.
func (n *Net) Cut(drops ...Drop) {
	n.t.Helper()
	n.mu.Lock()
	defer n.mu.Unlock()
	changed := map[*Host]bool{}
	for _, d := range drops {
		n.drops[d.From] = append(n.drops[d.From], d)
		changed[d.From] = true
	}
	n.applyLocked(changed)
}

// CutBoth cuts every packet between a and b, both ways.
func (n *Net) CutBoth(a, b *Host) { n.Cut(Drop{From: a, To: b}, Drop{From: b, To: a}) }

// Split cuts every link between hosts of different groups, both ways.
func (n *Net) Split(groups ...[]*Host) {
	var drops []Drop
	for i, g := range groups {
		for j, o := range groups {
			if i == j {
				continue
			}
			for _, a := range g {
				for _, b := range o {
					drops = append(drops, Drop{From: a, To: b})
				}
			}
		}
	}
	n.Cut(drops...)
}

// Heal removes every drop rule from a to b (one way); HealAll every rule of the Net.
func (n *Net) Heal(a, b *Host) {
	n.mu.Lock()
	defer n.mu.Unlock()
	var kept []Drop
	for _, d := range n.drops[a] {
		if d.To != b {
			kept = append(kept, d)
		}
	}
	n.drops[a] = kept
	n.applyLocked(map[*Host]bool{a: true})
}

// HealAll removes every drop rule.
func (n *Net) HealAll() {
	n.mu.Lock()
	defer n.mu.Unlock()
	changed := map[*Host]bool{}
	for h := range n.drops {
		changed[h] = true
	}
	n.drops = map[*Host][]Drop{}
	n.applyLocked(changed)
}

// Rules describes the drops in force, for logs.
func (n *Net) Rules() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []string
	for _, ds := range n.drops {
		for _, d := range ds {
			s := d.From.Name + "->" + d.To.Name
			if len(d.Ports) > 0 {
				s += fmt.Sprint(d.Ports)
			}
			out = append(out, s)
		}
	}
	sort.Strings(out)
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, " ")
}

func (n *Net) applyLocked(changed map[*Host]bool) {
	n.t.Helper()
	for h := range changed {
		if err := h.applyRules(n.drops[h]); err != nil {
			n.t.Fatalf("netns: %v", err)
		}
	}
}

// applyRules replaces the host's output chain by drops, in one nft transaction.
func (h *Host) applyRules(drops []Drop) error {
	var b strings.Builder
	// Creating then deleting makes the script valid whether or not the table exists.
	b.WriteString("table inet strom_netns {}\ndelete table inet strom_netns\n")
	b.WriteString("table inet strom_netns {\n\tchain output {\n\t\ttype filter hook output priority 0; policy accept;\n")
	for _, d := range drops {
		if len(d.Ports) == 0 {
			fmt.Fprintf(&b, "\t\tip daddr %s drop\n", d.To.IP)
			continue
		}
		ports := make([]string, len(d.Ports))
		for i, p := range d.Ports {
			ports[i] = strconv.Itoa(p)
		}
		set := "{ " + strings.Join(ports, ", ") + " }"
		fmt.Fprintf(&b, "\t\tip daddr %s tcp dport %s drop\n", d.To.IP, set)
		fmt.Fprintf(&b, "\t\tip daddr %s tcp sport %s drop\n", d.To.IP, set)
	}
	b.WriteString("\t}\n}\n")
	cmd := exec.Command("ip", "netns", "exec", h.NS, "nft", "-f", "-")
	cmd.Stdin = strings.NewReader(b.String())
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("nft in %s: %v: %s\n%s", h.NS, err, out, b.String())
	}
	return nil
}

// Close deletes every namespace of the Net (their veths and nft tables go with them).
func (n *Net) Close() {
	n.mu.Lock()
	hosts := n.hosts
	n.hosts = nil
	n.mu.Unlock()
	for _, h := range hosts {
		if err := run("ip", "netns", "del", h.NS); err != nil {
			n.t.Logf("netns: delete %s: %v", h.NS, err)
		}
	}
	if n.bridge != "" {
		if err := run("ip", "netns", "del", n.bridge); err != nil {
			n.t.Logf("netns: delete %s: %v", n.bridge, err)
		}
		n.bridge = ""
	}
}

func (n *Net) must(name string, args ...string) {
	n.t.Helper()
	if err := run(name, args...); err != nil {
		n.t.Fatalf("netns: %v", err)
	}
}

func run(name string, args ...string) error {
	var out bytes.Buffer
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(out.String()))
	}
	return nil
}

// removeStale deletes the namespaces of this package whose creating process is gone (a test
// binary killed before its cleanup ran, e.g. by go test's timeout), with the processes left
// running inside them.
func removeStale() {
	entries, err := os.ReadDir("/var/run/netns")
	if err != nil {
		return
	}
	for _, e := range entries {
		name := e.Name()
		if !strings.HasPrefix(name, nsPrefix) {
			continue
		}
		rest := strings.TrimPrefix(name, nsPrefix)
		dash := strings.IndexByte(rest, '-')
		if dash <= 0 {
			continue
		}
		pid, err := strconv.Atoi(rest[:dash])
		if err != nil || pid == os.Getpid() {
			continue
		}
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err == nil {
			continue // its process still runs
		}
		// Servers and clients the dead test started in it outlive it: end them (by pid, only
		// the processes inside this namespace) before deleting it.
		if out, err := exec.Command("ip", "netns", "pids", name).Output(); err == nil {
			for _, f := range strings.Fields(string(out)) {
				if p, err := strconv.Atoi(f); err == nil {
					syscall.Kill(p, syscall.SIGKILL)
				}
			}
		}
		run("ip", "netns", "del", name)
	}
}
