package clustertest

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMain doubles as the child process of the Process tests: with CLUSTERTEST_CHILD set it
// acts as a server that logs the ready line and exits cleanly on SIGTERM.
func TestMain(m *testing.M) {
	if os.Getenv("CLUSTERTEST_CHILD") != "" {
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, syscall.SIGTERM)
		fmt.Println("level=INFO msg=\"" + ReadyLine + "\"")
		<-sig
		fmt.Println("stopped cleanly")
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// echoServer answers every line with itself.
func echoServer(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); io.Copy(c, c) }()
		}
	}()
	return ln.Addr().String()
}

func TestProxyBlackholeAndHeal(t *testing.T) {
	p := NewProxy(t, echoServer(t))
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	roundTrip := func(msg string) (string, error) {
		if _, err := c.Write([]byte(msg + "\n")); err != nil {
			return "", err
		}
		c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
		return r.ReadString('\n')
	}
	if got, err := roundTrip("a"); err != nil || got != "a\n" {
		t.Fatalf("through the proxy: %q %v", got, err)
	}
	p.Blackhole()
	if got, err := roundTrip("b"); err == nil {
		t.Fatalf("a black-holed link delivered %q", got)
	}
	// A new connection is accepted but gets nothing through either.
	c2, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	c2.Write([]byte("x\n"))
	c2.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	if n, _ := c2.Read(make([]byte, 4)); n > 0 {
		t.Fatal("a new connection got through a black-holed proxy")
	}
	p.Heal()
	// What was held is delivered in order once healed, then traffic flows again.
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if got, err := r.ReadString('\n'); err != nil || got != "b\n" {
		t.Fatalf("held bytes after heal: %q %v", got, err)
	}
	if got, err := roundTrip("c"); err != nil || got != "c\n" {
		t.Fatalf("after heal: %q %v", got, err)
	}
}

func TestProcessLifecycle(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p := NewProcess(t, "child", self, "-test.run=^$")
	p.SetEnv("CLUSTERTEST_CHILD=1")
	p.Start()
	p.WaitReady(10 * time.Second)

	p.Pause()
	if !p.Running() {
		t.Fatal("a paused process is not running")
	}
	p.Resume()

	p.Kill() // SIGKILL: no clean stop line
	if p.Running() {
		t.Fatal("still running after Kill")
	}
	p.Restart()
	p.WaitReady(10 * time.Second) // waits for the second ready line, not the first
	if !p.Terminate(10 * time.Second) {
		t.Fatal("SIGTERM did not stop the child")
	}
	log, _ := os.ReadFile(p.LogPath())
	if got := countLines(string(log), "stopped cleanly"); got != 1 {
		t.Fatalf("clean stops in the log: %d, want 1 (the kill must not stop cleanly)\n%s", got, log)
	}
	if got := countLines(string(log), ReadyLine); got != 2 {
		t.Fatalf("ready lines: %d, want 2", got)
	}
}

func countLines(s, sub string) int {
	n := 0
	for line := range strings.Lines(s) {
		if strings.Contains(line, sub) {
			n++
		}
	}
	return n
}

// countReady reads only what was appended since its last call, and counts a ready line
// once, whether it arrived whole, in two writes, or inside a line longer than its buffer.
func TestCountReadyReadsTheLogIncrementally(t *testing.T) {
	log := filepath.Join(t.TempDir(), "node.log")
	p := &Process{t: t, log: log}
	appendLog := func(s string) {
		f, err := os.OpenFile(log, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteString(s); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	steps := []struct {
		write string
		want  int
	}{
		{"level=INFO msg=starting\n", 0},
		{"level=INFO msg=\"" + ReadyLine, 0}, // not yet a whole line
		{"\"\n", 1},
		{"level=INFO msg=other\n", 1},
		{strings.Repeat("x", 100<<10) + ReadyLine + "\n", 2}, // past the 64 KiB buffer
		{"level=INFO msg=\"" + ReadyLine + "\"\nlevel=INFO msg=\"" + ReadyLine + "\"\n", 4},
	}
	for i, s := range steps {
		appendLog(s.write)
		if got := p.countReady(); got != s.want {
			t.Fatalf("step %d: %d ready lines, want %d", i, got, s.want)
		}
		if got := p.countReady(); got != s.want {
			t.Fatalf("step %d, polled again: %d ready lines, want %d", i, got, s.want)
		}
	}
}
