package netns

import (
	"context"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestMain doubles as a tiny TCP echo server and client run inside namespaces.
func TestMain(m *testing.M) {
	switch os.Getenv("NETNS_TEST_CHILD") {
	case "serve":
		ln, err := net.Listen("tcp", os.Getenv("NETNS_TEST_ADDR"))
		if err != nil {
			os.Exit(2)
		}
		os.Stdout.WriteString("listening\n")
		for {
			c, err := ln.Accept()
			if err != nil {
				os.Exit(0)
			}
			go func() { defer c.Close(); b := make([]byte, 64); n, _ := c.Read(b); c.Write(b[:n]) }()
		}
	case "dial":
		d := net.Dialer{Timeout: time.Second}
		c, err := d.Dial("tcp", os.Getenv("NETNS_TEST_ADDR"))
		if err != nil {
			os.Stdout.WriteString("unreachable\n")
			os.Exit(0)
		}
		c.SetDeadline(time.Now().Add(time.Second))
		c.Write([]byte("ping"))
		b := make([]byte, 4)
		if n, _ := c.Read(b); string(b[:n]) == "ping" {
			os.Stdout.WriteString("reachable\n")
		} else {
			os.Stdout.WriteString("unreachable\n")
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// reach reports whether from can open a TCP connection to to's port and get an echo back.
func reach(t *testing.T, from, to *Host, port string) bool {
	t.Helper()
	self, _ := os.Executable()
	bin, args := from.Command(self, "-test.run=^$")
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "NETNS_TEST_CHILD=dial", "NETNS_TEST_ADDR="+to.IP+":"+port)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("dial child: %v %s", err, out)
	}
	return strings.TrimSpace(string(out)) == "reachable"
}

func serve(t *testing.T, h *Host, port string) {
	t.Helper()
	self, _ := os.Executable()
	bin, args := h.Command(self, "-test.run=^$")
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), "NETNS_TEST_CHILD=serve", "NETNS_TEST_ADDR="+h.IP+":"+port)
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); cmd.Wait() })
	b := make([]byte, 16)
	if n, _ := out.Read(b); !strings.Contains(string(b[:n]), "listening") {
		t.Fatalf("server in %s did not start: %q", h.NS, b[:n])
	}
}

func TestCutAndHeal(t *testing.T) {
	n := New(t)
	a, b, c := n.AddHost("a"), n.AddHost("b"), n.AddHost("c")
	serve(t, b, "7000")
	serve(t, b, "7001")
	serve(t, a, "7000")
	if !reach(t, a, b, "7000") || !reach(t, c, b, "7000") {
		t.Fatal("hosts on one bridge do not reach each other")
	}
	n.Cut(Drop{From: a, To: b})
	if reach(t, a, b, "7000") {
		t.Fatal("a reaches b through a cut")
	}
	if !reach(t, c, b, "7000") {
		t.Fatal("a cut a->b also cut c->b")
	}
	// One way: b's packets to a still go, but a's answers do not, so b cannot connect either.
	if reach(t, b, a, "7000") {
		t.Fatal("b connected to a although a's answers are dropped")
	}
	n.Heal(a, b)
	if !reach(t, a, b, "7000") {
		t.Fatal("a does not reach b after the heal")
	}
	// A port-selective cut: only 7000, in both directions of its connections.
	n.Cut(Drop{From: a, To: b, Ports: []int{7000}})
	if reach(t, a, b, "7000") || !reach(t, a, b, "7001") {
		t.Fatal("a port cut did not cut exactly that port")
	}
	n.HealAll()
	n.Split([]*Host{a}, []*Host{b, c})
	if reach(t, a, b, "7000") || reach(t, b, a, "7000") || !reach(t, c, b, "7000") {
		t.Fatalf("split a|bc: %s", n.Rules())
	}
	n.HealAll()
	if !reach(t, b, a, "7000") {
		t.Fatal("no reach after HealAll")
	}
}

// TestCloseRemovesNamespaces checks that nothing of a Net outlives it.
func TestCloseRemovesNamespaces(t *testing.T) {
	if err := Available(); err != nil {
		t.Skipf("netns: %v", err)
	}
	var names []string
	t.Run("net", func(t *testing.T) {
		n := New(t)
		h := n.AddHost("x")
		names = []string{h.NS, n.bridge}
	})
	for _, name := range names {
		if _, err := os.Stat("/var/run/netns/" + name); err == nil {
			t.Errorf("namespace %s still exists", name)
		}
	}
}
